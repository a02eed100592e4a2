#!/bin/bash
# tests/escape/leaked_fd_cve_2024_21626.sh — runc CVE-2024-21626 ("Leaky
# Vessels"): an fd of runc's to a host directory leaked into the container,
# and a cwd of /proc/self/fd/7 put the process on the host filesystem.
# ward is started here with extra fds 5 and 7 open on host directories (and
# 9 on a host file); inside, no fd beyond 0-2 exists, /proc/self/fd/N/..
# leads nowhere, and the host directory is unchanged.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/escape.inc"
esc_preflight

mkdir -p "$T/hostdir"
echo host-only >"$T/hostdir/secret"
exec 5<"$T/hostdir" 7</ 9>>"$T/hostdir/secret"
wrun -- /helpers/esc_proc fds
exec 5<&- 7<&- 9>&-
expect_clean "leaked fd: helper ran to the end"
expect_contains "leaked fd: every fd checked" "$OUT" "OK fds checked"
expect_not_contains "leaked fd: no fd beyond 0-2 inside" "$OUT" "INFO fd"
for n in 5 7 9; do
	expect_blocked "leaked fd: chdir(/proc/self/fd/$n/..) fails" "chdir(/proc/self/fd/$n/..)"
done
exec 5<"$T/hostdir" 7</
wrun --shell 'cd /proc/self/fd/7 && ls; cat /proc/self/fd/5/secret; echo WARD-ESC >/proc/self/fd/9; ls /proc/self/fd'
exec 5<&- 7<&-
expect_not_contains "leaked fd: shell cannot read through fd 5" "$OUT" host-only
expect_eq "leaked fd: host directory unchanged" "secret" "$(ls "$T/hostdir")"
expect_eq "leaked fd: host file unchanged" "host-only" "$(cat "$T/hostdir/secret")"
