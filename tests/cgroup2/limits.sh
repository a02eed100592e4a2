#!/bin/bash
# tests/cgroup2/limits.sh — limits through cgroup v2 (SPEC §3 "Limits"), run
# as root in the root cgroup of a pure-v2 guest (tests/run-vm cgroup2): the
# same checks as tests/e2e/cgroup_v1.sh, kept few because every exec in the
# emulated guest costs ~50 ms.  Attacks are capped even when nothing is
# enforced.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
T=$(mktemp -d /tmp/ward-test.XXXXXX); trap 'rm -rf "$T"' EXIT
chmod 0755 "$T"
CG=$HELPERS/cgtool
for h in cgtool probe_forks probe_mem probe_spin probe_tcpmem; do
	[ -x "$HELPERS/$h" ] || { fail "cgroup2: helper $h built" "run make helpers"; exit 0; }
done
PROBE=$("$CG" probe 2>&1)
if ! printf '%s\n' "$PROBE" | grep -qx 'version=2'; then
	pass "cgroup2: skipped, this host is not cgroup v2 (run it with tests/run-vm cgroup2)"
	exit 0
fi
wr() { OUT=$(timeout -k 2 "${WT:-60}" "$WARD" run "$@" 2>"$T/.err" </dev/null); RC=$?; ERR=$(cat "$T/.err"); }
ct() { OUT=$(timeout -k 2 "${WT:-60}" "$CG" "$@" 2>"$T/.err" </dev/null); RC=$?; ERR=$(cat "$T/.err"); }
runs() { ls -d /sys/fs/cgroup/ward/ward-[0-9]* 2>/dev/null | wc -l; }

expect_contains "cgroup2: probe finds memory, pids" "$PROBE" "memory=1
pids=1
cpu=1"
expect_contains "cgroup2: root in the root cgroup uses /sys/fs/cgroup/ward" "$PROBE" "where=/sys/fs/cgroup/ward"
expect_eq "cgroup2: controllers enabled below ward/" "memory pids" \
	"$(tr ' ' '\n' </sys/fs/cgroup/ward/cgroup.subtree_control | grep -x 'memory\|pids' | sort | tr '\n' ' ' | sed 's/ $//')"
expect_eq "cgroup2: no swap for anything below ward/" 0 "$(cat /sys/fs/cgroup/ward/memory.swap.max)"

# The run cgroup's own files.
ct run -m 64 -p 20 -- /bin/sh -c 'd=/sys/fs/cgroup$(sed -n "s/^0:://p" /proc/self/cgroup); cat $d/memory.max $d/pids.max'
expect_eq "cgroup2: memory.max and pids.max set" "67108864 20" "$(printf '%s\n' "$OUT" | grep -v '^cgtool:' | tr '\n' ' ' | sed 's/ $//')"

# Memory: OOM seen through memory.events, peak through memory.peak.
ct run -m 64 -p 20 -- "$HELPERS/probe_mem" 1024
expect_eq "cgroup2: cgtool memory bomb exit 137" 137 "$RC"
expect_contains "cgroup2: cgtool sees oom_kill" "$OUT" "oom=1"
peak=$(printf '%s\n' "$OUT" | sed -n 's/.* peak=\([0-9]*\).*/\1/p')
if [ -n "$peak" ] && [ "$peak" -gt $((32 << 20)) ] && [ "$peak" -le $((64 << 20)) ]; then
	pass "cgroup2: memory.peak near the limit ($peak)"
else fail "cgroup2: memory.peak near the limit" "out=[$OUT]"; fi
wr --json --timeout 60 --memory 64 --ro-bind "$HELPERS:/h" -- /h/probe_mem 1024
expect_eq "cgroup2: ward --memory 64 bomb exits 137" 137 "$RC"
expect_eq "cgroup2: ward memory bomb status" memory "$(jg "$OUT" 'd["status"]')"
expect_eq "cgroup2: ward memory bomb oom_killed" true "$(jg "$OUT" 'd["oom_killed"]')"
expect_eq "cgroup2: ward enforced.memory" cgroup-v2 "$(jg "$OUT" 'd["enforced"]["memory"]')"

# Pids.
wr --json --timeout 60 --pids 20 --ro-bind "$HELPERS:/h" -- /h/probe_forks 500
k=$(jg "$OUT" 'd["stdout"]' | sed -n 's/^forks=\([0-9]*\).*/\1/p')
if [ -n "$k" ] && [ "$k" -lt 20 ]; then pass "cgroup2: ward --pids 20 stops forks at $k"
else fail "cgroup2: ward --pids 20 stops forks" "rc=$RC out=[$(printf %s "$OUT" | head -c 300)] err=[$ERR]"; fi
expect_eq "cgroup2: ward enforced.pids" cgroup-v2 "$(jg "$OUT" 'd["enforced"]["pids"]')"

