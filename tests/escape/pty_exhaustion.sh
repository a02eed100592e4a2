#!/bin/bash
# tests/escape/pty_exhaustion.sh — every devpts instance draws its ptys from
# one pool the host shares (kernel.pty.max less kernel.pty.reserve), so a
# sandbox that held them all would leave a concurrent sandbox, or a container
# on the host, with ENOSPC.  The sandbox's devpts is mounted with max=16
# (WARD_PTY_MAX): the 17th /dev/ptmx held at once fails with ENOSPC, and a
# pty closed is free again.  Bounded: at most 17 ptys are ever opened.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/escape.inc"
esc_preflight

wrun -- /helpers/esc_tty pty-flood 17
expect_blocked "ptys: the 17th pty held at once fails" "ptmx flood" ENOSPC
expect_contains "ptys: 16 are held first" "$OUT" "INFO ptys held 16"
expect_contains "ptys: a pty closed can be opened again" "$OUT" "INFO reopen after close ok"
expect_contains "ptys: the devpts mount says max=16" \
	"$("$WARD" run -- /bin/grep ' /dev/pts ' /proc/self/mountinfo 2>&1)" "max=16"
