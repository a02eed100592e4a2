#!/bin/bash
# tests/e2e/tcp_memory.sh — the TCP buffers of the sandbox's own loopback are
# kernel memory the sandbox makes the host hold; they must count against its
# memory cgroup.  cgroup v1 charges them only to a cgroup given a TCP limit
# (memory.kmem.tcp.limit_in_bytes, set to the --memory figure); without it
# 7 processes once held 1.6 GB of host memory under --memory 64 (peak 26 MB,
# status ok) and pushed every socket on the host into TCP memory pressure.
# v2 charges them to memory.max (tests/cgroup2/limits.sh).
# The load is the smallest that shows it, and bounded even when nothing is
# charged: one process, 8 connections to itself whose receivers never read,
# at most 48 MiB queued in all, 10 s.  Under --memory 16 the kernel must stop
# taking data near 16 MiB (sends block) — and the cgroup's TCP counter
# shows the charge at its limit — where the old code queued all 48.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/e2e.inc"
[ -x "$HELPERS/probe_tcpmem" ] || { fail "tcp memory: helper probe_tcpmem built" "run make helpers"; exit 0; }
if [ "$(id -u)" != 0 ]; then pass "tcp memory: skipped, needs a memory cgroup (root); tests/e2e/unprivileged.sh checks the refusal"; exit 0; fi

wr --json --net loopback -- /bin/true
mech=$(jg "$OUT" 'd["enforced"]["memory"]')
case "$mech" in
cgroup-v1) want=cgroup-v1-kmem ;;
cgroup-v2) want=cgroup-v2 ;;
*) fail "tcp memory: a memory cgroup" "enforced.memory is [$mech]: $ERR"; exit 0 ;;
esac
expect_eq "tcp memory: enforced.tcp_memory with --net loopback" "$want" "$(jg "$OUT" 'd["enforced"]["tcp_memory"]')"
wr --json -- /bin/true
expect_eq "tcp memory: enforced.tcp_memory with --net none" "$want" "$(jg "$OUT" 'd["enforced"]["tcp_memory"]')"

# The load, streamed (no --json) so that the host can watch the run's cgroup
# while it holds the buffers.
# ward itself in the background, bounded by its --timeout and by the loop
# below.
"$WARD" run --timeout 20 --net loopback --memory 16 --ro-bind "$HELPERS:/h" -- \
	/h/probe_tcpmem 8 48 4096 </dev/null >"$T/out" 2>"$T/err" &
w=$!
tcp_max=0 tcp_limit="" n=0
# The run's cgroup, found by its member (ward's child: PID 1), not by name
# (ward run may take a kept slot, ward-slot-N, of an earlier run).  A
# sample counts only when PID 1 is still alive (not a zombie) after it was
# read: once PID 1 has ended, ward keeps the slot and another run (another
# lane's, default --memory) may take it and write its own limits before
# this loop reads them (seen once in CI: 536870912).
run_pid1() {
	local c
	for c in $(cat /proc/"$w"/task/*/children 2>/dev/null); do
		alive "$c" && cg_of "$c" >/dev/null && { echo "$c"; return; }
	done
}
alive() {
	local st
	st=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' /proc/"$1"/status 2>/dev/null)
	[ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}
cg_of() {
	local d
	if [ "$mech" = cgroup-v1 ]; then
		d=$(sed -n 's|^[0-9]*:memory:\(/.*\)|/sys/fs/cgroup/memory\1|p' /proc/"$1"/cgroup 2>/dev/null)
	else
		d=$(sed -n 's|^0::\(/.*\)|/sys/fs/cgroup\1|p' /proc/"$1"/cgroup 2>/dev/null)
	fi
	case "$d" in "" | /sys/fs/cgroup/ | /sys/fs/cgroup/memory/) return 1 ;; esac
	[ -d "$d" ] && echo "$d"
}
while kill -0 "$w" 2>/dev/null; do
	n=$((n + 1))
	[ "$n" -gt 800 ] && kill -9 "$w" 2>/dev/null
	c=$(run_pid1)
	if [ -n "$c" ] && d=$(cg_of "$c"); then
		if [ "$mech" = cgroup-v1 ]; then
			v=$(cat "$d/memory.kmem.tcp.max_usage_in_bytes" 2>/dev/null)
			l=$(cat "$d/memory.kmem.tcp.limit_in_bytes" 2>/dev/null)
		else
			v=$(awk '$1 == "sock" {print $2}' "$d/memory.stat" 2>/dev/null)
			l=$(cat "$d/memory.max" 2>/dev/null)
		fi
		# still this run's cgroup when read: PID 1 lives, in it
		if alive "$c" && [ "$(cg_of "$c")" = "$d" ]; then
			[ "${v:-0}" -gt "$tcp_max" ] && tcp_max=$v
			[ -n "$l" ] && [ "$l" != max ] && [ "${#l}" -lt 13 ] && tcp_limit=$l
		fi
	fi
	sleep 0.05
done
wait "$w"
rc=$?
res=$(cat "$T/out")
queued=$(printf '%s' "$res" | sed -n 's/^queued=\([0-9]*\) .*/\1/p')
if [ "$rc" = 0 ] && [ -n "$queued" ] && [ "$queued" -lt 24 ] && [[ "$res" != *stopped=cap* ]] && [[ "$res" != *ERROR* ]]; then
	pass "tcp memory: sends stop near --memory 16 ($res)"
else
	fail "tcp memory: sends stop near --memory 16" "exit $rc, probe [$res], ward [$(tail -c 300 "$T/err")]"
fi
expect_eq "tcp memory: the run's cgroup limits socket memory to 16 MiB" $((16 << 20)) "$tcp_limit"
if [ "$tcp_max" -gt $((8 << 20)) ] && [ "$tcp_max" -le $(((16 << 20) + (1 << 20))) ]; then
	pass "tcp memory: the cgroup's socket charge rose to the limit and no further ($tcp_max bytes)"
else
	fail "tcp memory: the cgroup's socket charge rose to the limit and no further" "peak seen [$tcp_max]"
fi
