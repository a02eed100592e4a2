#!/bin/bash
# cgroup v1: a process parked in each kept cgroup (src/sandbox/cgroup_park.c)
# clones every next sandbox's PID 1 there, so a fresh POST /exec moves no
# process into a cgroup on its path (each move may wait for an RCU grace
# period).  What must hold: fresh runs after the first move nothing
# (ward_cgroup_moves_total) and are born from the parked process; each kept
# cgroup holds exactly one process, ward-parked, the server's child, in every
# hierarchy, the same one run after run, with pids.max the limit plus one;
# the sandbox never sees it in its counts: its pids limit is exact (it can
# fork what the limit allows, no more), a session's pids count leaves it out,
# the kill of what a run left spares it; and no parked process outlives the
# server, stopped or killed.
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

# While a sandbox runs: the parked process is still there, pids.max is the
# limit plus one.  (The sandbox's cgroup: the one of the server's that lists
# another process too.)
post_exec '{"argv":["sleep","3"],"limits":{"pids":9}}' >/dev/null &
runner=$!
running() {
	local c
	for c in $(server_cgs); do
		[ "$(procs_of "$MEM" "$c" | grep -c .)" -ge 2 ] && { echo "$c"; return 0; }
	done
	return 1
}
wait_for running >/dev/null
c=$(running)
expect_eq "cgroup parked: a running sandbox's cgroup has pids.max at its limit + 1" 10 "$(cat "$PIDS/ward/$c/pids.max" 2>/dev/null)"
n=0
for p in $(procs_of "$PIDS" "$c"); do [ "$(comm_of "$p")" = ward-parked ] && n=$((n + 1)); done
expect_eq "cgroup parked: ... and the parked process in it, one" 1 "$n"
wait "$runner"
wait_for settled
same=""
for c in $(server_cgs); do same="$same $(procs_of "$MEM" "$c")"; done
expect_eq "cgroup parked: the same parked processes after more runs (none made again)" \
	"$(printf '%s\n' $parked | sort -n | tr '\n' ' ')" "$(printf '%s\n' $same | sort -n | tr '\n' ' ')"

# A session's pids count leaves it out: once its PID 1 and the process it
# arms for its first exec are up (its cgroup, the one with cgroups beneath
# it, counts 3 with the parked one), it reports 2.
wait_for settled
r=$(http POST /sessions -H 'Content-Type: application/json' --data-binary '{}')
sid=$(jg "$(body_of "$r")" 'd["id"]')
sess_cg() {
	local c
	for c in $(server_cgs); do
		[ -n "$(find "$PIDS/ward/$c" -mindepth 1 -maxdepth 1 -type d | head -1)" ] && { echo "$c"; return 0; }
	done
	return 1
}
armed() { local c; c=$(sess_cg) && [ "$(cat "$PIDS/ward/$c/pids.current")" = 3 ]; }
wait_for armed
u=$(body_of "$(http GET "/sessions/$sid")")
expect_eq "cgroup parked: a session with PID 1 and an armed exec counts 2 processes, not the parked one" 2 \
	"$(jg "$u" 'd["usage"]["pids"]')"
http DELETE "/sessions/$sid" >/dev/null

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
