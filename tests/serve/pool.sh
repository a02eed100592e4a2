#!/bin/bash
# ward serve --pool: sandboxes built ahead of requests.  A pooled run behaves
# exactly like a fresh one (stdin, files, env, limits, report channel, the
# enforced mechanisms), never sees its predecessor, and the pool never leaks:
# a dead pooled sandbox is replaced, and SIGTERM or SIGKILL of the server
# leaves no process behind.
. "$(dirname "$0")/lib.bash"

# (the server's spawner helpers are children too, but no sandbox)
children() { ps -o pid=,comm= --ppid "$1" | awk '$2 != "ward-spawner" && $2 != "ward-parked" {print $1}' | sort -n | tr '\n' ' '; }
pool_full() { [ "$(metric ward_pool_ready)" = "$1" ]; }
hits() { metric 'ward_pool_takes_total{result="hit"}'; }
json() { python3 -c 'import json,sys; print(json.dumps(eval(sys.argv[1])))' "$1"; }

# --- refused combinations -------------------------------------------------
"$WARD" serve --pool 2 --isolation application --listen 127.0.0.1:0 >/dev/null 2>"$SERVE_TMP/iso.err" </dev/null
expect_eq "pool: --pool with --isolation application is refused (125)" 125 $?
expect_contains "pool: ... and the error names the fix" "$(cat "$SERVE_TMP/iso.err")" "needs --isolation system"
"$WARD" serve --pool -1 --listen 127.0.0.1:0 >/dev/null 2>&1 </dev/null
expect_eq "pool: a negative --pool is refused (125)" 125 $?

start_server pool --pool 2 --max-concurrent 2 || exit 0
check "pool: two sandboxes ready at start" wait_for pool_full 2
expect_eq "pool: /metrics says its size" 2 "$(metric ward_pool_size)"
kids=$(children "$SRV_PID")
expect_eq "pool: the server has two children (the pooled PID 1s)" 2 "$(wc -w <<<"$kids")"

# A pooled PID 1 holds no fd of the server: none of its sockets (the
# listener, connections), not its log or stdio.
# shellcheck disable=SC2086
leak=$(server_fds_held $kids)
expect_eq "pool: a pooled PID 1 holds no socket or file of the server" "" "$leak"

# --- a pooled run is a complete run ----------------------------------------
h0=$(hits)
body=$(json '{"argv": ["sh", "-c", "cat; echo; echo \"$GREETING\"; cat /work/src/a.txt; ./run.sh; id -u; tr -d \"\\\\000\" </proc/1/cmdline; echo; exit 7"],
 "stdin": "from stdin", "env": {"GREETING": "hello pool"},
 "files": [{"path": "src/a.txt", "content": "file a\n"}, {"path": "run.sh", "content": "#!/bin/sh\necho script ran\n", "mode": 493}]}')
r=$(post_exec "$body")
b=$(body_of "$r")
expect_eq "pool: run answers 200" 200 "$(code_of "$r")"
expect_eq "pool: stdin, env, files, an executable file, uid 1000, PID 1 named ward-init, exit code" \
	"from stdin|hello pool|file a|script ran|1000|ward-init|7" "$(jg "$b" '"|".join(d["stdout"].split("\n")[:6]) + "|" + str(d["exit_code"])')"
expect_eq "pool: the run took a pooled sandbox" "$((h0 + 1))" "$(hits)"
expect_eq "pool: seccomp and Landlock enforced" "seccomp landlock" "$(jg "$b" 'd["enforced"]["seccomp"] + " " + d["enforced"]["landlock"][:8]')"
r2=$(post_exec '{"argv":["true"],"files":[{"path":"x","content":"y"}],"mounts":[]}')
expect_eq "pool: memory, pids and cpu enforced as in a fresh run" \
	"$(jg "$(body_of "$r2")" 'd["enforced"]["memory"]')" "$(jg "$b" 'd["enforced"]["memory"]')"
expect_contains "pool: enforced by a cgroup" "$(jg "$b" 'd["enforced"]["memory"] + d["enforced"]["pids"] + d["enforced"]["cpu"]')" "cgroup-v"

# a test job (files, the hidden report channel on fd 3) in a pooled sandbox
h0=$(hits)
TJ='import unittest
class T(unittest.TestCase):
    def test_a(self): pass
    def test_b(self): pass
    def test_c(self): self.fail()'
r=$(http POST /test --data-binary "$(python3 -c 'import json,sys; print(json.dumps({"test_files":[{"path":"test_p.py","content":sys.argv[1]}],"framework":"unittest","limits":{"timeout_s":30}}))' "$TJ")")
expect_eq "pool: POST /test in a pooled sandbox reports 3 tests, 2 passed, 1 failed" "200 3 2 1" \
	"$(code_of "$r") $(jg "$(body_of "$r")" '"%s %s %s" % (d["total"], d["passed"], d["failed"])')"