# CPU: cpu.stat usage_usec, polled.
t0=$(date +%s%N)
wr --json --cpu 1 --timeout 30 --ro-bind "$HELPERS:/h" -- /h/probe_spin 30
ms=$((($(date +%s%N) - t0) / 1000000))
expect_eq "cgroup2: ward --cpu 1 burner exits 124" 124 "$RC"
# under 20 s, not the 30 s wall limit: a generous bound in an emulated guest
if [ "$ms" -lt 20000 ]; then pass "cgroup2: ward --cpu 1 stops the burner after ~1 s (${ms} ms)"
else fail "cgroup2: ward --cpu 1 stops the burner after ~1 s" "${ms} ms"; fi
expect_eq "cgroup2: ward enforced.cpu" cgroup-v2 "$(jg "$OUT" 'd["enforced"]["cpu"]')"

# Socket buffers (TCP on the sandbox's loopback) count against memory.max
# on v2 by default (tests/e2e/tcp_memory.sh has the v1 side): 8 connections
# whose receivers never read, at most 48 MiB queued, under --memory 16.
# Either the sends stop near 16 MiB, or the charge makes the cgroup OOM —
# bounded both ways; never all 48 MiB.
wr --json --timeout 60 --net loopback --memory 16 --ro-bind "$HELPERS:/h" -- /h/probe_tcpmem 8 48 4096
expect_eq "cgroup2: ward enforced.tcp_memory" cgroup-v2 "$(jg "$OUT" 'd["enforced"]["tcp_memory"]')"
res=$(jg "$OUT" 'd["stdout"]')
q=$(printf '%s' "$res" | sed -n 's/^queued=\([0-9]*\) .*/\1/p')
if { [ -n "$q" ] && [ "$q" -lt 24 ]; } || [ "$(jg "$OUT" 'd["status"]')" = memory ]; then
	pass "cgroup2: loopback TCP buffers bounded by --memory 16 (status $(jg "$OUT" 'd["status"]'), $res)"
else fail "cgroup2: loopback TCP buffers bounded by --memory 16" "rc=$RC out=[$(printf %s "$OUT" | head -c 300)] err=[$ERR]"; fi

# cg_destroy kills what outlives the command (cgroup.kill; no PID
# namespace under cgtool).
tag=$((RANDOM + 1000))
ct run -- /bin/sh -c "sleep 77$tag & sleep 77$tag & sleep 77$tag & exit 0"
expect_eq "cgroup2: cgtool run with daemons returns the command's status" 0 "$RC"
sleep 0.3
expect_eq "cgroup2: cg_destroy killed the daemons" 0 "$(ps -eo args | grep -c "^sleep 77$tag\$")"
# The same without cgroup.kill (kernels before 5.14): the pidfd kill loop.
OUT=$(CGTOOL_NO_CGKILL=1 timeout -k 2 60 "$CG" run -- /bin/sh -c "sleep 76$tag & sleep 76$tag & sleep 76$tag & exit 0" 2>&1); RC=$?
expect_eq "cgroup2: without cgroup.kill: run returns the command's status" 0 "$RC"
sleep 0.3
expect_eq "cgroup2: without cgroup.kill: the kill loop killed the daemons" 0 "$(ps -eo args | grep -c "^sleep 76$tag\$")"

# Threads and cost.
WT=120 ct threads 4 10
expect_contains "cgroup2: 40 cycles from 4 threads, no failure" "$OUT" "failed=0"
WT=120 ct bench 50
us=$(printf '%s\n' "$OUT" | sed -n 's/.* total_us=\([0-9.]*\).*/\1/p')
if [ -n "$us" ]; then pass "cgroup2: create+attach+destroy in the emulated guest ($(printf '%s' "$OUT" | sed 's/^cgtool: bench //'))"
else fail "cgroup2: bench" "out=[$OUT] err=[$ERR]"; fi

# Concurrent ward runs.
: >"$T/conc"
for i in $(seq 8); do (wr --timeout 60 -- /bin/true; echo "$RC" >>"$T/conc") & done
wait
expect_eq "cgroup2: 8 concurrent ward runs all exit 0" 8 "$(grep -cx 0 "$T/conc")"

# The guest is ours alone: nothing at all may be left.
expect_eq "cgroup2: no run cgroup left in /sys/fs/cgroup/ward" 0 "$(runs)"
