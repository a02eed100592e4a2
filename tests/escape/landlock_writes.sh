#!/bin/bash
# tests/escape/landlock_writes.sh — Landlock, the second lock under the mount
# layout: writes succeed in /tmp, /work, /dev/shm, a writable --bind and
# the null-type devices, and nowhere else — including places the mount
# layout alone leaves writable to the sandbox user, such as its own
# /proc/self/comm and /proc/self/oom_score_adj (which is how this test sees
# that the layer is really on).  The result names the Landlock ABI in
# "enforced".
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/escape.inc"
esc_preflight

abi=$(/usr/bin/python3 -c 'import ctypes; l=ctypes.CDLL(None, use_errno=True); print(max(0, l.syscall(444, None, 0, 1)))')
if [ "$abi" -lt 1 ]; then
	pass "landlock: not on this kernel (ABI 0): nothing to check"
	exit 0
fi
mkdir -p "$T/rw"; chmod 0755 "$T"; chmod 0777 "$T/rw"
wrun --bind "$T/rw:/rw" --shell '
for p in /tmp/f /work/f /dev/shm/f /rw/f; do echo x >"$p" && rm "$p" && echo "OK $p"; done
for d in /dev/null /dev/zero /dev/full; do : >"$d" 2>/dev/null; echo x >"$d" 2>/dev/null; echo "dev $d $?"; done
echo nm >/proc/self/comm 2>/dev/null || echo "DENIED comm"
echo 500 >/proc/self/oom_score_adj 2>/dev/null || echo "DENIED oom"
mkdir /tmp/d && mv /tmp/d /work/d && echo "OK refer"
true'
for p in /tmp/f /work/f /dev/shm/f /rw/f; do
	expect_contains "landlock: write in $p allowed" "$OUT" "OK $p"
done
expect_contains "landlock: /dev/null writable" "$OUT" "dev /dev/null 0"
expect_contains "landlock: /dev/zero writable" "$OUT" "dev /dev/zero 0"
expect_contains "landlock: /dev/full opens for writing (ENOSPC on write)" "$OUT" "dev /dev/full 1"
expect_contains "landlock: rename across writable dirs (refer) allowed" "$OUT" "OK refer"
expect_contains "landlock: /proc/self/comm not writable (the layer is on)" "$OUT" "DENIED comm"
expect_contains "landlock: /proc/self/oom_score_adj not writable" "$OUT" "DENIED oom"
expect_eq "landlock: result says landlock-abi-$abi" "landlock-abi-$abi" "$(jget "$J" 'd["enforced"]["landlock"]')"
check "landlock: nothing left in the writable bind" test -z "$(ls -A "$T/rw")"
