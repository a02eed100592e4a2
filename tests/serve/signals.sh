#!/bin/bash
# ward serve: SIGTERM stops accepting, lets in-flight runs finish and
# exits 0; the drain is bounded; SIGHUP reopens the log.
. "$(dirname "$0")/lib.bash"

# The runs wait for the test's go (a file in a bound directory, at most
# 30 s), so all three are in before SIGTERM however slowly they start.
GATE=$SERVE_TMP/gate
mkdir -p "$GATE"
chmod 0755 "$SERVE_TMP" "$GATE"
GATED='{"command":"k=0; while [ ! -e /gate/go ] && [ $k -lt 600 ]; do sleep 0.05; k=$((k+1)); done; echo finished","mounts":[{"host_path":"'"$GATE"'","sandbox_path":"/gate"}]}'
start_server drain --max-concurrent 2 --queue 4 --allow-root "$GATE" || exit 0
pids=""
for i in 1 2 3; do
	curl -s --max-time 60 -w '\n%{http_code}' --data-binary "$GATED" "$URL/exec" >"$SERVE_TMP/r.$i" &
	pids="$pids $!"
done
# SIGTERM once all three are in: two running, one queued
all_in() { [ "$(metric ward_in_flight) $(metric ward_queued)" = "2 1" ]; }
check "the three requests are running or queued before SIGTERM" wait_for all_in
t0=$(date +%s.%N)
kill -TERM "$SRV_PID"
# (the listener closes right after the log says "draining")
draining() { grep -q '"event":"draining"' "$SRV_LOG"; }
check "SIGTERM: the log says draining" wait_for draining
refused() { [ "$(curl -s --max-time 5 -o /dev/null -w '%{http_code}' "$URL/health")" = 000 ]; }
check "no new connections after SIGTERM" wait_for refused
touch "$GATE/go"
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
out=$(python3 - "$PORT" "$SRV_PID" "$SRV_LOG" <<'PY'
import http.client, json, os, signal, sys, threading, time
port, pid, log = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
c.request("POST", "/exec", body='{"argv":["true"]}')
r = c.getresponse(); r.read()
first = r.status
slow = {}
def run_slow():
    s = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    s.request("POST", "/exec", body='{"command":"sleep 1.5; echo drained"}')
    a = s.getresponse(); slow["r"] = "%d %s" % (a.status, json.loads(a.read())["stdout"].strip())
def wait_for(cond, what):
    for _ in range(200):
        if cond():
            return
        time.sleep(0.05)
    sys.exit("timed out waiting for " + what)
def in_flight():
    m = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    m.request("GET", "/metrics")
    return "\nward_in_flight 1\n" in m.getresponse().read().decode()
t = threading.Thread(target=run_slow); t.start()
wait_for(in_flight, "the slow run to start")
os.kill(pid, signal.SIGTERM)
wait_for(lambda: '"event":"draining"' in open(log).read(), "the drain to start")
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
running() { [ -n "$(marker_pids "30.$$")" ]; } # the sandbox's sleep (not curl's argv)
check "bounded drain: the long run is going before SIGTERM" wait_for running
t0=$(date +%s.%N)
kill -TERM "$SRV_PID"
for _ in $(seq 100); do kill -0 "$SRV_PID" 2>/dev/null || break; sleep 0.1; done
wait "$SRV_PID"; rc=$?
t1=$(date +%s.%N)
expect_eq "bounded drain exits 0" 0 "$rc"
check "bounded drain exits in time (< 10 s, the run wanted 30)" awk -v a="$t0" -v b="$t1" 'BEGIN{exit !(b-a < 10)}'
gone() { ! running; }
check "the abandoned sandbox died with the server" wait_for gone
wait "$cpid" 2>/dev/null
expect_contains "the cut-off run's client got an answer saying so" "$(cat "$SERVE_TMP/cancelled")" '"error":"cancelled'
check "the cut-off run was cancelled and cleaned up, then a clean stop" grep -q '"event":"stopped","message":"drained"' "$SRV_LOG"

# SIGHUP reopens --log (logrotate moves the file first)
start_server hup || exit 0
post_exec '{"command":"echo before"}' >/dev/null
mv "$SRV_LOG" "$SRV_LOG.1"
kill -HUP "$SRV_PID"
reopened() { grep -q '"event":"log-reopened"' "$SRV_LOG" 2>/dev/null; }
check "SIGHUP: the new log says it was reopened" wait_for reopened
post_exec '{"command":"echo after"}' >/dev/null
check "after SIGHUP the log file is new" test -s "$SRV_LOG"
check "the new log has the new request" grep -q '"path":"/exec"' "$SRV_LOG"
expect_eq "the rotated log kept the old request only" 1 "$(grep -c '"path":"/exec"' "$SRV_LOG.1")"
check "server alive after SIGHUP" kill -0 "$SRV_PID"
stop_server "$SRV_PID"; rc=$?
expect_eq "SIGTERM exits 0" 0 "$rc"
