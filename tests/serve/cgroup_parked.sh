#!/bin/bash
# cgroup v1: a process parked in each kept cgroup (src/sandbox/cgroup_park.c)
# clones the next sandbox's PID 1 there, so a fresh POST /exec moves no
# process into a cgroup on its path (each move may wait for an RCU grace
# period).  What must hold: fresh runs after the first move nothing
# (ward_cgroup_moves_total) and are born from the parked process; each idle
# kept cgroup holds exactly one process, ward-parked, the server's child, in
# every hierarchy; while it is parked the cgroup's pids.max is the limit plus
# one, and back at the limit while the sandbox runs, with the parked process
# gone from it; the sandbox's pids limit is exact (it can fork what the limit
# allows, no more); and no parked process outlives the server, stopped or
# killed.
. "$(dirname "$0")/lib.bash"

if [ "$(stat -f -c %T /sys/fs/cgroup)" = cgroup2fs ]; then
	echo "SKIP: cgroup_parked: cgroup v2 clones PID 1 into its cgroup (CLONE_INTO_CGROUP): nothing is parked"
	exit 0
fi
MEM=$(awk '$9 == "cgroup" && $NF ~ /(^|,)memory(,|$)/ {print $5; exit}' /proc/self/mountinfo)
PIDS=$(awk '$9 == "cgroup" && $NF ~ /(^|,)pids(,|$)/ {print $5; exit}' /proc/self/mountinfo)
if [ ! -d "$MEM/ward" ] || [ ! -d "$PIDS/ward" ]; then
	echo "SKIP: cgroup_parked: no memory and pids cgroup v1 hierarchies with ward/ here"
	exit 0
fi
run() { body_of "$(post_exec "$1")"; }
settled() { [ "$(metric ward_cgroups_idle)" -ge 1 ] 2>/dev/null; }
moves() { metric ward_cgroup_moves_total; }
born() { metric 'ward_cgroup_parked_total{event="born"}'; }
# the server's kept cgroups (directory names), one a line
server_cgs() { find "$MEM/ward" -maxdepth 1 -name "ward-$SRV_PID-*" -printf '%f\n' | sort; }
# parked_in NAME — the pids listed in NAME's cgroup.procs of every hierarchy, one a line
procs_of() { cat "$1/ward/$2/cgroup.procs" 2>/dev/null; }
comm_of() { cat "/proc/$1/comm" 2>/dev/null; }
ppid_of() { awk '/^PPid:/ {print $2}' "/proc/$1/status" 2>/dev/null; }

start_server parked --max-concurrent 1 || exit 0
if [ -z "$(born)" ]; then
	fail "cgroup parked: /metrics has ward_cgroup_parked_total" "$(curl -s "$URL/metrics" | grep -c ward_cgroup)"
	exit 0
fi
run '{"argv":["true"]}' >/dev/null
wait_for settled
m0=$(moves) b0=$(born)
for _ in 1 2 3 4 5; do
	wait_for settled
	r=$(run '{"argv":["true"]}')
	[ "$(jg "$r" 'd["status"]')" = ok ] || fail "cgroup parked: a fresh run works" "$r"
done
wait_for settled
expect_eq "cgroup parked: five fresh runs move no process into a cgroup" "$m0" "$(moves)"
expect_eq "cgroup parked: ... each PID 1 is born from the process parked in its cgroup" "$((b0 + 5))" "$(born)"

# Each idle kept cgroup: one process, ward-parked, the server's child, in
# each hierarchy; pids.max is the limit plus one (the default limit: 64).
cgs=$(server_cgs)
expect_eq "cgroup parked: the server keeps as many cgroups as it says are idle" \
	"$(metric ward_cgroups_idle)" "$(printf '%s\n' "$cgs" | grep -c .)"
