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

# The same from a shell, as a user would try it: the shell survives, mount(8)
# dies, and the sandbox's view is unchanged.
wrun --shell 'mount -t tmpfs ward-esc /tmp; echo "mount rc=$?"; grep -c ward-esc /proc/self/mountinfo'
expect_contains "mount(8) from a shell: killed by SIGSYS (rc 159)" "$OUT" "mount rc=159"
expect_contains "mount(8) from a shell: no ward-esc mount inside" "$OUT" $'\n0'
host_mount_clean "mount(8) from a shell: host unchanged"
