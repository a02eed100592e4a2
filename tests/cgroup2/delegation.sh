#!/bin/bash
# tests/cgroup2/delegation.sh — an unprivileged user (uid 65534) with a
# delegated cgroup v2 subtree (chowned to it, as systemd's Delegate=yes
# does): ward moves itself into <own>/ward-supervisor ("no internal
# processes"), enables the controllers and makes its run cgroups beside it.
# Without delegation it says why, and ward run falls back to rlimits and
# says so.  Runs in the pure-v2 guest (tests/run-vm cgroup2).
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
T=$(mktemp -d /tmp/ward-test.XXXXXX)
CG=$HELPERS/cgtool
[ -x "$CG" ] || { fail "cgroup2-deleg: helper cgtool built" "run make helpers"; exit 0; }
if ! "$CG" probe 2>/dev/null | grep -qx 'version=2' || [ "$(id -u)" != 0 ]; then
	pass "cgroup2-deleg: skipped, needs root on a cgroup v2 host (run it with tests/run-vm cgroup2)"
	exit 0
fi
chmod 0777 "$T"
D=/sys/fs/cgroup/deleg-$$ N=/sys/fs/cgroup/notmine-$$ B=/sys/fs/cgroup/busy-$$ S=/sys/fs/cgroup/deleg-serve-$$
BG= SRV=
cleanup() {
	[ -n "$BG" ] && kill "$BG" 2>/dev/null
	[ -n "$SRV" ] && kill -KILL "$SRV" 2>/dev/null && sleep 0.5
	for d in "$D"/ward-* "$D" "$N" "$B"/ward-supervisor "$B" "$S"/ward-* "$S"; do [ -d "$d" ] && rmdir "$d" 2>/dev/null; done
	rm -rf "$T"
}
trap cleanup EXIT
mkdir "$D" "$N" "$B" "$S"
for d in "$D" "$B" "$S"; do chown 65534:65534 "$d" "$d"/cgroup.procs "$d"/cgroup.subtree_control "$d"/cgroup.threads; done