bad="" parked=""
for c in $cgs; do
	p=$(procs_of "$MEM" "$c")
	[ "$(printf '%s\n' "$p" | grep -c .)" = 1 ] || bad="$bad $c:memory[$p]"
	[ "$(procs_of "$PIDS" "$c")" = "$p" ] || bad="$bad $c:pids[$(procs_of "$PIDS" "$c")]"
	[ "$(comm_of "$p")" = ward-parked ] || bad="$bad $c:comm[$(comm_of "$p")]"
	[ "$(ppid_of "$p")" = "$SRV_PID" ] || bad="$bad $c:ppid[$(ppid_of "$p")]"
	[ "$(cat "$PIDS/ward/$c/pids.max")" = 65 ] || bad="$bad $c:pids.max[$(cat "$PIDS/ward/$c/pids.max")]"
	parked="$parked $p"
done
expect_eq "cgroup parked: each idle kept cgroup holds one ward-parked process, the server's child, in each hierarchy, pids.max 64 + 1" "" "$bad"

# While a sandbox runs: the parked process is gone, pids.max is the limit.
# (The sandbox's cgroup is the one of the server's that is not idle.)
post_exec '{"argv":["sleep","3"],"limits":{"pids":9}}' >/dev/null &
runner=$!
running() {
	local c
	for c in $(server_cgs); do
		for p in $(procs_of "$MEM" "$c"); do
			[ "$(comm_of "$p")" = ward-parked ] && continue 2
		done
		[ -n "$(procs_of "$MEM" "$c")" ] && { echo "$c"; return 0; }
	done
	return 1
}
wait_for running >/dev/null
c=$(running)
expect_eq "cgroup parked: a running sandbox's cgroup has pids.max at its limit" 9 "$(cat "$PIDS/ward/$c/pids.max" 2>/dev/null)"
left=""
for p in $(procs_of "$PIDS" "$c"); do [ "$(comm_of "$p")" = ward-parked ] && left="$left $p"; done
expect_eq "cgroup parked: ... and no parked process in it" "" "$left"
wait "$runner"

# The pids limit is exact: 8 pids in all, so PID 1 (ward-init), python and
# six children, the seventh refused; as without a parked process.
FORK='import os, time
n = 0
try:
    while n < 40:
        if os.fork() == 0:
            time.sleep(2); os._exit(0)
        n += 1
except OSError:
    pass
print("forked", n)'
wait_for settled
r=$(run "$(python3 -c 'import json,sys; print(json.dumps({"argv":["python3","-c",sys.argv[1]],"limits":{"pids":8}}))' "$FORK")")
expect_eq "cgroup parked: a sandbox limited to 8 pids forks 6 children beside PID 1 and python" "forked 6" \
	"$(jg "$r" 'd["stdout"].strip()')"

# Stopped: no parked process and no cgroup of the server is left.
stop_server "$SRV_PID"
alive=""
for p in $parked; do [ "$(comm_of "$p")" = ward-parked ] && alive="$alive $p"; done
expect_eq "cgroup parked: a stopped server leaves no parked process" "" "$alive"
expect_eq "cgroup parked: ... and no cgroup" "" "$(server_cgs)"

# Killed (SIGKILL: no cleanup of its own): its parked processes die with it.
start_server parked-killed --max-concurrent 1 || exit 0
run '{"argv":["true"]}' >/dev/null
wait_for settled
parked=""
for c in $(server_cgs); do parked="$parked $(procs_of "$MEM" "$c")"; done
expect_eq "cgroup parked: a new server parks a process" 1 "$(printf '%s\n' $parked | grep -c .)"
kill -KILL "$SRV_PID"
wait "$SRV_PID" 2>/dev/null
parked_gone() {
	local p
	for p in $parked; do [ "$(comm_of "$p")" = ward-parked ] && return 1; done
	return 0
}
if wait_for parked_gone; then
	pass "cgroup parked: a killed server's parked processes die with it (PR_SET_PDEATHSIG)"
else
	fail "cgroup parked: a killed server's parked processes die with it (PR_SET_PDEATHSIG)" "$parked"
fi
# (its cgroups, empty now, are swept by the next ward after 30 s: cgroup_probe.c)
