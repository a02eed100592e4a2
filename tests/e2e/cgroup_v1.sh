#!/bin/bash
# tests/e2e/cgroup_v1.sh — limits through cgroup v1 (SPEC §3 "Limits") on a
# host like CI's: memory, pids, cpuacct mounted separately.  Drives both
# `ward run` and tests/helpers/cgtool (src/sandbox/cgroup.c on its own, with
# no PID namespace to clean up after it).  Every attack is capped even when
# nothing is enforced; every cgroup a run makes must be gone afterwards,
# which is checked by name (ward-<pid>-...) for the pids of our own runs, so
# that other people's runs on this machine do not disturb the count.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
T=$(mktemp -d /tmp/ward-test.XXXXXX); trap 'rm -rf "$T"' EXIT
chmod 0755 "$T"
CG=$HELPERS/cgtool
# cgtool #includes src/sandbox/cgroup*.c: rebuild it when a source is newer.
for f in "$ROOT"/src/sandbox/cgroup*.[ch]; do
	if [ -x "$CG" ] && [ "$CG" -ot "$f" ]; then
		make -s -B -C "$ROOT" build/helpers/cgtool >&2
		break
	fi
done
for h in cgtool probe_forks probe_mem probe_spin; do
	[ -x "$HELPERS/$h" ] || { fail "cgroup-v1: helper $h built" "run make helpers"; exit 0; }
done

if [ "$(id -u)" != 0 ]; then
	pass "cgroup-v1: skipped, cgroup v1 needs root"
	exit 0
fi
PROBE=$("$CG" probe 2>&1)
if ! printf '%s\n' "$PROBE" | grep -qx 'version=1'; then
	pass "cgroup-v1: skipped, this host is not cgroup v1 ($(printf '%s' "$PROBE" | head -1))"
	exit 0
fi
read -r -a PARENTS <<<"$(printf '%s\n' "$PROBE" | sed -n 's/^where=//p')"


# left PID... — how many run cgroups of these ward/cgtool processes exist.
left() {
	local p d n=0
	for p in "$@"; do
		for d in "${PARENTS[@]}"; do
			for x in "$d"/ward-"$p"-*; do [ -e "$x" ] && n=$((n + 1)); done
		done
	done
	echo "$n"
}

# wr ARGS... — ward run with a timeout; OUT, RC, ERR; its pid goes to $T/pids.
wr() {
	OUT=$(timeout -k 2 "${WT:-60}" bash -c 'echo $$ >>"$0"; exec "$1" run "${@:2}"' "$T/pids" "$WARD" "$@" \
		2>"$T/.err" </dev/null)
	RC=$?
	ERR=$(cat "$T/.err")
}
# ct ARGS... — cgtool the same way.
ct() {
	OUT=$(timeout -k 2 "${WT:-60}" bash -c 'echo $$ >>"$0"; exec "$1" "${@:2}"' "$T/pids" "$CG" "$@" \
		2>"$T/.err" </dev/null)
	RC=$?
	ERR=$(cat "$T/.err")
}

# ---- the probe
expect_contains "cgroup-v1: probe finds memory" "$PROBE" "memory=1"
expect_contains "cgroup-v1: probe finds pids" "$PROBE" "pids=1"
expect_contains "cgroup-v1: probe finds cpuacct" "$PROBE" "cpu=1"
expect_eq "cgroup-v1: one parent per hierarchy" 3 "${#PARENTS[@]}"

# ---- the cgroup files themselves: RAM limit, RAM+swap limit equal, pids.max
ct run -m 64 -p 20 -- /bin/sh -c 'p=$(sed -n "s/^[0-9]*:memory://p" /proc/self/cgroup)
q=$(sed -n "s/^[0-9]*:pids://p" /proc/self/cgroup)
cat /sys/fs/cgroup/memory$p/memory.limit_in_bytes /sys/fs/cgroup/memory$p/memory.memsw.limit_in_bytes /sys/fs/cgroup/pids$q/pids.max'
expect_eq "cgroup-v1: memory.limit_in_bytes, memsw and pids.max set" "67108864 67108864 20" \
	"$(printf '%s\n' "$OUT" | grep -v '^cgtool:' | tr '\n' ' ' | sed 's/ $//')"
expect_contains "cgroup-v1: run cgroup named ward-<pid>-<n>-<random>" "$OUT" "name=ward-"

