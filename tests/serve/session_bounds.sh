#!/bin/bash
# ward serve: what one session's tenant can cost the others (issue 21; the
# second security review's findings), each bounded, each proof rebuilt:
#   - a stdin write never waits for the process to read: what the pipe has
#     no room for is queued (1 MiB at most, 429 beyond), and no worker is
#     held, even with one worker;
#   - a files call on a session whose PID 1 is stopped ends at the deadline;
#   - background-process records are held to --session-bg-output and
#     --max-bg-output-total (429 beyond), an exited one's output stays
#     after a read (a follow to its end, then a GET) until a new process
#     needs its room, and a record keeps at most 4 KiB of argv;
#   - a session's cpu_seconds is a budget: what runs past it is killed,
#     background processes and what execs left running included;
#   - a directory listing stays within --max-output (X-Ward-Truncated: 1);
#   - after pid reuse inside the sandbox, the pid names the new process.
# Every hostile step is bounded: curl --max-time, ttl_s, timeouts.
. "$(dirname "$0")/lib.bash"

M=$((4400000 + $$ % 100000))
# pid1_of MARKER — the host pid of the session's PID 1: the parent of a
# `sleep MARKER` an exec left running (orphans are PID 1's)
pid1_of() {
	local p
	p=$(marker_pids "$1" | head -n1)
	[ -n "$p" ] && awk '/^PPid:/{print $2}' /proc/"$p"/status
}
new_session() { # new_session JSON — sets SID
	local r
	r=$(http POST /sessions --data-binary "${1:-{\}}")
	SID=$(jget "$(body_of "$r")" 'd["id"]' 2>/dev/null)
	[ "$(code_of "$r")" = 201 ] || fail "a session is made" "$r"
}
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}'; }

start_server bounds --max-concurrent 2 --session-bg-output 8388608 --max-bg-output-total 12582912 \
	--max-output 262144 --max-answer-total 134217728 || exit 0

# ---- 1. stdin: a write never waits for the process to read; what the pipe
# has no room for waits in a bounded queue (1 MiB), beyond it 429
new_session '{"ttl_s": 120}'
# a process that never reads its stdin
r=$(http POST "/sessions/$SID/exec" --data-binary "{\"command\": \"exec sleep $M\", \"background\": true, \"stdin\": \"pipe\", \"limits\": {\"timeout_s\": 100}}")
P=$(jget "$(body_of "$r")" 'd["pid"]')
wait_for markers_up "$M"
head -c 200000 /dev/zero >"$SERVE_TMP/big"
# two at once, and an exec beside them: --max-concurrent 2 has a worker for it
# (before, each write held a worker until the call's deadline, 60 s here)
cpids=""
for i in 1 2; do
	curl -s -o /dev/null -w '%{http_code}' --max-time 30 -X POST --data-binary @"$SERVE_TMP/big" \
		"$URL/sessions/$SID/processes/$P/stdin" >"$SERVE_TMP/stdin$i" &
	cpids="$cpids $!"
done
r=$(curl -s --max-time 10 -X POST --data-binary '{"command": "echo free"}' "$URL/exec")
expect_eq "an exec is served while two stdin writes to a process that never reads are taken" free \
	"$(jget "$r" 'd["stdout"].strip()' 2>/dev/null)"
