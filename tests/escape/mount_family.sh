#!/bin/bash
# tests/escape/mount_family.sh — the classic filesystem-view escapes: mount,
# umount2, pivot_root, chroot, the new mount API (fsopen, fsconfig, fsmount,
# fspick, move_mount, open_tree, mount_setattr) and open_by_handle_at
# ("shocker", 2014).  Each is killed by the seccomp filter (SIGSYS, signal
# 31) before the kernel looks at its arguments, and no mount the helper asked
# for ("ward-esc") is visible on the host afterwards.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/escape.inc"
esc_preflight

for m in mount umount pivot_root chroot fsopen fsconfig fsmount fspick move_mount open_tree mount_setattr \
	open_by_handle_at; do
	wrun -- /helpers/esc_syscall "$m"
	expect_killed "mount family: $m killed by seccomp"
done
host_mount_clean "mount family: host mount table has no ward-esc mount"

# The same from a shell, as a user would try it: a fatal call ends the whole
# run (ward holds the seccomp listener and kills the sandbox), the result
# says SIGSYS, stderr names the call, and nothing after it ran.
wrun --shell 'echo before; mount -t tmpfs ward-esc /tmp; echo "after rc=$?"'
expect_eq "mount(8) from a shell: the run ends with SIGSYS" "signal 31 159" "$ST $SIG $EC"
expect_contains "mount(8) from a shell: stderr names the call" "$ERR" 'ward: seccomp: blocked mount(2)'
expect_not_contains "mount(8) from a shell: nothing ran after it" "$OUT" 'after rc='
host_mount_clean "mount(8) from a shell: host unchanged"
