#!/bin/bash
# tests/escape/foreign_abi.sh — syscalls through another ABI, whose numbers a
# filter written for x86_64 would misread: i386 through `int 0x80` (nr 310
# is unshare there, 21 is mount) and x32 (nr | 0x40000000).  The filter
# kills any non-native architecture and any x32 number outright.  Where this
# kernel has no int 0x80 at all (the helper's harmless probe faults on the
# host too), the attack dies with SIGSEGV before reaching seccomp; the unit
# test's BPF run (build/unit_tests, "seccomp: bpf: i386 arch kills") covers
# the filter's i386 rule on every kernel.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/escape.inc"
esc_preflight

if bash -c 'timeout 10 "$1" probe-int80' _ "$HELPERS/esc_abi" >/dev/null 2>&1; then int80=yes; else int80=no; fi
for m in int80-unshare int80-mount; do
	wrun -- /helpers/esc_abi "$m"
	if [ "$int80" = yes ]; then
		expect_killed "foreign abi: $m killed by seccomp"
	elif [ "$ST" = signal ] && { [ "$SIG" = 31 ] || [ "$SIG" = 11 ]; } && [[ "$OUT" != *ESCAPED* ]]; then
		pass "foreign abi: $m fails (this kernel has no int 0x80: signal $SIG)"
	else
		fail "foreign abi: $m fails" "$(last)"
	fi
done
for m in x32-unshare x32-getpid; do
	wrun -- /helpers/esc_abi "$m"
	expect_killed "foreign abi: $m killed by seccomp"
done
host_mount_clean "foreign abi: host mount table unchanged"