wait $cpids
expect_eq "stdin to a reader that never reads: taken, 204 (1st)" 204 "$(cat "$SERVE_TMP/stdin1")"
expect_eq "stdin to a reader that never reads: taken, 204 (2nd)" 204 "$(cat "$SERVE_TMP/stdin2")"
head -c 800000 /dev/zero >"$SERVE_TMP/more"
r=$(curl -s -w ' %{http_code}' --max-time 10 -X POST --data-binary @"$SERVE_TMP/more" "$URL/sessions/$SID/processes/$P/stdin")
expect_eq "past the 1 MiB the process has not read: 429" 429 "${r##* }"
expect_contains "the 429 says it has not read" "$r" "has not read"
head -c 1100000 /dev/zero >"$SERVE_TMP/huge"
r=$(curl -s -w ' %{http_code}' --max-time 10 -X POST --data-binary @"$SERVE_TMP/huge" "$URL/sessions/$SID/processes/$P/stdin")
expect_eq "one write of more than the queue holds: 413" 413 "${r##* }"
r=$(http POST /exec --data-binary '{"command": "echo free"}')
expect_eq "a worker is free afterwards" free "$(jget "$(body_of "$r")" 'd["stdout"].strip()')"
# a reader that reads late gets every byte, in order, and the close after them
r=$(http POST "/sessions/$SID/exec" --data-binary '{"command": "while [ ! -e /work/go ]; do sleep 0.05; done; md5sum", "background": true, "stdin": "pipe", "limits": {"timeout_s": 100}}')
P2=$(jget "$(body_of "$r")" 'd["pid"]')
head -c 300000 /dev/urandom >"$SERVE_TMP/rand"
split -b 100000 -d "$SERVE_TMP/rand" "$SERVE_TMP/part"
codes=""
for f in "$SERVE_TMP"/part0*; do
	codes="$codes $(curl -s -o /dev/null -w '%{http_code}' --max-time 10 -X POST --data-binary @"$f" "$URL/sessions/$SID/processes/$P2/stdin")"
done
codes="$codes $(curl -s -o /dev/null -w '%{http_code}' --max-time 10 -X POST "$URL/sessions/$SID/processes/$P2/stdin?close=1")"
expect_eq "three writes of 100 KB and the close, before the process reads: all taken" " 204 204 204 204" "$codes"
r=$(http PUT "/sessions/$SID/files/go" --data-binary 'x')
wait_proc_exited "$SID" "$P2" >/dev/null
out=$(curl -s --max-time 20 "$URL/sessions/$SID/processes/$P2/output")
expect_contains "the late reader got all 300 KB, in order, and its end" "$out" "$(md5sum <"$SERVE_TMP/rand" | cut -d' ' -f1)"
http DELETE "/sessions/$SID" >/dev/null
wait_for markers_gone "$M"
wait_for metric_is ward_session_bg_output_bytes = 0
expect_eq "the queued stdin's bytes went with the session" 0 "$(metric ward_session_bg_output_bytes)"

# ---- 2. one worker (as a one-core runner has): stdin writes and DELETE
stop_server "$SRV_PID"
start_server held --max-concurrent 1 --drain-timeout 3 || exit 0
new_session '{"ttl_s": 120}'
r=$(http POST "/sessions/$SID/exec" --data-binary "{\"command\": \"exec sleep $M\", \"background\": true, \"stdin\": \"pipe\", \"limits\": {\"timeout_s\": 100}}")
P=$(jget "$(body_of "$r")" 'd["pid"]')
wait_for markers_up "$M"
codes=""
for i in 1 2 3; do
	codes="$codes $(curl -s -o /dev/null -w '%{http_code}' --max-time 10 -X POST --data-binary @"$SERVE_TMP/big" "$URL/sessions/$SID/processes/$P/stdin")"
done
expect_eq "one worker: three writes to a process that never reads are taken" " 204 204 204" "$codes"
r=$(curl -s --max-time 10 -X POST --data-binary '{"command": "echo free"}' "$URL/exec")
expect_eq "one worker: it is free after them" free "$(jget "$r" 'd["stdout"].strip()' 2>/dev/null)"
r=$(http DELETE "/sessions/$SID")
expect_eq "DELETE of a session with stdin queued: 204" 204 "$(code_of "$r")"
wait_for markers_gone "$M"
expect_eq "DELETE killed the session's processes" "" "$(marker_pids "$M")"
r=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 -X POST --data-binary 'x' "$URL/sessions/$SID/processes/$P/stdin")
expect_eq "a write after DELETE: 404" 404 "$r"
# a daemon that inherited the pipe and never reads, after the main process
# ended: nothing is queued; what the pipe does not take is 429, saying how
# much went in
new_session '{"ttl_s": 120}'
r=$(http POST "/sessions/$SID/exec" --data-binary "{\"command\": \"setsid -f sleep $M; exit 0\", \"background\": true, \"stdin\": \"pipe\"}")
P=$(jget "$(body_of "$r")" 'd["pid"]')
wait_proc_exited "$SID" "$P" >/dev/null
r=$(curl -s -w ' %{http_code}' --max-time 10 -X POST --data-binary @"$SERVE_TMP/big" "$URL/sessions/$SID/processes/$P/stdin")
expect_eq "a daemon's pipe that fills: 429" 429 "${r##* }"
expect_contains "the 429 says how much was written" "$r" "bytes written"
t0=$(date +%s.%N)
kill -TERM "$SRV_PID"
for _ in $(seq 600); do kill -0 "$SRV_PID" 2>/dev/null || break; sleep 0.1; done
kill -0 "$SRV_PID" 2>/dev/null && { fail "SIGTERM with a full stdin pipe" "still running"; kill -KILL "$SRV_PID"; }
wait "$SRV_PID"
expect_eq "SIGTERM with a full stdin pipe: the server exits 0" 0 "$?"
wait_for markers_gone "$M"
expect_eq "SIGTERM: no marker is left" "" "$(marker_pids "$M")"
expect_contains "the session ended with the server" "$(cat "$SRV_LOG")" "the server stops"

