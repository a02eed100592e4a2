#!/bin/bash
# tests/escape/proc_exe_cve_2019_5736.sh — runc CVE-2019-5736: a process in
# the container opened /proc/PID/exe of runc's init for writing (directly,
# or by holding an O_PATH fd and reopening it through /proc/self/fd once
# the binary stopped running) and overwrote the host's runc.  Here PID 1 is
# ward's own init: non-dumpable, so its /proc entries are closed to the
# sandbox; /proc/self/exe is a read-only bind.  Every attempt fails and the
# host's ward binary and helpers are byte-for-byte unchanged.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/escape.inc"
esc_preflight

sum_before=$(sha256sum "$WARD" "$HELPERS"/esc_proc | sha256sum)
wrun -- /helpers/esc_proc exe
expect_clean "proc exe: helper ran to the end"
expect_blocked "proc exe: /proc/self/exe not writable" "open(/proc/self/exe, O_WRONLY)"
expect_blocked "proc exe: /proc/1/exe not writable" "open(/proc/1/exe, O_WRONLY)"
expect_blocked "proc exe: /proc/1/exe not even as O_PATH" "open(/proc/1/exe, O_PATH)"
expect_not_contains "proc exe: no process's exe writable" "$OUT" ESCAPED
# The shell version: overwrite through /proc/1/exe and /proc/self/exe.
wrun --shell 'echo WARD-ESC >/proc/1/exe; echo WARD-ESC >/proc/self/exe; cat /proc/1/exe >/dev/null && echo READ-PID1-EXE; true'
expect_not_contains "proc exe: shell cannot read ward's binary through /proc/1/exe" "$OUT" READ-PID1-EXE
expect_eq "proc exe: host ward binary and helpers unchanged" "$sum_before" \
	"$(sha256sum "$WARD" "$HELPERS"/esc_proc | sha256sum)"