expect_eq "pool: ... and took a pooled sandbox" "$((h0 + 1))" "$(hits)"

# --- the request's limits reach the pooled sandbox ---------------------------
# memory: 24 MB allowed, the program asks for at most 256 MB in 8 MB steps
r=$(post_exec "$(json '{"argv": ["python3", "-c", "b=[]\nfor i in range(32): b.append(bytearray(8<<20))\nprint(\"survived\")"], "limits": {"memory_mb": 24, "timeout_s": 20}}')")
expect_eq "pool: the request's memory limit holds (status memory)" "memory" "$(jg "$(body_of "$r")" 'd["status"]')"
# pids: 8 allowed, the program tries 40 forks (capped) and counts them
FORKS='import os, time
n = 0
for i in range(40):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(3)
        os._exit(0)
    n += 1
print(n)'
r=$(post_exec "$(python3 -c 'import json,sys; print(json.dumps({"argv":["python3","-c",sys.argv[1]],"limits":{"pids":8,"timeout_s":20}}))' "$FORKS")")
started=$(jg "$(body_of "$r")" 'd["stdout"].strip()')
if [ -n "$started" ] && [ "$started" -lt 8 ] 2>/dev/null; then pass "pool: the request's pids limit holds ($started of 40 started)"; else fail "pool: the request's pids limit holds" "started=$started $(body_of "$r" | head -c 300)"; fi
# raising: a pooled cgroup (built with the default 512 MiB) gets 1 GiB, RAM
# and RAM+swap alike (cgroup v1 takes them in that order only when raising)
wait_for pool_full 2
post_exec '{"argv":["sleep","2"],"limits":{"memory_mb":1024,"timeout_s":20}}' >"$SERVE_TMP/raise" &
rpid=$!
raised() {
	local d
	for d in /sys/fs/cgroup/memory/ward/ward-"$SRV_PID"-* /sys/fs/cgroup/ward/ward-"$SRV_PID"-*; do
		[ -d "$d" ] || continue
		if [ -f "$d/memory.max" ]; then
			[ "$(cat "$d/memory.max")" = $((1024 << 20)) ] && return 0
		elif [ "$(cat "$d/memory.limit_in_bytes" 2>/dev/null)" = $((1024 << 20)) ]; then
			[ ! -f "$d/memory.memsw.limit_in_bytes" ] || [ "$(cat "$d/memory.memsw.limit_in_bytes")" = $((1024 << 20)) ] && return 0
		fi
	done
	return 1
}
check "pool: a request's higher memory limit reaches the pooled cgroup" wait_for raised
wait "$rpid"
expect_eq "pool: ... and that run is ok" "ok" "$(jg "$(body_of "$(cat "$SERVE_TMP/raise")")" 'd["status"]')"
r=$(post_exec '{"argv":["sleep","30"],"limits":{"timeout_s":1}}')
expect_eq "pool: the request's timeout holds" "timeout 124" "$(jg "$(body_of "$r")" 'd["status"] + " " + str(d["exit_code"])')"
r=$(post_exec '{"command":"head -c 100000 /dev/zero | tr \"\\\\0\" x","limits":{"max_output_chars":1000}}')
expect_eq "pool: the request's output cap holds" "True" "$(jg "$(body_of "$r")" 'str(d["stdout_truncated"])')"

# --- freshness through the pool -----------------------------------------------
LEAVE=$(cat "$ROOT/tests/fresh/leave.py")
LOOK=$(cat "$ROOT/tests/fresh/look.py")
wait_for pool_full 2
h0=$(hits)
r=$(post_exec "$(python3 -c 'import json,sys; print(json.dumps({"argv":["python3","-c",sys.argv[1]],"limits":{"timeout_s":20}}))' "$LEAVE")")
expect_contains "pool fresh: run N left its traces" "$(jg "$(body_of "$r")" 'd["stdout"]')" "left True True"
wait_for pool_full 2
r=$(post_exec "$(python3 -c 'import json,sys; print(json.dumps({"argv":["python3","-c",sys.argv[1]],"limits":{"timeout_s":20}}))' "$LOOK")")
expect_eq "pool fresh: run N+1 sees nothing of run N" "seen:" "$(jg "$(body_of "$r")" 'd["stdout"].strip()')"
peak=$(jg "$(body_of "$r")" 'd["usage"]["max_rss_kb"]')
if [ "${peak:-0}" -lt 60000 ] 2>/dev/null; then pass "pool fresh: run N+1's memory peak is its own"; else fail "pool fresh: run N+1's memory peak is its own" "max_rss_kb=$peak"; fi
expect_eq "pool fresh: both runs took pooled sandboxes" "$((h0 + 2))" "$(hits)"
no_left() { [ -z "$(marker_pids 97.31)" ]; }
check "pool fresh: no background process of run N left on the host" wait_for no_left