# ---- 3. a files call on a session whose PID 1 is stopped: the deadline
start_server files --session-call-timeout 3 || exit 0
new_session '{"ttl_s": 120}'
http POST "/sessions/$SID/exec" --data-binary "{\"command\": \"nohup sleep $M >/dev/null 2>&1 & echo ok\"}" >/dev/null
wait_for markers_up "$M"
P1=$(pid1_of "$M")
check "the session's PID 1 is found" test -n "$P1"
kill -STOP "$P1"
for op in PUT GET; do
	t0=$(date +%s.%N)
	code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 40 -X "$op" --data-binary 'x' "$URL/sessions/$SID/files/f")
	t=$(elapsed "$t0")
	expect_eq "$op on a stopped session: 504 at the call's deadline" 504 "$code"
	if awk -v t="$t" 'BEGIN{exit !(t < 15)}'; then pass "$op ended near the 3 s deadline (${t} s)"; else
		fail "$op held past the deadline" "${t} s"; fi
done
kill -CONT "$P1"
r=$(http PUT "/sessions/$SID/files/f" --data-binary 'back')
expect_eq "once continued, the files API works again" 201 "$(code_of "$r")"
http DELETE "/sessions/$SID" >/dev/null

# ---- 4. background records: bounded, counted, freed
stop_server "$SRV_PID"
start_server bg --session-bg-output 8388608 --max-bg-output-total 12582912 || exit 0
new_session '{"ttl_s": 120}'
bg() { # bg SID MAX_OUTPUT — a background `sleep M` keeping MAX_OUTPUT per stream; prints the code
	code_of "$(http POST "/sessions/$1/exec" --data-binary "{\"command\": \"sleep $M\", \"background\": true, \"limits\": {\"max_output_chars\": $2, \"timeout_s\": 100}}")"
}
codes=""
for i in 1 2 3 4 5; do codes="$codes $(bg "$SID" 1048576)"; done
expect_eq "a session's records: four of 2 MiB fit in --session-bg-output 8 MiB, the fifth is 429" \
	" 202 202 202 202 429" "$codes"