# ---- cgtool: OOM, pids, CPU accounting, without ward's PID namespace
ct run -m 64 -p 20 -- "$HELPERS/probe_mem" 1024
expect_eq "cgroup-v1: cgtool memory bomb exit 137" 137 "$RC"
expect_contains "cgroup-v1: cgtool sees oom_kill" "$OUT" "oom=1"
peak=$(printf '%s\n' "$OUT" | sed -n 's/.* peak=\([0-9]*\).*/\1/p')
if [ -n "$peak" ] && [ "$peak" -gt $((32 << 20)) ] && [ "$peak" -le $((64 << 20)) ]; then
	pass "cgroup-v1: memory peak near the limit ($peak)"
else fail "cgroup-v1: memory peak near the limit" "peak=[$peak] out=[$OUT]"; fi
ct run -p 20 -- "$HELPERS/probe_forks" 200
k=$(printf '%s\n' "$OUT" | sed -n 's/^forks=\([0-9]*\).*/\1/p')
if [ -n "$k" ] && [ "$k" -lt 20 ]; then pass "cgroup-v1: cgtool pids.max 20 stops forks at $k"
else fail "cgroup-v1: cgtool pids.max 20 stops forks" "out=[$OUT] err=[$ERR]"; fi
ct run -c 1 -t 30 -- "$HELPERS/probe_spin" 30
ms=$(printf '%s\n' "$OUT" | sed -n 's/.* wall_ms=\([0-9]*\).*/\1/p')
# (Generous bounds: on a loaded machine 1 s of CPU takes longer than 1 s;
# under 20 s, the 30 s wall limit did not stop it.)
if [ "$RC" = 124 ] && [ -n "$ms" ] && [ "$ms" -lt 20000 ]; then pass "cgroup-v1: cgtool CPU limit 1s kills the burner (${ms} ms)"
else fail "cgroup-v1: cgtool CPU limit 1s kills the burner" "rc=$RC out=[$OUT]"; fi
expect_contains "cgroup-v1: cgtool CPU accounted (user time)" "$OUT" "killed=cpu"

# ---- cg_destroy kills what outlives the command (no PID namespace here)
tag=$((RANDOM + 1000))
t0=$(date +%s%N)
ct run -- /bin/sh -c "for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do sleep 77$tag & done; exit 0"
ms=$((($(date +%s%N) - t0) / 1000000))
expect_eq "cgroup-v1: cgtool run with 20 daemons returns the command's status" 0 "$RC"
sleep 0.2
expect_eq "cgroup-v1: cg_destroy killed the 20 daemons" 0 "$(ps -eo args | grep -c "^sleep 77$tag\$")"
if [ "$ms" -lt 10000 ]; then pass "cgroup-v1: destroy with daemons is quick (${ms} ms)"; else fail "cgroup-v1: destroy with daemons is quick" "${ms} ms"; fi

# A fork loop (at most 300 forks, 3 s) still forking when the wall limit
# kills the tree: the kill loop must win the race.
WT=30 ct run -p 50 -t 1 -- /usr/bin/python3 -c "#78$tag
import os, time
n, t = 0, time.time()
while time.time() - t < 3 and n < 300:
    try:
        if os.fork() == 0:
            time.sleep(100)
            os._exit(0)
        n += 1
    except OSError:
        pass
    time.sleep(0.005)"
expect_eq "cgroup-v1: fork loop killed at the wall limit" 124 "$RC"
sleep 0.2
expect_eq "cgroup-v1: none of the fork loop survives" 0 "$(ps -eo args | grep -c "^/usr/bin/python3 -c #78$tag")"

# ---- threads: 8 threads x 25 create/attach/destroy in one process
WT=120 ct threads 8 25
expect_contains "cgroup-v1: 200 cycles from 8 threads, no failure" "$OUT" "failed=0"

# ---- 300 create/attach/destroy cycles in a row all work (the cost per run
# is printed for the record; performance figures live in bench/, never in a
# timed assertion)
WT=120 ct bench 300
us=$(printf '%s\n' "$OUT" | sed -n 's/.* total_us=\([0-9.]*\).*/\1/p')
if [ -n "$us" ]; then
	pass "cgroup-v1: 300 create+attach+destroy cycles (${us} us per run)"
else fail "cgroup-v1: 300 create+attach+destroy cycles" "out=[$OUT] err=[$ERR]"; fi