# as_nobody CG ARGS... — run ARGS as uid 65534, alone in cgroup CG ("" =
# stay where we are); stdout in OUT, stderr in ERR, status in RC.
as_nobody() {
	local cg=$1; shift
	OUT=$(timeout -k 2 60 /bin/sh -c '[ -z "$0" ] || echo $$ >"$0/cgroup.procs" || exit 99
exec setpriv --reuid=65534 --regid=65534 --clear-groups "$@"' "$cg" "$@" 2>"$T/err" </dev/null)
	RC=$?
	ERR=$(cat "$T/err")
}

as_nobody "$D" "$CG" probe
expect_contains "cgroup2-deleg: probe uses the delegated cgroup" "$OUT" "where=$D"
expect_contains "cgroup2-deleg: memory and pids available" "$OUT" "memory=1
pids=1"
expect_contains "cgroup2-deleg: ward moved itself into a leaf" "$OUT" "self=${D#/sys/fs/cgroup}/ward-supervisor"
expect_eq "cgroup2-deleg: controllers enabled in the delegated cgroup" "memory pids" \
	"$(tr ' ' '\n' <"$D"/cgroup.subtree_control | grep -x 'memory\|pids' | sort | tr '\n' ' ' | sed 's/ $//')"

# From now on the delegated cgroup has controllers enabled, so no process
# may join it; later wards start in the leaf (as a second ward process of
# the same service would) and must find their place from there.
as_nobody "$D/ward-supervisor" "$CG" run -m 64 -p 20 -- /bin/sh -c 'sed -n "s/^0:://p" /proc/self/cgroup; exec '"$HELPERS"'/probe_mem 1024'
expect_eq "cgroup2-deleg: cgtool memory bomb as uid 65534 exits 137" 137 "$RC"
expect_contains "cgroup2-deleg: the run cgroup is a sibling of the leaf" "$OUT" "${D#/sys/fs/cgroup}/ward-"
expect_contains "cgroup2-deleg: OOM seen" "$OUT" "oom=1"

as_nobody "$D/ward-supervisor" "$WARD" run --json --memory 64 --ro-bind "$HELPERS:/h" -- /h/probe_mem 1024
expect_eq "cgroup2-deleg: ward run as uid 65534: memory bomb exits 137" 137 "$RC"
expect_contains "cgroup2-deleg: ward run as uid 65534: enforced by cgroup v2" "$OUT" '"memory":"cgroup-v2"'
expect_contains "cgroup2-deleg: ward run as uid 65534: oom_killed" "$OUT" '"oom_killed":true'
expect_eq "cgroup2-deleg: no run cgroup left in the delegated subtree" "" "$(ls -d "$D"/ward-[0-9]* 2>/dev/null)"

# ward serve alone in a delegated cgroup (systemd's Delegate=yes with
# User=): it moves into the leaf before it forks its spawner helpers, so
# they are no "internal processes" and its runs get cgroup limits.
/bin/sh -c 'echo $$ >"$0/cgroup.procs" || exit 99
exec setpriv --reuid=65534 --regid=65534 --clear-groups "$1" serve --listen 127.0.0.1:0 --log "$2"' \
	"$S" "$WARD" "$T/serve.log" </dev/null >"$T/serve.out" 2>&1 &
SRV=$!
URL=$(listening_addr "$T/serve.log" "$SRV")
if [ -z "$URL" ]; then
	fail "cgroup2-deleg: ward serve starts as uid 65534 in a delegated cgroup" "$(head -c 600 "$T/serve.out" "$T/serve.log")"
else
	R=$(curl -s --max-time 60 --data-binary '{"argv": ["true"], "limits": {"memory_mb": 64}}' "http://$URL/exec")
	expect_contains "cgroup2-deleg: ward serve as uid 65534: its run is limited by cgroup v2" "$R" '"memory":"cgroup-v2"'
	expect_eq "cgroup2-deleg: ward serve moved into the leaf" "${S#/sys/fs/cgroup}/ward-supervisor" \
		"$(sed -n 's/^0:://p' /proc/"$SRV"/cgroup)"
	helpers=$(ps -o pid=,comm= --ppid "$SRV" | awk '$2 == "ward-spawner" {print $1}')
	where=""
	for h in $helpers; do where="$where $(sed -n 's/^0:://p' /proc/"$h"/cgroup)"; done
	check "cgroup2-deleg: ward serve has spawner helpers" test -n "$helpers"
	expect_eq "cgroup2-deleg: ... and they live in the leaf too" "" \
		"$(tr ' ' '\n' <<<"$where" | grep -v '^$' | grep -vx "${S#/sys/fs/cgroup}/ward-supervisor")"
	kill -TERM "$SRV"
	for _ in $(seq 100); do kill -0 "$SRV" 2>/dev/null || break; sleep 0.1; done
	SRV=
	rmdir "$S"/ward-supervisor "$S" 2>/dev/null
fi

# Not delegated: a root-owned cgroup.
as_nobody "$N" "$CG" probe
expect_contains "cgroup2-deleg: a cgroup not delegated: probe says so" "$OUT" "is not delegated to uid 65534"
as_nobody "$N" "$CG" run -m 64 -- /bin/true
expect_eq "cgroup2-deleg: not delegated: cg_create refuses (cgtool exit 125)" 125 "$RC"
expect_contains "cgroup2-deleg: not delegated: the message names the fix" "$ERR" "Delegate=yes"
as_nobody "$N" "$WARD" run --json --memory 64 -- /bin/true
expect_eq "cgroup2-deleg: not delegated: ward run still runs" 0 "$RC"
expect_contains "cgroup2-deleg: not delegated: the result says rlimit" "$OUT" '"memory":"rlimit"'

# In the root cgroup, unprivileged: no cgroups, a clear reason.
as_nobody "" "$CG" run -m 64 -- /bin/true
expect_eq "cgroup2-deleg: uid 65534 in the root cgroup: cg_create refuses" 125 "$RC"
expect_contains "cgroup2-deleg: uid 65534 in the root cgroup: the reason" "$ERR" "/sys/fs/cgroup/ward"

# Delegated, but another process shares it: "no internal processes" cannot
# be kept by moving only ourselves.
OUT=$(timeout -k 2 60 /bin/sh -c 'echo $$ >"$0/cgroup.procs"; sleep 30 & echo $! >"$1/bg"
exec setpriv --reuid=65534 --regid=65534 --clear-groups "$2" probe' "$B" "$T" "$CG" 2>&1 </dev/null)
BG=$(cat "$T/bg" 2>/dev/null)
expect_contains "cgroup2-deleg: a shared cgroup: probe says so" "$OUT" "holds other processes"
if [ -n "$BG" ]; then kill "$BG" 2>/dev/null; BG=; fi

# Everything ward made in the delegated subtree is gone but the leaf.
if rmdir "$D/ward-supervisor" "$D" 2>"$T/err"; then pass "cgroup2-deleg: the delegated subtree holds nothing else"
else fail "cgroup2-deleg: the delegated subtree holds nothing else" "$(cat "$T/err"; ls "$D")"; fi
exit 0