expect_eq "the reserved capture is in /metrics" 8388608 "$(metric ward_session_bg_output_bytes)"
SID1=$SID
new_session '{"ttl_s": 120}'
codes="$(bg "$SID" 1048576) $(bg "$SID" 1048576) $(bg "$SID" 1048576)"
expect_eq "another session: two more fit in --max-bg-output-total 12 MiB, the third is 429" "202 202 429" "$codes"
r=$(http POST "/sessions/$SID/exec" --data-binary '{"command": "sleep 1", "background": true, "limits": {"max_output_chars": 1048576}}')
expect_contains "the 429 says which budget" "$r" "budget"
http DELETE "/sessions/$SID1" >/dev/null
http DELETE "/sessions/$SID" >/dev/null
wait_for markers_gone "$M"
wait_for metric_is ward_session_bg_output_bytes = 0
expect_eq "the sessions' ends gave their records' budget back" 0 "$(metric ward_session_bg_output_bytes)"
# an exited record's output stays until a new process needs its room (or
# the record is forgotten): a follow read to its end, then a plain GET,
# both get it
new_session '{"ttl_s": 120}'
r=$(http POST "/sessions/$SID/exec" --data-binary '{"command": "echo done", "background": true, "limits": {"max_output_chars": 1048576}}')
P=$(jget "$(body_of "$r")" 'd["pid"]')
wait_proc_exited "$SID" "$P" >/dev/null
expect_eq "an exited, unread record holds its reservation" 2097152 "$(metric ward_session_bg_output_bytes)"
out=$(curl -s --max-time 20 "$URL/sessions/$SID/processes/$P/output?follow=1")
expect_contains "its output is read to its end by a follow" "$out" '"result"'
out=$(curl -s --max-time 20 "$URL/sessions/$SID/processes/$P/output")
expect_contains "a GET after the follow gets the output again" "$out" 'done'
expect_eq "read to its end: the record keeps its reservation" 2097152 "$(metric ward_session_bg_output_bytes)"
# a process that needs the room: the exited record's buffers go for it
r=$(http POST "/sessions/$SID/exec" --data-binary "{\"command\": \"sleep $M\", \"background\": true, \"limits\": {\"max_output_chars\": 3670016, \"timeout_s\": 100}}")
expect_eq "a process of 7 MiB fits once the exited record gives its room up" 202 "$(code_of "$r")"
expect_eq "only the new one's reservation is held" 7340032 "$(metric ward_session_bg_output_bytes)"
out=$(curl -s --max-time 20 "$URL/sessions/$SID/processes/$P/output")
expect_not_contains "the evicted record's output is gone" "$out" 'done'
http DELETE "/sessions/$SID" >/dev/null
wait_for markers_gone "$M"
new_session '{"ttl_s": 120}'
# the argv a record keeps
long=$(head -c 100000 /dev/zero | tr '\0' a)
http POST "/sessions/$SID/exec" --data-binary "{\"argv\": [\"true\", \"$long\"], \"background\": true}" >/dev/null
r=$(http GET "/sessions/$SID/processes")
n=$(jg "$(body_of "$r")" '[sum(len(a) for a in p["argv"]) for p in d if p["argv"][0] == "true"][0]')
if [ "${n:-999999}" -le 4096 ]; then pass "a record keeps at most 4 KiB of argv ($n bytes of 100 KB)"; else
	fail "a record's argv" "$n bytes kept"; fi
expect_contains "a cut argv ends with ..." "$(body_of "$r")" 'aaa..."'
http DELETE "/sessions/$SID" >/dev/null

# ---- 5. a session's cpu_seconds is a budget for everything in it
new_session '{"ttl_s": 60, "limits": {"cpu_seconds": 1}}'
r=$(http POST "/sessions/$SID/exec" --data-binary '{"command": "while :; do :; done", "background": true}')
PS=$(jget "$(body_of "$r")" 'd["pid"]')
# an exec that leaves a spinner running, and ends at once
http POST "/sessions/$SID/exec" --data-binary "{\"command\": \"setsid -f sh -c 'while :; do :; done' ; sleep $M & echo ok\"}" >/dev/null
e=$(wait_proc_exited "$SID" "$PS")
expect_eq "the budget ended the spinning background process" exited "$(jg "$e" 'd["state"]')"
expect_eq "... reported as a CPU limit (exit 124)" 124 "$(jg "$e" 'd["exit_code"]')"
sleep 1
r=$(http GET "/sessions/$SID")
cpu=$(jg "$(body_of "$r")" 'd["usage"]["cpu_ms"]')
expect_eq "the session says its budget ran out" true "$(jg "$(body_of "$r")" 'd["cpu_budget_exceeded"]')"
sleep 2
cpu2=$(jg "$(body_of "$(http GET "/sessions/$SID")")" 'd["usage"]["cpu_ms"]')
if [ "${cpu2:-99999}" -le 2500 ] && [ "$((cpu2 - cpu))" -le 200 ]; then
	pass "nothing spins past the budget of 1 s ($cpu -> $cpu2 ms)"
else fail "CPU past the budget" "$cpu -> $cpu2 ms"; fi
expect_eq "the leftover marker of that exec was killed too" "" "$(marker_pids "$M")"
r=$(http PUT "/sessions/$SID/files/after" --data-binary 'x')
expect_eq "the files API still works after the budget" 201 "$(code_of "$r")"
http DELETE "/sessions/$SID" >/dev/null