# --- other shapes build their own --------------------------------------------
h0=$(hits)
r=$(post_exec '{"argv":["python3","-c","import socket; s=socket.socket(); s.bind((\"127.0.0.1\",0)); s.listen()"],"network":"loopback"}')
expect_eq "pool: a loopback request (not the pool's shape) runs" "ok" "$(jg "$(body_of "$r")" 'd["status"]')"
expect_eq "pool: ... in a sandbox of its own" "$h0" "$(hits)"

# --- concurrency: more requests than pooled sandboxes ------------------------
wait_for pool_full 2
h0=$(hits); m0=$(metric 'ward_pool_takes_total{result="miss"}')
cpids=""
for i in $(seq 8); do
	post_exec "{\"command\":\"echo run$i\"}" >"$SERVE_TMP/c$i" &
	cpids="$cpids $!"
done
wait $cpids
ok=0
for i in $(seq 8); do [ "$(jg "$(body_of "$(cat "$SERVE_TMP/c$i")")" 'd["stdout"].strip()')" = "run$i" ] && ok=$((ok + 1)); done
expect_eq "pool: 8 concurrent requests on a pool of 2 all ran" 8 "$ok"
h1=$(hits); m1=$(metric 'ward_pool_takes_total{result="miss"}')
expect_eq "pool: each took a pooled sandbox or built one (hits + misses = 8)" 8 "$((h1 - h0 + m1 - m0))"

# --- a pooled sandbox that died is replaced -----------------------------------
wait_for pool_full 2
victim=$(children "$SRV_PID" | awk '{print $1}')
kill -KILL "$victim"
for i in 1 2 3; do
	r=$(post_exec '{"command":"echo alive"}')
	expect_eq "pool: request $i after a pooled PID 1 was killed" "ok alive" "$(jg "$(body_of "$r")" 'd["status"] + " " + d["stdout"].strip()')"
done
check "pool: the pool refills" wait_for pool_full 2

# --- no leak after many runs --------------------------------------------------
snap() { echo "$(fd_count "$SRV_PID") $(ls /proc/"$SRV_PID"/task | wc -l) $(children "$SRV_PID" | wc -w)"; }
wait_for pool_full 2
# the refill's own threads and fds settle: take the snapshot once it is steady
steady() { local a; a=$(snap); sleep 0.3; [ "$(snap)" = "$a" ]; }
wait_for steady
before=$(snap)
python3 - "$PORT" <<'PY'
import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=30)
for i in range(200):
    c.request("POST", "/exec", body='{"argv":["true"]}' if i % 2 else '{"command":"echo x >&2; exit 1"}')
    c.getresponse().read()
PY
settled() { [ "$(snap)" = "$before" ]; }
if wait_for settled; then pass "pool: fds, threads and children back to where they were after 200 runs ($before)"; else fail "pool: fds, threads and children back after 200 runs" "before [$before] after [$(snap)]"; fi

# --- SIGTERM: pooled sandboxes and their cgroups go with the server -----------
kids=$(children "$SRV_PID")
pid=$SRV_PID
stop_server "$SRV_PID"
expect_eq "pool: SIGTERM exits 0" 0 $?
alive=""
for k in $kids; do kill -0 "$k" 2>/dev/null && alive="$alive $k"; done
expect_eq "pool: no pooled PID 1 outlives the server" "" "$alive"
cg=$(find /sys/fs/cgroup -maxdepth 5 -type d -name "ward-$pid-*" 2>/dev/null | tr '\n' ' ')
expect_eq "pool: no cgroup of the server left" "" "$cg"

# --- SIGKILL: the pooled PID 1s die with it (PR_SET_PDEATHSIG) ----------------
start_server pool-kill --pool 3 || exit 0
wait_for pool_full 3
kids=$(children "$SRV_PID")
expect_eq "pool: three pooled PID 1s" 3 "$(wc -w <<<"$kids")"
kill -KILL "$SRV_PID"
wait "$SRV_PID" 2>/dev/null
gone() { for k in $kids; do kill -0 "$k" 2>/dev/null && return 1; done; return 0; }
check "pool: SIGKILL of the server takes every pooled sandbox with it" wait_for gone
