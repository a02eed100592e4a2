#!/bin/bash
# ward serve: one client's unread answers cannot take the answer budget from
# the others (issue 21, item 4).  Answers are held from their encoding until
# their clients take them; each client holds at most --max-answer-client of
# --max-answer-total.  alice leaves two answers of 48 MiB unread (her
# connections never read); her third gets 503 naming her share, while bob's
# large answer still comes, whole.
. "$(dirname "$0")/lib.bash"
printf 'alice tok-alice-0123456789\nbob tok-bob-0123456789\n' >"$SERVE_TMP/tokens"
start_server share --token-file "$SERVE_TMP/tokens" --max-concurrent 2 --max-output 4194304 \
	--max-answer-total 536870912 --max-answer-client 134217728 --request-timeout 60 || exit 0
# 4 MiB of \x01 on each stream: 6 bytes each on the wire, a 48 MiB answer
BIG='{"command": "head -c 4194304 /dev/zero | tr \"\\\\0\" \"\\\\1\"; head -c 4194304 /dev/zero | tr \"\\\\0\" \"\\\\1\" >&2", "limits": {"max_output_chars": 4194304}}'
python3 - "$PORT" "$BIG" >"$SERVE_TMP/share.out" 2>&1 <<'PY' &
import socket, sys, time, json, urllib.request, urllib.error
port, body = int(sys.argv[1]), sys.argv[2].encode()
def metric(name):
    req = urllib.request.Request("http://127.0.0.1:%d/metrics" % port,
                                 headers={"Authorization": "Bearer tok-bob-0123456789"})
    for line in urllib.request.urlopen(req, timeout=10).read().decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return 0.0
def send(tok):
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.sendall(b"POST /exec HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + tok +
              b"\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    return s
held = []
for i in range(2):  # two answers alice never reads
    held.append(send(b"tok-alice-0123456789"))
    for _ in range(300):
        if metric("ward_answer_bytes") >= (i + 1) * 48e6:
            break
        time.sleep(0.1)
print("held%d" % (metric("ward_answer_bytes") // 48e6), flush=True)
def status(tok):
    req = urllib.request.Request("http://127.0.0.1:%d/exec" % port, data=body,
                                 headers={"Authorization": b"Bearer " + tok, "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return str(r.status), r.read()
    except urllib.error.HTTPError as e:
        return str(e.code), e.read()
t = time.time()
code, rest = status(b"tok-alice-0123456789")
print("alice3", code, json.loads(rest).get("error", "")[:200] if code != "200" else "", "%.1fs" % (time.time() - t),
      flush=True)
t = time.time()
code, rest = status(b"tok-bob-0123456789")
print("bob", code, len(json.loads(rest).get("stdout", "")) if code == "200" else rest[:200],
      "%.1fs" % (time.time() - t), flush=True)
for s in held:
    s.close()
PY
py=$!
wait "$py"
out=$(cat "$SERVE_TMP/share.out")
expect_contains "alice holds two unread answers of 48 MiB" "$out" "held2"
expect_contains "her third answer is 503: her share is spent" "$out" "alice3 503"
expect_contains "... and the 503 names her share" "$out" "max-answer-client"
expect_contains "bob's 48 MiB answer still comes, whole, while hers wait" "$out" "bob 200 4194304"
B=(-H 'Authorization: Bearer tok-bob-0123456789')
wait_for metric_is ward_answer_bytes -lt 1000000 "${B[@]}"
expect_eq "once her connections close, the budget is back" 1 "$(metric_is ward_answer_bytes -lt 1000000 "${B[@]}" && echo 1)"
r=$("$WARD" serve --listen 127.0.0.1:0 --max-output 1048576 --max-answer-client 1000 2>&1)
expect_contains "a share smaller than the largest answer is refused at start" "$r" "must hold the largest answer"