# ---- 6. a listing stays within --max-output
stop_server "$SRV_PID"
start_server listing --max-output 262144 --max-answer-total 134217728 || exit 0
new_session '{"ttl_s": 120}'
r=$(http POST "/sessions/$SID/exec" --data-binary '{"command": "python3 -c \"[open(\\\"%0240d\\\" % i, \\\"w\\\").close() for i in range(2000)]\"; ls | wc -l"}')
expect_eq "2000 files of 240-byte names" 2000 "$(jget "$(body_of "$r")" 'd["stdout"].strip()')"
curl -s -D "$SERVE_TMP/lh" -o "$SERVE_TMP/list" --max-time 30 "$URL/sessions/$SID/files/"
size=$(stat -c %s "$SERVE_TMP/list")
if [ "$size" -le 262144 ]; then pass "the listing's answer is within --max-output ($size bytes)"; else
	fail "the listing's answer" "$size bytes > 262144"; fi
expect_contains "the cut listing says so (X-Ward-Truncated)" "$(tr -d '\r' <"$SERVE_TMP/lh")" "X-Ward-Truncated: 1"
n=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$SERVE_TMP/list" 2>&1)
if [ "${n:-0}" -gt 50 ] 2>/dev/null && [ "$n" -lt 2000 ]; then pass "the cut listing is JSON with the first entries ($n)"; else
	fail "the cut listing" "$n"; fi
r=$(http POST "/sessions/$SID/exec" --data-binary '{"command": "mkdir small; touch small/a small/b"}')
curl -s -D "$SERVE_TMP/lh2" -o /dev/null --max-time 30 "$URL/sessions/$SID/files/small"
expect_not_contains "a small listing is not marked" "$(cat "$SERVE_TMP/lh2")" "X-Ward-Truncated"
http DELETE "/sessions/$SID" >/dev/null

# ---- 7. pid reuse inside the sandbox: the pid names the newest process
new_session '{"ttl_s": 120}'
http POST "/sessions/$SID/exec" --data-binary "{\"command\": \"nohup sleep $M >/dev/null 2>&1 & echo ok\"}" >/dev/null
wait_for markers_up "$M"
P1=$(pid1_of "$M")
r=$(http POST "/sessions/$SID/exec" --data-binary '{"command": "echo old", "background": true}')
A=$(jget "$(body_of "$r")" 'd["pid"]')
wait_proc_exited "$SID" "$A" >/dev/null
# the session forks each exec's process ahead, after the last exec: wait
# for that one (the session counts PID 1, the marker and it)
armed() { [ "$(jg "$(body_of "$(http GET "/sessions/$SID")")" 'd["usage"]["pids"]')" = 3 ]; }
wait_for armed || fail "the next exec's process is forked ahead" "$(http GET "/sessions/$SID")"
# the sandbox's next pid is A again (host root sets its PID namespace's
# ns_last_pid from inside it; nsenter's own child takes a pid first)
nsenter -t "$P1" -p -- /bin/sh -c "echo $((A - 1)) > /proc/sys/kernel/ns_last_pid"
# the process forked before the write goes to an exec of `true`; the next
# one, forked after it, gets pid A
http POST "/sessions/$SID/exec" --data-binary '{"argv": ["true"]}' >/dev/null
r=$(http POST "/sessions/$SID/exec" --data-binary "{\"command\": \"echo new; exec sleep $((M + 1))\", \"background\": true}")
B=$(jget "$(body_of "$r")" 'd["pid"]')
expect_eq "the new process got the old one's pid" "$A" "$B"
wait_for markers_up $((M + 1))
out=$(curl -s --max-time 20 "$URL/sessions/$SID/processes/$B/output")
expect_contains "its output is the new process's" "$out" 'new'
expect_not_contains "not the exited one's" "$out" 'old'
r=$(http POST "/sessions/$SID/processes/$B/signal" --data-binary '{"signal": "KILL"}')
expect_eq "a signal reaches the new process (not ESRCH from the old record)" 204 "$(code_of "$r")"
wait_for markers_gone $((M + 1))
expect_eq "the new process is gone" "" "$(marker_pids $((M + 1)))"
r=$(http GET "/sessions/$SID/processes")
expect_eq "the pid is listed once" 1 "$(jg "$(body_of "$r")" 'len([p for p in d if p["pid"]=='"$B"'])')"
http DELETE "/sessions/$SID" >/dev/null
