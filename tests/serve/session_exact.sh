#!/bin/bash
# ward serve: an exec's usage and limits in a session are its own, however
# the session makes execs ahead of time (session.c arms the next exec's
# process and cgroup while the session is idle, issue 26):
#   - the second exec's cpu and memory peak leave out the first's (and the
#     memory the first left behind in /tmp);
#   - a fork bomb ended by its timeout leaves no pids behind: the next exec
#     forks nearly up to the session's limit again;
#   - a timeout still kills a daemon the exec started (a grandchild);
#   - each exec gets its own cwd, stdin and environment, armed or not;
#   - an exec the armer made ahead of time sees the files the last wrote;
#   - a new session's first exec is armed as the session starts (issue 35:
#     its migration rides on PID 1's, no grace period on the exec's path),
#     and it sees the session's files, its own cwd and environment.
. "$(dirname "$0")/lib.bash"

M=$((4700000 + $$ % 100000))
start_server exact --max-concurrent 2 || exit 0
r=$(http POST /sessions --data-binary '{"ttl_s": 120, "limits": {"pids": 32, "memory_mb": 384}}')
[ "$(code_of "$r")" = 201 ] || { fail "a session is made" "$r"; exit 0; }
SID=$(jget "$(body_of "$r")" 'd["id"]')
ex() { http POST "/sessions/$SID/exec" -H 'Content-Type: application/json' --data-binary "$1"; }

# ---- 1. cpu and memory: the second exec's own
r=$(ex '{"command": "head -c 48M /dev/zero >/tmp/left; python3 -c \"b = bytearray(160 << 20)\nimport time\nt = time.process_time()\nwhile time.process_time() - t < 0.6: pass\""}')
b=$(body_of "$r")
cpu1=$(jg "$b" 'd["usage"]["cpu_user_ms"] + d["usage"]["cpu_sys_ms"]')
rss1=$(jg "$b" 'd["usage"]["max_rss_kb"]')
if [ "${cpu1:-0}" -ge 500 ] && [ "${rss1:-0}" -ge 160000 ]; then
	pass "exec 1 used its CPU and memory (cpu ${cpu1} ms, peak ${rss1} kB)"
else fail "exec 1's usage" "$b"; fi
for i in 1 2 3; do
	sleep 0.2 # the armer's time: the next exec is an armed one
	r=$(ex '{"argv": ["true"]}')
	b=$(body_of "$r")
	cpu=$(jg "$b" 'd["usage"]["cpu_user_ms"] + d["usage"]["cpu_sys_ms"]')
	rss=$(jg "$b" 'd["usage"]["max_rss_kb"]')
	if [ "${cpu:-999}" -lt 100 ]; then pass "exec $((i + 1)): its CPU leaves exec 1's out ($cpu ms)"; else
		fail "exec $((i + 1))'s CPU" "$cpu ms after exec 1's $cpu1: $b"; fi
	# exec 1's 160 MiB peak, and its 48 MiB file in /tmp (charged to
	# its cgroup, still there), would each show in a reused cgroup
	if [ "${rss:-999999}" -lt 32768 ]; then pass "exec $((i + 1)): its memory peak leaves exec 1's out ($rss kB)"; else
		fail "exec $((i + 1))'s memory peak" "$rss kB after exec 1's $rss1: $b"; fi
done
ex '{"command": "rm -f /tmp/left"}' >/dev/null

# ---- 2. a fork bomb ended by its timeout leaves no pids behind
# (a shell gives up at its first failed fork, leaving its children running,
# which is not a fork bomb: this one keeps trying until its timeout)
r=$(ex '{"command": "python3 -c \"import os, time\nwhile True:\n try:\n  if os.fork() == 0:\n   time.sleep(300)\n   os._exit(0)\n except OSError:\n  pass\"", "limits": {"timeout_s": 2}}')
expect_eq "a fork bomb: its timeout ends it" true "$(jg "$(body_of "$r")" 'd["timed_out"]' | tr A-Z a-z)"
sleep 0.3
for i in 1 2; do
	r=$(ex '{"command": "n=0; for i in $(seq 24); do sleep 0.5 & n=$((n+1)); done; wait; echo $n"}')
	expect_eq "after it, exec $i forks 24 processes of the session's 32 pids" 24 \
		"$(jg "$(body_of "$r")" 'd["stdout"].strip()')"
