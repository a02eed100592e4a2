#!/bin/bash
# ward serve: a paused session holds no thread of ward's (issue 32's "a
# paused sandbox holds no CPU and no ward thread"; session_freeze.c).
# Sessions each with a background process reading a stdin pipe are paused:
# the server's threads (its own /proc/PID/task) are back to what they were
# before the sessions; what a process wrote before the pause is read while
# paused, stdin written while paused is taken; resumed, every process goes
# on, reads it, and its output is complete; the seccomp listener is back
# before they go on (a fatal call right after the resume ends its process
# as signal 31, where unheard it would hang).  A session with an egress
# allow-list holds no proxy thread paused, and its proxy serves again
# resumed.  Every process is bounded by its session's ttl_s and its own
# timeout_s.
. "$(dirname "$0")/lib.bash"
. "$ROOT/tests/egress.bash"

egress_fixture_served "$SERVE_TMP/fx" || exit 0
H=$EG_HTTP

N=4
start_server pausethr --egress-allow "pypi.test:$H" --egress-resolve pypi.test:127.0.0.1 || exit 0
threads() { ls "/proc/$SRV_PID/task" | wc -l; }
sess_threads() { cat /proc/"$SRV_PID"/task/*/comm 2>/dev/null | grep -c '^ward-sess' || true; }
out_of() { # its stdout so far: the data of the output's NDJSON stdout events
	curl -s --max-time 10 "$URL/sessions/$1/processes/$2/output" | python3 -c '
import json, sys
print("".join(e.get("data", "") for e in map(json.loads, filter(str.strip, sys.stdin)) if e.get("stream") == "stdout"), end="")'
}
has_out() { [[ "$(out_of "$1" "$2")" == *"$3"* ]]; }

# a session made and ended first: what the server starts once (its
# workers, pools) is in the baseline, nothing of a session's
r=$(http POST /sessions --data-binary '{"ttl_s": 60}')
W=$(jget "$(body_of "$r")" 'd["id"]')
http POST "/sessions/$W/exec" --data-binary '{"command": "true"}' >/dev/null
http DELETE "/sessions/$W" >/dev/null
base=$(threads)

declare -a S P
for i in $(seq $N); do # the last one with an egress allow-list: its proxy's thread too
	net=
	[ "$i" = $N ] && net=", \"network\": {\"allow\": [\"pypi.test:$H\"]}"
	r=$(http POST /sessions --data-binary "{\"ttl_s\": 120$net}")
	S[i]=$(jget "$(body_of "$r")" 'd["id"]')
	r=$(http POST "/sessions/${S[i]}/exec" --data-binary \
		'{"command": "while read l; do echo got $l; done; echo end", "background": true, "stdin": "pipe", "limits": {"timeout_s": 60}}')
	P[i]=$(jget "$(body_of "$r")" 'd["pid"]')
	http POST "/sessions/${S[i]}/processes/${P[i]}/stdin" --data-binary "one$i
" >/dev/null
done
# in the first session, a process that makes a fatal call once stdin comes
r=$(http POST "/sessions/${S[1]}/exec" --data-binary \
	'{"command": "read l; mount -t tmpfs x /tmp; echo after", "background": true, "stdin": "pipe", "limits": {"timeout_s": 60}}')
FATAL=$(jget "$(body_of "$r")" 'd["pid"]')
for i in $(seq $N); do wait_for has_out "${S[i]}" "${P[i]}" "got one$i"; done
running=$(threads)
echo "# the server's threads: $base before the sessions, $running with $N running ($(sess_threads) of theirs)"
check "running: the sessions hold threads of ward's" test "$running" -gt "$base"

for i in $(seq $N); do
	r=$(http POST "/sessions/${S[i]}/pause")
	[ "$(code_of "$r")" = 204 ] || fail "pause of session $i: 204" "$r"
done
paused=$(threads)
echo "# paused: $paused threads ($(sess_threads) of the sessions')"
expect_eq "$N paused sessions hold no thread: the server's count is back to its baseline" "$base" "$paused"
expect_eq "... and no ward-sess thread is left" 0 "$(sess_threads)"

ok=0
for i in $(seq $N); do
	[[ "$(out_of "${S[i]}" "${P[i]}")" == "got one$i"* ]] && ok=$((ok + 1))
	r=$(http POST "/sessions/${S[i]}/processes/${P[i]}/stdin" --data-binary "two$i
")
	[ "$(code_of "$r")" = 204 ] && ok=$((ok + 1))
done
expect_eq "paused: each output is read, each stdin write taken (204)" $((2 * N)) "$ok"
r=$(http POST "/sessions/${S[1]}/processes/$FATAL/stdin" --data-binary "go
")
expect_eq "paused: stdin for the process that will make a fatal call (204)" 204 "$(code_of "$r")"
expect_eq "paused: still no thread after reads and writes" "$base" "$(threads)"

for i in $(seq $N); do
	r=$(http POST "/sessions/${S[i]}/resume")
	[ "$(code_of "$r")" = 204 ] || fail "resume of session $i: 204" "$r"
done
e=$(wait_proc_exited "${S[1]}" "$FATAL")
expect_eq "resumed: the fatal call right after the resume ends its process (signal 31, 159)" 159 \
	"$(jg "$e" 'd["exit_code"]')"
expect_not_contains "... it never ran on" "$(out_of "${S[1]}" "$FATAL")" after
curl_hi="{\"command\": \"curl -sS http://pypi.test:$H/hi.txt\"}"
expect_eq "resumed: the egress proxy serves again" hello \
	"$(jget "$(body_of "$(http POST "/sessions/${S[N]}/exec" --data-binary "$curl_hi")")" 'd["stdout"].strip()')"
ok=0
for i in $(seq $N); do
	wait_for has_out "${S[i]}" "${P[i]}" "got two$i"
	http POST "/sessions/${S[i]}/processes/${P[i]}/stdin?close=1" --data-binary "three$i
" >/dev/null
	e=$(wait_proc_exited "${S[i]}" "${P[i]}")
	o=$(out_of "${S[i]}" "${P[i]}")
	if [ "$o" = "got one$i
got two$i
got three$i
end" ] && [ "$(jg "$e" 'd["exit_code"]')" = 0 ]; then ok=$((ok + 1)); else
		echo "# session $i: output '$o', entry $e"; fi
done
expect_eq "resumed: every process read what was written while paused, its output complete, exit 0" "$N" "$ok"

# paused again and destroyed: nothing of the sessions is left
for i in $(seq $N); do
	http POST "/sessions/${S[i]}/exec" --data-binary '{"command": "sleep 3019", "background": true}' >/dev/null
	http POST "/sessions/${S[i]}/pause" >/dev/null
done
expect_eq "paused with a new process each: no thread" 0 "$(sess_threads)"
for i in $(seq $N); do http DELETE "/sessions/${S[i]}" >/dev/null; done
wait_for markers_gone 3019
expect_eq "paused sessions deleted: their processes are gone" "" "$(marker_pids 3019)"
expect_eq "... and the server's threads are its baseline" "$base" "$(threads)"
stop_checked pausethr
