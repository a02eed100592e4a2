#!/bin/bash
# tests/e2e/tree_kill.sh — the timeout and the tree kill (SPEC §2, §3):
# when the command ends or times out, every process in the sandbox dies,
# double-forked daemons and SIGTERM-ignorers too; and so when ward itself is
# SIGKILLed.  Leftovers are found on the host by a unique `sleep` argument
# (inspect only; a leak is killed by pid and reported).
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/e2e.inc"
SLOW=1; [ "${WARD_ASAN:-0}" = 1 ] && SLOW=2
# A marker: a sleep length no other process uses; a leaked one ends by itself.
mk() { echo "$((RANDOM % 500 + 100)).$$$RANDOM"; }
now() { date +%s%N; }
# no_leak NAME M... — passes when no `sleep M` is left (after a grace of up
# to 5 s for the kernel to finish the kill); kills leaks by pid.
no_leak() {
	local name=$1 m left=""; shift
	for _ in $(seq 50); do
		left=""; for m in "$@"; do left="$left $(marker_pids "$m")"; done
		[ -z "${left// /}" ] && break
		sleep 0.1
	done
	if [ -z "${left// /}" ]; then pass "$name"
	else
		fail "$name" "left behind: pids$left ($(for p in $left; do tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null; echo -n '; '; done))"
		for p in $left; do kill -9 "$p" 2>/dev/null; done
	fi
}
# within NAME MS START — passes when less than MS (scaled) passed since START.
# within NAME MS START [MIN] — ... and not less than MIN ms (not early).
within() {
	local ms=$(( ($(now) - $3) / 1000000 ))
	if [ "$ms" -lt $(($2 * SLOW)) ] && [ "$ms" -ge "${4:-0}" ]; then pass "$1 (${ms} ms)"
	else fail "$1" "took ${ms} ms, limits ${4:-0}..$(($2 * SLOW))"; fi
}

# Plain timeout: prompt, 124, timed_out.  (Upper bounds are 10x what is
# expected: a loaded machine is slow, and a timeout that did not land would
# take the full sleep.)
t0=$(now)
wr --timeout 0.5 --json -- sleep 10
within "timeout 0.5 of sleep 10 returns within 5 s" 5000 "$t0" 450
expect_eq "timeout: exit 124" 124 "$RC"
expect_eq "timeout: timed_out true" true "$(jg "$OUT" 'd["timed_out"]')"
t0=$(now)
wr --timeout 0.5 -- sleep 10
within "timeout without --json returns within 5 s" 5000 "$t0" 450
expect_eq "timeout without --json: exit 124" 124 "$RC"
# Not early either (the timeout counts the sandbox's setup too: a margin).
wr --timeout 3 -- sleep 1
expect_eq "a command that ends before the timeout: exit 0" 0 "$RC"

# seen M... — inside the sandbox: how many of the `sleep M` processes run.
seen() { local m c=""; for m in "$@"; do c="$c ps -eo args | grep -c '^sleep $m';"; done; echo "$c"; }
# started M... — inside the sandbox: wait (at most 10 s) until a `sleep M`
# runs for each M, instead of sleeping and hoping they did.
started() {
	local m c="k=0; while [ \$k -lt 200 ] && { false"
	for m in "$@"; do c="$c || ! ps -eo args | grep -q '^sleep $m'"; done
	echo "$c; }; do sleep 0.05; k=\$((k + 1)); done;"
}
# ran NAME EXPECTED — the sandbox saw its processes start (so that a
# no_leak pass below means something).
ran() { expect_eq "$1: the processes were running" "$2" "$(printf '%s\n' "$OUT" | grep -v done | tr '\n' ' ' | sed 's/ $//')"; }

# The command exits while a double-forked setsid daemon and a SIGTERM-ignorer
# run: both die, and ward does not wait for them.
M1=$(mk); M2=$(mk); M3=$(mk)
t0=$(now)
wr --timeout 20 --shell "setsid sh -c 'sleep $M1 &' & (trap '' TERM; exec sleep $M2) & (nohup sleep $M3 >/dev/null 2>&1 &); $(started "$M1" "$M2" "$M3") $(seen "$M1" "$M2" "$M3") exit 0"
expect_eq "command with daemons: exit 0" 0 "$RC"
ran "command with daemons" "1 1 1"
within "ward does not wait for daemons" 3000 "$t0"
no_leak "setsid double-forked daemon is gone after the command ends" "$M1"
no_leak "SIGTERM-ignoring process is gone after the command ends" "$M2"
no_leak "nohup'd background process is gone after the command ends" "$M3"
# Same with --json (capture pipes held open by the daemons must not block).
M1=$(mk); M2=$(mk)
t0=$(now)
wr --timeout 20 --json --shell "setsid sh -c 'sleep $M1 &' & (trap '' TERM; exec sleep $M2) & $(started "$M1" "$M2") $(seen "$M1" "$M2") echo done"
expect_eq "--json with daemons holding stdout: status ok" ok "$(jg "$OUT" 'd["status"]')"
expect_eq "--json with daemons: the processes were running" "1 1 done" "$(jg "$OUT" '" ".join(d["stdout"].split())')"
within "--json: ward does not wait for daemons holding the pipes" 3000 "$t0"
no_leak "--json: daemons gone" "$M1" "$M2"