done
p=$(jg "$(body_of "$(http GET "/sessions/$SID")")" 'd["usage"]["pids"]')
# PID 1, and the next exec's process the armer made
if [ "${p:-99}" -le 2 ]; then pass "the idle session counts $p pids"; else fail "the idle session's pids" "$p"; fi

# ---- 3. a timeout kills the exec's daemon (a grandchild in a session of its own)
r=$(ex "{\"command\": \"(setsid sleep $M &); sleep 300\", \"limits\": {\"timeout_s\": 1}}")
expect_eq "an exec with a daemon: its timeout ends it" true "$(jg "$(body_of "$r")" 'd["timed_out"]' | tr A-Z a-z)"
wait_for markers_gone "$M"
expect_eq "... and the daemon it started" "" "$(marker_pids "$M")"
r=$(ex '{"argv": ["true"]}')
expect_eq "the session goes on" 0 "$(jg "$(body_of "$r")" 'd["exit_code"]')"

# ---- 4. each exec its own cwd, stdin, environment; the last one's files
ex '{"command": "mkdir -p /work/a /tmp/b; echo one > /work/a/f"}' >/dev/null
for d in /work/a /tmp/b /work /tmp /work/a; do
	sleep 0.1
	r=$(ex "{\"command\": \"pwd\", \"cwd\": \"$d\"}")
	expect_eq "cwd $d" "$d" "$(jg "$(body_of "$r")" 'd["stdout"].strip()')"
done
r=$(ex '{"command": "cat; echo $X", "stdin": "in\n", "env": {"X": "ex"}}')
expect_eq "stdin and env of an armed exec" "in ex" "$(jg "$(body_of "$r")" '" ".join(d["stdout"].split())')"
r=$(ex '{"command": "cat </dev/stdin | wc -c"}')
expect_eq "no stdin: an empty one" 0 "$(jg "$(body_of "$r")" 'd["stdout"].strip()')"
r=$(ex '{"command": "echo $X"}')
expect_eq "the last exec's env is not this one's" "" "$(jg "$(body_of "$r")" 'd["stdout"].strip()')"
r=$(ex '{"command": "cat /work/a/f"}')
expect_eq "an armed exec sees the files written since it was armed" one "$(jg "$(body_of "$r")" 'd["stdout"].strip()')"
r=$(ex '{"command": "no-such-program-here"}')
expect_eq "a missing program: 127" 127 "$(jg "$(body_of "$r")" 'd["exit_code"]')"
r=$(ex '{"command": "pwd", "cwd": "/no/such/dir"}')
expect_contains "a cwd that does not exist: the error says so" "$(body_of "$r")" "/no/such/dir"
r=$(ex '{"argv": ["true"]}')
expect_eq "the session goes on after a failed setup" 0 "$(jg "$(body_of "$r")" 'd["exit_code"]')"
http DELETE "/sessions/$SID" >/dev/null

# ---- 5. the first exec of a new session: armed as the session starts
r=$(http POST /sessions --data-binary '{"ttl_s": 60, "files": [{"path": "given", "content": "given"}]}')
[ "$(code_of "$r")" = 201 ] || { fail "a second session is made" "$r"; exit 0; }
SID=$(jget "$(body_of "$r")" 'd["id"]')
sleep 1.5 # between the session's start and its first exec
# the exec's process's start (clock ticks since boot) and the uptime now, as
# the exec sees them: an armed process started before the sleep
r=$(ex '{"command": "read -r s </proc/$$/stat; set -- ${s##*) }; read -r up _ </proc/uptime; echo ${20} $up $(getconf CLK_TCK); pwd; echo $X; cat /work/given", "cwd": "/tmp", "env": {"X": "first"}}')
out=$(jg "$(body_of "$r")" '" ".join(d["stdout"].split())')
age=$(echo "$out" | awk '{print ($2 - $1 / $3 >= 1.0) ? "before" : "after"}')
expect_eq "a new session's first exec: its process was made as the session started" before "$age"
expect_eq "... its cwd, environment and the session's files" "/tmp first given" "$(echo "$out" | cut -d' ' -f4-)"
http DELETE "/sessions/$SID" >/dev/null