# ---- orphans of a dead ward are swept at the next probe (old and empty
# only); a young one, and one of a live process, stay.
dead=$(bash -c 'echo $$')
while kill -0 "$dead" 2>/dev/null; do dead=$((dead + 1)); done
old="${PARENTS[1]}/ward-$dead-0-0ldd0ead" young="${PARENTS[1]}/ward-$dead-1-y0ung000" live="${PARENTS[1]}/ward-$$-0-11fe0000"
mkdir "$old" "$young" "$live" && touch -d '5 minutes ago' "$old" "$live"
"$CG" probe >/dev/null
if [ ! -e "$old" ]; then pass "cgroup-v1: an old empty orphan of a dead ward is swept"; else fail "cgroup-v1: an old empty orphan of a dead ward is swept"; fi
if [ -e "$young" ] && [ -e "$live" ]; then pass "cgroup-v1: a young orphan and a live ward's cgroup stay"; else fail "cgroup-v1: a young orphan and a live ward's cgroup stay"; fi
rmdir "$old" "$young" "$live" 2>/dev/null
# a dead ward's session cgroup, with its PID 1's and an exec's inside: swept too
sess="${PARENTS[1]}/ward-$dead-2-5e55100d"
mkdir "$sess" "$sess/i1-ward-$dead-2-5e55100d" "$sess/x2-ward-$dead-2-5e55100d" && touch -d '5 minutes ago' "$sess"
"$CG" probe >/dev/null
if [ ! -e "$sess" ]; then pass "cgroup-v1: an old orphan session cgroup is swept with its exec cgroups"; else fail "cgroup-v1: an old orphan session cgroup is swept with its exec cgroups"; fi
rmdir "$sess"/* "$sess" 2>/dev/null

# ---- ward run: the same limits end to end
if ! WT=20 wr -- /bin/true || [ "$RC" != 0 ]; then
	fail "cgroup-v1: ward run works" "rc=$RC err=[$ERR]"
else
	H=(--ro-bind "$HELPERS:/h")
	wr --json --timeout 30 --memory 64 "${H[@]}" -- /h/probe_mem 1024
	expect_eq "cgroup-v1: ward --memory 64 bomb exits 137" 137 "$RC"
	expect_eq "cgroup-v1: ward memory bomb status" memory "$(jg "$OUT" 'd["status"]')"
	expect_eq "cgroup-v1: ward memory bomb oom_killed" true "$(jg "$OUT" 'd["oom_killed"]')"
	expect_eq "cgroup-v1: ward enforced.memory" cgroup-v1 "$(jg "$OUT" 'd["enforced"]["memory"]')"

	wr --json --timeout 30 --pids 20 "${H[@]}" -- /h/probe_forks 500
	k=$(jg "$OUT" 'd["stdout"]' | sed -n 's/^forks=\([0-9]*\).*/\1/p')
	if [ -n "$k" ] && [ "$k" -lt 20 ]; then pass "cgroup-v1: ward --pids 20 stops forks at $k"
	else fail "cgroup-v1: ward --pids 20 stops forks" "rc=$RC out=[$(printf %s "$OUT" | head -c 300)]"; fi
	expect_eq "cgroup-v1: ward enforced.pids" cgroup-v1 "$(jg "$OUT" 'd["enforced"]["pids"]')"

	t0=$(date +%s%N)
	wr --json --cpu 1 --timeout 30 "${H[@]}" -- /h/probe_spin 30
	ms=$((($(date +%s%N) - t0) / 1000000))
	expect_eq "cgroup-v1: ward --cpu 1 burner exits 124" 124 "$RC"
	# (as above: under 20 s, not the 30 s wall limit)
	if [ "$ms" -lt 20000 ]; then pass "cgroup-v1: ward --cpu 1 kills the burner after ~1 s (${ms} ms)"
	else fail "cgroup-v1: ward --cpu 1 kills the burner after ~1 s" "${ms} ms"; fi
	expect_eq "cgroup-v1: ward enforced.cpu" cgroup-v1 "$(jg "$OUT" 'd["enforced"]["cpu"]')"

	wr --timeout 10 --shell "sleep 79$tag & sleep 79$tag & exit 0"
	expect_eq "cgroup-v1: ward run with background daemons exits 0" 0 "$RC"

	# 50 at once
	: >"$T/conc"
	for i in $(seq 50); do
		(wr --timeout 30 -- /bin/true; echo "$RC" >>"$T/conc") &
	done
	wait
	expect_eq "cgroup-v1: 50 concurrent ward runs all exit 0" 50 "$(grep -cx 0 "$T/conc")"
fi

# ---- nothing left behind by any of the runs above
mapfile -t pids <"$T/pids"
expect_eq "cgroup-v1: no cgroup left by our ${#pids[@]} runs" 0 "$(left "${pids[@]}")"