# After a timeout (long enough for the processes to start before it).
M1=$(mk); M2=$(mk); M3=$(mk)
t0=$(now)
wr --timeout 2 --shell "setsid sh -c 'sleep $M1 &'; (trap '' TERM; exec sleep $M2) & $(started "$M1" "$M2") $(seen "$M1" "$M2") trap '' TERM; sleep $M3"
expect_eq "timeout with daemons: exit 124" 124 "$RC"
ran "timeout with daemons" "1 1"
within "timeout with daemons returns within 10 s" 10000 "$t0" 1950
no_leak "after a timeout: setsid daemon gone" "$M1"
no_leak "after a timeout: SIGTERM-ignorer gone" "$M2"
no_leak "after a timeout: the command itself gone" "$M3"

# A process that escapes into its own session and process group and
# respawns itself while being killed.
M1=$(mk)
wr --timeout 2 --shell "setsid sh -c 'trap \"\" TERM HUP INT; while :; do sleep $M1 & wait; done' & $(started "$M1") $(seen "$M1") sleep 10"
expect_eq "respawning daemon: exit 124" 124 "$RC"
ran "respawning daemon" 1
no_leak "respawning SIGTERM-ignoring daemon gone" "$M1"

# A command that closes its stdout and stderr still times out on time.
t0=$(now)
wr --timeout 0.5 --json --shell 'exec >&- 2>&-; sleep 10'
expect_eq "closed stdio: exit 124" 124 "$RC"
within "closed stdio: timeout on time" 5000 "$t0" 450
# A command whose stdio is held by a daemon after it exits: not a timeout.
M1=$(mk)
t0=$(now)
wr --timeout 30 --shell "sleep $M1 & exit 7"
expect_eq "stdio held by a leftover: the command's exit 7" 7 "$RC"
within "stdio held by a leftover: ward returns at once, not at the timeout" 10000 "$t0"
no_leak "stdio held by a leftover: gone" "$M1"

# SIGKILL of ward itself leaves nothing behind.
for json in "" --json; do
	M1=$(mk); M2=$(mk); M3=$(mk)
	timeout -k 2 30 "$WARD" run --timeout 20 $json --shell "sleep $M1 & setsid sh -c 'sleep $M2 &'; (trap '' TERM; exec sleep $M3)" </dev/null >/dev/null 2>&1 &
	wpid=$!
	# timeout(1) is $wpid; ward is its child.
	ward=""
	for _ in $(seq 50); do
		ward=$(cat /proc/$wpid/task/$wpid/children 2>/dev/null | awk '{print $1}')
		[ -n "$ward" ] && [ -n "$(marker_pids "$M3")" ] && [ -n "$(marker_pids "$M2")" ] && break
		sleep 0.1
	done
	if [ -n "$(marker_pids "$M3")" ] && [ -n "$ward" ]; then
		pass "kill -9 ward${json:+ $json}: sandbox was running"
		kill -9 "$ward"
		no_leak "kill -9 ward${json:+ $json}: no sandbox process left" "$M1" "$M2" "$M3"
	else
		fail "kill -9 ward${json:+ $json}: sandbox was running" "no 'sleep $M3' seen (ward=$ward)"
		no_leak "kill -9 ward${json:+ $json}: cleanup" "$M1" "$M2" "$M3"
	fi
	wait "$wpid" 2>/dev/null
	# A SIGKILLed ward cannot clean up: remove its (empty) cgroups ourselves.
	[ -n "$ward" ] && find /sys/fs/cgroup -maxdepth 5 -depth -type d -name "ward-$ward-*" -exec rmdir {} \; 2>/dev/null
done

# SIGTERM / SIGINT to ward: it ends the sandbox too and does not hang.
for sig in TERM INT; do
	M1=$(mk)
	timeout -k 2 30 "$WARD" run --timeout 20 --shell "setsid sh -c 'sleep $M1 &'; sleep $M1" </dev/null >/dev/null 2>&1 &
	wpid=$!
	ward=""
	for _ in $(seq 50); do
		ward=$(cat /proc/$wpid/task/$wpid/children 2>/dev/null | awk '{print $1}')
		[ -n "$ward" ] && [ "$(marker_pids "$M1" | wc -l)" -ge 2 ] && break
		sleep 0.1
	done
	if [ -n "$ward" ] && [ "$(marker_pids "$M1" | wc -l)" -ge 2 ]; then pass "SIG$sig to ward: sandbox was running"
	else fail "SIG$sig to ward: sandbox was running" "no 'sleep $M1' pair seen (ward=$ward)"; fi
	t0=$(now)
	[ -n "$ward" ] && kill -$sig "$ward"
	wait "$wpid"; rc=$?
	within "SIG$sig to ward: it returns promptly" 3000 "$t0"
	if [ "$rc" -ne 0 ]; then pass "SIG$sig to ward: nonzero exit ($rc)"
	else fail "SIG$sig to ward: nonzero exit" "rc=$rc"; fi
	no_leak "SIG$sig to ward: no sandbox process left" "$M1"
	# A signalled ward still removes its cgroups (named ward-PID-... today;
	# if the naming changes this check must follow it).
	left=$(find /sys/fs/cgroup -maxdepth 5 -type d -name "ward-$ward-*" 2>/dev/null | tr '\n' ' ')
	expect_eq "SIG$sig to ward: its cgroups are removed" "" "$left"
	for c in $left; do rmdir "$c" 2>/dev/null; done  # our run's empty leftovers
done
