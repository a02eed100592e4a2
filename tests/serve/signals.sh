#!/bin/bash
# ward serve: SIGTERM stops accepting, lets in-flight runs finish and
# exits 0; the drain is bounded; SIGHUP reopens the log.
. "$(dirname "$0")/lib.bash"

start_server drain --max-concurrent 2 --queue 4 || exit 0
pids=""
for i in 1 2 3; do
	curl -s --max-time 30 -w '\n%{http_code}' --data-binary '{"command":"sleep 1.5; echo finished"}' "$URL/exec" >"$SERVE_TMP/r.$i" &
	pids="$pids $!"
done
sleep 0.5
t0=$(date +%s.%N)
kill -TERM "$SRV_PID"
sleep 0.3
code=$(curl -s --max-time 5 -o /dev/null -w '%{http_code}' "$URL/health")
expect_eq "no new connections after SIGTERM" 000 "$code"
wait $pids
for i in 1 2 3; do
	expect_eq "in-flight/queued request $i finished with its answer" "finished 200" "$(jget "$(head -1 "$SERVE_TMP/r.$i")" 'd["stdout"].strip()' 2>/dev/null) $(tail -1 "$SERVE_TMP/r.$i")"
done
wait "$SRV_PID"; rc=$?
t1=$(date +%s.%N)
expect_eq "drained server exits 0" 0 "$rc"
check "drain took as long as the runs, not the drain timeout (< 15 s)" awk -v a="$t0" -v b="$t1" 'BEGIN{exit !(b-a < 15)}'
check "the log says draining and stopped" grep -q '"event":"stopped","message":"drained"' "$SRV_LOG"

# a kept-alive connection's next request during the drain is answered 503
# (a balancer retries it elsewhere), never dropped or reset mid-request;
# and runs already going still answer
start_server keepalive --max-concurrent 2 || exit 0
out=$(python3 - "$PORT" "$SRV_PID" <<'PY'
import http.client, json, os, signal, sys, threading, time
port, pid = int(sys.argv[1]), int(sys.argv[2])
c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
c.request("POST", "/exec", body='{"argv":["true"]}')
r = c.getresponse(); r.read()
first = r.status
slow = {}
def run_slow():
    s = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    s.request("POST", "/exec", body='{"command":"sleep 1.5; echo drained"}')
    a = s.getresponse(); slow["r"] = "%d %s" % (a.status, json.loads(a.read())["stdout"].strip())
t = threading.Thread(target=run_slow); t.start()
time.sleep(0.5)
os.kill(pid, signal.SIGTERM)
time.sleep(0.3)
try:
    c.request("POST", "/exec", body='{"argv":["true"]}')
    a = c.getresponse()
    during = "%d %s" % (a.status, json.loads(a.read()).get("error", ""))
except Exception as e:
    during = "exception " + type(e).__name__
t.join()
print(first)
print(during)
print(slow.get("r"))
PY
)
expect_eq "drain: a kept-alive connection worked before SIGTERM" 200 "$(sed -n 1p <<<"$out")"
expect_eq "drain: its next request is answered 503, saying why" "503 the runner is shutting down: retry on another runner" "$(sed -n 2p <<<"$out")"
expect_eq "drain: the run going at SIGTERM answers" "200 drained" "$(sed -n 3p <<<"$out")"
wait "$SRV_PID"
expect_eq "drain: then exits 0" 0 $?

# a bounded drain: a run longer than --drain-timeout does not hold the exit
start_server bounded --drain-timeout 1 || exit 0
marker="sleep 30.$$"
curl -s --max-time 40 -o "$SERVE_TMP/cancelled" --data-binary "{\"command\":\"$marker\"}" "$URL/exec" &
cpid=$!
sleep 0.7
t0=$(date +%s.%N)
kill -TERM "$SRV_PID"
for _ in $(seq 100); do kill -0 "$SRV_PID" 2>/dev/null || break; sleep 0.1; done
wait "$SRV_PID"; rc=$?
t1=$(date +%s.%N)
expect_eq "bounded drain exits 0" 0 "$rc"
check "bounded drain exits in time (< 10 s, the run wanted 30)" awk -v a="$t0" -v b="$t1" 'BEGIN{exit !(b-a < 10)}'
sleep 0.5
check "the abandoned sandbox died with the server" test -z "$(ps -eo args= | grep -F "$marker" | grep -v grep)"
wait "$cpid" 2>/dev/null
expect_contains "the cut-off run's client got an answer saying so" "$(cat "$SERVE_TMP/cancelled")" '"error":"cancelled'
check "the cut-off run was cancelled and cleaned up, then a clean stop" grep -q '"event":"stopped","message":"drained"' "$SRV_LOG"

# SIGHUP reopens --log (logrotate moves the file first)
start_server hup || exit 0
post_exec '{"command":"echo before"}' >/dev/null
mv "$SRV_LOG" "$SRV_LOG.1"
kill -HUP "$SRV_PID"
sleep 1.2 # the main thread looks at signals once a second
post_exec '{"command":"echo after"}' >/dev/null
check "after SIGHUP the log file is new" test -s "$SRV_LOG"
check "the new log has the new request" grep -q '"path":"/exec"' "$SRV_LOG"
expect_eq "the rotated log kept the old request only" 1 "$(grep -c '"path":"/exec"' "$SRV_LOG.1")"
check "server alive after SIGHUP" kill -0 "$SRV_PID"
stop_server "$SRV_PID"; rc=$?
expect_eq "SIGTERM exits 0" 0 "$rc"
