#!/bin/bash
# review3 proof (high): a pause raced with a DELETE of the same session
# leaves its processes frozen for good and hangs the server's session
# sweep.  ward_session_freeze checks that the session is not killed, then
# parks the armer (a join: the window is now the armer's whole exec_arm)
# and only then freezes the cgroup; the DELETE's ward_session_kill in that
# window SIGKILLs PID 1, sees nothing frozen yet and thaws nothing; the
# freeze then freezes the dying tree (v1: a frozen task dies only once
# thawed).  ward_session_destroy thaws a frozen session only through
# ward_session_kill, which does nothing the second time: it waits for PID 1
# forever (wait4, on the thread that destroys: the main thread's sweep),
# so no doomed session of any key is destroyed again (their PID 1s stay
# zombies, their armers run, their uid slots and cgroups are held) and the
# server's stop hangs.  Rounds (up to 60): a session with a chatty process
# and a follow stream; pause, exec, stdin and resume sent at once, a
# DELETE among them.  Prints SHOWN: when a sandbox's PID 1 is left frozen
# (D, in a FROZEN freezer cgroup) with every session gone, or session
# threads outlive their sessions.  Bounded: ttl_s 60, timeout_s 20, curls
# --max-time 20; the frozen tree is thawed (and so dies) at the end.
. "$(dirname "$0")/../serve/lib.bash"
start_server race || exit 0
sess_threads() { cat /proc/"$SRV_PID"/task/*/comm 2>/dev/null | grep -c '^ward-sess' || true; }
c() { curl -s --max-time 20 "$@"; }
# the server's sandboxes' PID 1s in a FROZEN freezer cgroup: "pid cgroup"
frozen_inits() {
	local ip fz
	for ip in $(pgrep -P "$SRV_PID" -x ward-init); do
		fz=$(awk -F: '$2 == "freezer" {print $3}' "/proc/$ip/cgroup" 2>/dev/null)
		[ -n "$fz" ] && [ "$fz" != / ] && [ "$(cat "/sys/fs/cgroup/freezer$fz/freezer.state" 2>/dev/null)" = FROZEN ] &&
			echo "$ip $fz"
	done
}
for i in $(seq 60); do
	sid=$(jg "$(c -XPOST "$URL/sessions" -d '{"ttl_s": 60}')" 'd["id"]')
	[ -n "$sid" ] || { echo "SHOWN: round $i: no session made (the server: $(kill -0 "$SRV_PID" 2>&1 && echo alive))"; exit 0; }
	p=$(jg "$(c -XPOST "$URL/sessions/$sid/exec" -d '{"background": true, "limits": {"timeout_s": 20},
		"command": "i=0; while [ $i -lt 100000 ]; do echo $i; i=$((i+1)); done; cat"}')" 'd["pid"]')
	c -N "$URL/sessions/$sid/processes/$p/output?follow=1" >/dev/null &
	f=$!
	c -XPOST "$URL/sessions/$sid/pause" >/dev/null &
	a=$!
	c -XPOST "$URL/sessions/$sid/exec" -d '{"command": "echo hi"}' >/dev/null &
	b=$!
	c -XPOST "$URL/sessions/$sid/processes/$p/stdin" --data-binary 'x' >/dev/null &
	d=$!
	c -XPOST "$URL/sessions/$sid/resume" >/dev/null &
	e=$!
	[ $((i % 2)) = 0 ] && sleep 0.0$((i % 7))
	c -XDELETE "$URL/sessions/$sid" >/dev/null
	c -XPOST "$URL/sessions/$sid/resume" >/dev/null
	wait $a $b $d $e
	kill $f 2>/dev/null
	wait $f 2>/dev/null
	kill -0 "$SRV_PID" 2>/dev/null || { echo "SHOWN: the server died in round $i: $(tail -c 400 "$SRV_LOG")"; exit 0; }
	[ $((i % 10)) = 0 ] && [ "$(frozen_inits | wc -l)" -gt 0 ] && break
done
for _ in $(seq 50); do [ "$(sess_threads)" = 0 ] && break; sleep 0.2; done
left=$(sess_threads)
live=$(curl -s --max-time 10 "$URL/sessions")
frozen=$(frozen_inits)
stuck=$(for t in /proc/"$SRV_PID"/task/*; do [ "$(cat "$t/wchan" 2>/dev/null)" = do_wait ] && echo "${t##*/}$([ "${t##*/}" = "$SRV_PID" ] && echo ' (the main thread)')"; done)
echo "after $i raced rounds: sessions listed $live; ward-sess threads left: $left; PID 1s left frozen: ${frozen:-none}; server threads in wait4: ${stuck:-none}"
if [ -n "$frozen" ] || [ "$left" != 0 ]; then
	msg="with every session deleted, $left session threads outlive their sessions"
	[ -n "$frozen" ] && msg="$msg; a sandbox's PID 1 stays frozen: $frozen"
	[ -n "$stuck" ] && msg="$msg; the server's thread $stuck waits for a PID 1 for good (no session is destroyed any more)"
	echo "SHOWN: $msg"
else
	echo "nothing shown"
fi
for f in $(printf '%s\n' "$frozen" | awk '{print $2}'); do # the frozen trees thawed: they die, the server's wait ends
	echo THAWED >"/sys/fs/cgroup/freezer$f/freezer.state" 2>/dev/null
done
