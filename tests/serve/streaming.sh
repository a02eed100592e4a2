#!/bin/bash
# ward serve streaming (SPEC §12): POST /exec, /test and session execs with
# Accept: application/x-ndjson (or text/event-stream) answer events as the
# program writes, then the result; the caps hold; a slow client neither
# blocks the program nor holds a worker; a client that goes away cancels
# its run; `ward run --remote` and the Python client stream too.
. "$(dirname "$0")/lib.bash"
PYDIR=$ROOT/clients/python

# (the slow client below takes its whole answer within the run's timeout plus
# --request-timeout)
start_server stream --max-concurrent 2 --request-timeout 60 || exit 0
ND=(-H 'Accept: application/x-ndjson' -H 'Content-Type: application/json')

# ---- shapes, with curl -N
out=$(curl -sN --max-time 30 "${ND[@]}" -D "$SERVE_TMP/h1" \
	--data-binary '{"command":"echo one; echo two >&2; printf three"}' "$URL/exec")
expect_contains "ndjson: content type" "$(cat "$SERVE_TMP/h1")" "application/x-ndjson"
expect_contains "ndjson: chunked" "$(tr 'A-Z' 'a-z' <"$SERVE_TMP/h1")" "transfer-encoding: chunked"
verdict=$(printf '%s\n' "$out" | python3 -c '
import json, sys
ev = [json.loads(l) for l in sys.stdin if l.strip()]
last = ev[-1]
body = ev[:-1]
ok = "result" in last and all(set(e) == {"stream", "data"} and e["stream"] in ("stdout", "stderr") for e in body)
out = "".join(e["data"] for e in body if e["stream"] == "stdout")
err = "".join(e["data"] for e in body if e["stream"] == "stderr")
r = last.get("result", {})
print("ok" if ok and out == r.get("stdout") == "one\nthree" and err == r.get("stderr") == "two\n"
      and r.get("status") == "ok" else "bad: %r" % ev)')
expect_eq "ndjson: stdout/stderr events, then the whole result" ok "$verdict"

curl -sN --max-time 30 -H 'Accept: text/event-stream' --data-binary '{"command":"echo one"}' "$URL/exec" >"$SERVE_TMP/sse"
verdict=$(python3 -c '
import json, sys
t = sys.stdin.read()
blocks = [b for b in t.split("\n\n") if b]
ev = []
for b in blocks:
    name, data = b.split("\n")
    assert name.startswith("event: ") and data.startswith("data: "), b
    ev.append((name[7:], json.loads(data[6:])))
ok = ev[0] == ("stdout", {"stream": "stdout", "data": "one\n"}) and ev[-1][0] == "result" \
     and ev[-1][1]["result"]["stdout"] == "one\n" and t.endswith("\n\n")
print("ok" if ok else "bad: %r" % t[:300])' <"$SERVE_TMP/sse")
expect_eq "sse: event/data blocks, result last" ok "$verdict"

# without the Accept value: the answer is as before, whole
r=$(post_exec '{"command":"echo one"}' -D "$SERVE_TMP/h2")
expect_eq "no Accept: plain result" "200 one|" "$(code_of "$r") $(jg "$(body_of "$r")" 'd["stdout"].strip()+"|"+str(d.get("result",""))')"
expect_contains "no Accept: application/json" "$(cat "$SERVE_TMP/h2")" "application/json"

# errors before the run stay ordinary answers
r=$(http POST /exec "${ND[@]}" --data-binary '{"command":"true","limits":{"timeout_s":-1}}')
expect_eq "a 400 before the run is plain JSON" "400 yes" "$(code_of "$r") $(jg "$(body_of "$r")" '"yes" if d["error"] else "no"')"

# ---- live: the first line comes while the program still runs; the Python client
# (the program waits on a marker that only this client ends, once the line is
# there: a first line held back until the end fails, however fast the machine)
cd "$PYDIR" || exit 1
verdict=$(python3 - "$URL" <<'PY'
import os, signal, sys, time, ward_client as w

def markers(m):
    pids = []
    for p in os.listdir("/proc"):
        try:
            with open("/proc/%s/cmdline" % p, "rb") as f:
                a = f.read().split(b"\0")
        except (OSError, ValueError):
            continue
        if len(a) > 1 and os.path.basename(a[0]) == b"sleep" and a[1] == m:
            pids.append(int(p))
    return pids

r = w.Runner(sys.argv[1])
events, live = [], None
for e in r.exec_stream("echo first; sleep 41.3; echo done", limits={"timeout_s": 25}):
    events.append(e)
    if live is None and e.get("data") == "first\n":
        end = time.monotonic() + 20
        while not markers(b"41.3") and time.monotonic() < end:
            time.sleep(0.05)
        pids = markers(b"41.3")
        live = bool(pids)  # the program still ran when its first line came
        for p in pids:
            os.kill(p, signal.SIGKILL)
res = events[-1].get("result", {}) if events else {}
ok = live and res.get("stdout") == "first\ndone\n" and res.get("status") == "ok"
print("ok" if ok else "bad: live=%r events=%r" % (live, events))
PY
)
cd "$ROOT" || exit 1
expect_eq "python exec_stream: the first line arrives while the program still runs" ok "$verdict"

# ---- caps: the head streams, the tail comes in the result
verdict=$(curl -sN --max-time 30 "${ND[@]}" \
	--data-binary '{"command":"i=0; while [ $i -lt 2000 ]; do echo line$i; i=$((i+1)); done","limits":{"max_output_chars":1000}}' \
	"$URL/exec" | python3 -c '
import json, sys
ev = [json.loads(l) for l in sys.stdin if l.strip()]
r = ev[-1]["result"]
head = "".join(e["data"] for e in ev[:-1] if e["stream"] == "stdout")
ok = len(head) == 500 and r["stdout_truncated"] and r["stdout"].startswith(head) and r["stdout"].endswith("line1999\n") \
     and "line1999" not in head
print("ok" if ok else "bad: head %d bytes, result %r" % (len(head), r["stdout"][:80]))')
expect_eq "caps: 500-byte head streamed (limit 1000), the tail only in the result" ok "$verdict"

# ---- coalescing: 1000 tiny writes are not 1000 events
verdict=$(curl -sN --max-time 30 "${ND[@]}" \
	--data-binary '{"command":"i=0; while [ $i -lt 1000 ]; do printf x; i=$((i+1)); done"}' "$URL/exec" | python3 -c '
import json, sys
ev = [json.loads(l) for l in sys.stdin if l.strip()]
data = [e for e in ev if "stream" in e]
ok = "".join(e["data"] for e in data) == "x" * 1000 and len(data) < 200
print("ok" if ok else "bad: %d events" % len(data))')
expect_eq "coalescing: 1000 one-byte writes, far fewer events" ok "$verdict"

# ---- UTF-8: a character cut between two writes is not two U+FFFD
verdict=$(curl -sN --max-time 30 "${ND[@]}" \
	--data-binary '{"command":"printf \"\\342\\202\"; sleep 0.3; printf \"\\254 \\377\""}' "$URL/exec" | python3 -c '
import json, sys
ev = [json.loads(l) for l in sys.stdin if l.strip()]
s = "".join(e["data"] for e in ev if "stream" in e)
print("ok" if s == "\u20ac \ufffd" and ev[-1]["result"]["stdout"] == s else "bad: %r" % ev)')
expect_eq "utf-8: split euro sign arrives whole, a bad byte is U+FFFD" ok "$verdict"

# ---- a slow client: dropped with a marker, the timeout lands, no worker held
# It reads nothing (a 4 KiB receive buffer, never drained) while `yes` floods
# far more than the socket pair and the TCP buffers hold, until its 2 s
# timeout.  Meanwhile two more streamed runs must be running at once: with
# --max-concurrent 2 that is only possible once the flood's run is over and
# its stream holds no slot, so a held worker fails here however fast the
# machine is (the slow stream, unread, could not free it).  Then the slow
# client takes its whole answer, which must end with the timeout's result.
rss0=$(awk '/VmRSS/{print $2}' /proc/"$SRV_PID"/status)
verdict=$(python3 - "$PORT" <<'PY'
import json, socket, sys
port = int(sys.argv[1])

def post(command, limits=None, rcvbuf=None):
    body = json.dumps({"command": command, "limits": limits or {}}).encode()
    s = socket.socket()
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(60)
    s.connect(("127.0.0.1", port))
    s.sendall(b"POST /exec HTTP/1.1\r\nHost: x\r\nAccept: application/x-ndjson\r\n"
              b"Content-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
              % len(body) + body)
    return s

def verdict():
    slow = post("yes " + "x" * 63, {"timeout_s": 2, "max_output_chars": 16 << 20}, rcvbuf=4096)
    try:
        slow.recv(1, socket.MSG_PEEK)  # its run has begun (peeked: nothing taken)
    except socket.timeout:
        return "bad: the slow client's run never began"
    # (each outlasts the 60 s this waits for the two: a slot they would wait
    # for is not freed by one of them ending)
    live = [post("echo up; exec sleep 137.1", {"timeout_s": 120}) for _ in range(2)]
    for i, c in enumerate(live):
        got = b""
        try:
            while b'"data":"up\\n"' not in got:
                b = c.recv(4096)
                if not b:
                    break
                got += b
        except socket.timeout:
            pass
        if b'"data":"up\\n"' not in got:
            return "bad: run %d of 2 did not start while the slow client read nothing (slot held?)" % (i + 1)
    for c in live:
        c.close()  # (cancels them)
    parts = []
    try:
        while True:
            b = slow.recv(65536)
            if not b:
                break
            parts.append(b)
    except socket.timeout:
        return "bad: the slow client's answer stalled"
    data = b"".join(parts)
    # the chunked encoding undone, in one pass
    pos = data.find(b"\r\n\r\n")
    if pos < 0:
        return "bad: no response head in %d bytes" % len(data)
    pos += 4
    chunks, complete = [], False
    while pos < len(data):
        eol = data.find(b"\r\n", pos)
        if eol < 0:
            break
        try:
            n = int(data[pos:eol].split(b";")[0], 16)
        except ValueError:
            return "bad: chunk size %r" % data[pos:eol][:40]
        if n == 0:
            complete = True
            break
        chunks.append(data[eol + 2:eol + 2 + n])
        pos = eol + 2 + n + 2
    if not complete:
        return "bad: the answer was cut after %d bytes" % len(data)
    lines = [l for l in b"".join(chunks).split(b"\n") if l.startswith(b"{")]
    try:
        res = json.loads(lines[-1])["result"]
    except (IndexError, KeyError, ValueError) as e:
        return "bad: no result line (%s)" % e
    dropped = any(b'"dropped"' in l for l in lines[:-1])
    if not dropped or res.get("status") != "timeout":
        return "bad: dropped=%s status=%r" % (dropped, res.get("status"))
    return "ok"

print(verdict())
PY
)
expect_eq "slow client: the output it did not take is dropped with a marker, the timeout lands, both slots free meanwhile" ok "$verdict"
went_away() { grep -c 'the client went away' "$SRV_LOG"; }
went_away_is() { [ "$(went_away)" = "$1" ]; }
wait_for markers_gone 137.1
expect_eq "slow client: the two runs beside it cancelled, nothing left" "" "$(marker_pids 137.1)"
check "slow client: the two runs beside it logged as cancelled" wait_for went_away_is 2
rss1=$(awk '/VmHWM/{print $2}' /proc/"$SRV_PID"/status)
# the run keeps its head and tail (32 MiB at most); the stream adds a bounded buffer, not the flood
if [ -z "${WARD_ASAN:-}" ]; then # (the sanitizer's own memory is another matter)
	check "slow client: ward's peak memory stays bounded (${rss0} -> ${rss1} KiB)" test "$((rss1 - rss0))" -lt 200000
fi

# ---- disconnect after the first chunk, 100 times: each run is cancelled at once
snap() { # fds children
	echo "$(fd_count "$SRV_PID") $(kids "$SRV_PID")"
}
idle() { [ "$(metric ward_in_flight)" = 0 ] && [ "$(metric ward_answering)" = 0 ]; }
fdlist() { for f in /proc/"$SRV_PID"/fd/*; do echo "${f##*/} $(readlink "$f")"; done 2>/dev/null | sort; }
wait_for idle
gone0=$(went_away)
before=$(snap)
fdlist >"$SERVE_TMP/fds.before"
verdict=$(python3 - "$PORT" <<'PY'
import json, socket, sys
port = int(sys.argv[1])
body = json.dumps({"command": "echo hi; exec sleep 31.7"}).encode()
bad = 0
for i in range(100):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"POST /exec HTTP/1.1\r\nHost: x\r\nAccept: application/x-ndjson\r\nContent-Length: %d\r\n\r\n"
              % len(body) + body)
    got = b""
    try:
        while b'"data":"hi\\n"' not in got:
            b = s.recv(4096)
            if not b:
                break
            got += b
    except socket.timeout:
        pass
    s.close()
    if b'"data":"hi\\n"' not in got:
        bad += 1
        if bad == 3:
            break  # (bounded: without a cancel each would wait for a slot)
print("ok" if bad == 0 else "bad: %d streams got no first chunk (slots still held?)" % bad)
PY
)
expect_eq "disconnect: 100 streams cut after their first chunk each got it (max-concurrent 2)" ok "$verdict"
check "disconnect: in-flight back to 0" wait_for idle
wait_for markers_gone 31.7
expect_eq "disconnect: no sandboxed process left" "" "$(marker_pids 31.7)"
back() { [ "$(snap)" = "$before" ]; }
# (up to 30 s: a cancelled run's teardown and its connection's close are the
# server's to finish; a descriptor still there after that is a leak, listed)
for _ in 1 2 3; do wait_for back && break; done
expect_eq "disconnect: the server's fds and children back where they were" "$before" "$(snap)"
back || { fdlist | diff "$SERVE_TMP/fds.before" - | sed 's/^/# fd: /'; }
wait_for went_away_is $((gone0 + 100))
expect_eq "disconnect: logged as cancelled" 100 "$(($(went_away) - gone0))"

# ---- POST /test streams its run, then the report
job='{"runner":"junit","command":["sh","-c","echo from-test; sleep 1; printf \"<testsuite><testcase name=\\\"t\\\"/></testsuite>\" > $WARD_REPORT"],"source_files":[],"test_files":[]}'
verdict=$(curl -sN --max-time 60 "${ND[@]}" --data-binary "$job" "$URL/test" | python3 -c '
import json, sys
ev = [json.loads(l) for l in sys.stdin if l.strip()]
ok = {"stream": "stdout", "data": "from-test\n"} in ev and ev[-1].get("result", {}).get("passed") == 1
print("ok" if ok else "bad: %r" % ev)')
expect_eq "/test: the job's output streams, the report is the result" ok "$verdict"
r=$(http POST /test "${ND[@]}" --data-binary '{"runner":"nope"}')
expect_eq "/test: a refused job is a plain 400" 400 "$(code_of "$r")"

# ---- a session's exec streams
r=$(http POST /sessions -H 'Content-Type: application/json' --data-binary '{}')
sid=$(jg "$(body_of "$r")" 'd["id"]')
verdict=$(curl -sN --max-time 30 "${ND[@]}" --data-binary '{"command":"echo in; pwd"}' "$URL/sessions/$sid/exec" |
	python3 -c '
import json, sys
ev = [json.loads(l) for l in sys.stdin if l.strip()]
s = "".join(e["data"] for e in ev if "stream" in e)
print("ok" if s == "in\n/work\n" and ev[-1]["result"]["stdout"] == s else "bad: %r" % ev)')
expect_eq "session exec: streams" ok "$verdict"
cd "$PYDIR" || exit 1
verdict=$(python3 - "$URL" "$sid" <<'PY'
import sys, ward_client as w
s = w.Runner(sys.argv[1]).session_attach(sys.argv[2])
ev = list(s.exec_stream("echo py"))
print("ok" if ev and ev[0] == {"stream": "stdout", "data": "py\n"} and "result" in ev[-1] else "bad: %r" % ev)
PY
)
cd "$ROOT" || exit 1
expect_eq "python Session.exec_stream" ok "$verdict"
r=$(http POST /sessions/nope.0123456789abcdef0123456789abcdef/exec "${ND[@]}" --data-binary '{"command":"true"}')
expect_eq "session exec: unknown session is a plain 404" 404 "$(code_of "$r")"

# ---- ward run --remote: live output, same exit status (the program waits on
# a marker this script ends once the first line has appeared)
"$WARD" run --remote "$URL" --timeout 25 -- sh -c 'echo first; sleep 41.4; echo second; exit 7' >"$SERVE_TMP/remote.out" 2>"$SERVE_TMP/remote.err" &
wpid=$!
alive=no
wait_for grep -q first "$SERVE_TMP/remote.out" && kill -0 "$wpid" 2>/dev/null && alive=yes
wait_for markers_up 41.4
for p in $(marker_pids 41.4); do kill -KILL "$p"; done
wait "$wpid"; rc=$?
expect_eq "ward run --remote: its first line appears while the program still runs" yes "$alive"
# (its stderr has the shell's word on the marker it lost)
expect_eq "ward run --remote: output and exit status" "first second 7" "$(tr '\n' ' ' <"$SERVE_TMP/remote.out")$rc"
a=$("$WARD" run --remote "$URL" --output-limit 100 -- seq 1 100)
b=$("$WARD" run --output-limit 100 -- seq 1 100)
expect_eq "ward run --remote: a capped stream reads as a local run's (head, marker, tail)" "$b" "$a"
j=$("$WARD" run --remote "$URL" --json -- sh -c 'echo j; exit 3')
expect_eq "ward run --remote --json: the result as before" "nonzero j" "$(jg "$j" 'd["status"]+" "+d["stdout"].strip()')"

expect_eq "metrics: streamed runs counted" yes "$([ "$(metric ward_streamed_total)" -ge 100 ] && echo yes)"
stop_server "$SRV_PID"; rc=$?
expect_eq "clean exit" 0 "$rc"

# ---- the drain's cancel reaches a streamed run: its stream ends with the result
start_server streamdrain --drain-timeout 1 || exit 0
curl -sN --max-time 30 "${ND[@]}" --data-binary '{"command":"echo up; exec sleep 33.3"}' "$URL/exec" \
	>"$SERVE_TMP/drain.out" &
cpid=$!
wait_for grep -q '"up' "$SERVE_TMP/drain.out"
kill -TERM "$SRV_PID"
wait "$cpid"
expect_eq "drain: the stream ends with a cancelled result" "error cancelled" \
	"$(tail -1 "$SERVE_TMP/drain.out" | python3 -c 'import json,sys; r=json.load(sys.stdin)["result"]; print(r["status"], r["error"].split(":")[0])' 2>&1)"
stop_server "$SRV_PID"
expect_eq "drain: no sandboxed process left" "" "$(marker_pids 33.3)"

# ---- a pooled sandbox (ward serve --pool) streams as well
start_server streampool --pool 1 || exit 0
verdict=$(curl -sN --max-time 30 "${ND[@]}" --data-binary '{"command":"echo pooled; sleep 0.2; echo end"}' "$URL/exec" |
	python3 -c '
import json, sys
ev = [json.loads(l) for l in sys.stdin if l.strip()]
s = "".join(e["data"] for e in ev if "stream" in e)
print("ok" if s == "pooled\nend\n" and ev[-1]["result"]["stdout"] == s and len(ev) >= 3 else "bad: %r" % ev)')
expect_eq "pool: a pooled run streams" ok "$verdict"
stop_server "$SRV_PID"; rc=$?
expect_eq "pool: clean exit" 0 "$rc"
