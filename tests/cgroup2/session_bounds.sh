#!/bin/bash
# tests/cgroup2/session_bounds.sh — what one session's tenant can cost the
# others (tests/serve/session_bounds.sh), on cgroup v2, where the guest's
# one CPU gives ward serve one worker by default: a stdin write to a process
# that never reads once held that worker for the call's deadline, and the
# script hung behind it.  Run in the pure-v2 guest (tests/run-vm cgroup2):
# ~6 minutes there (every exec is emulated).
# vm-timeout: 720
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
PROBE=$("$HELPERS/cgtool" probe 2>&1)
if ! printf '%s\n' "$PROBE" | grep -qx 'version=2'; then
	pass "cgroup2 session bounds: skipped, this host is not cgroup v2 (run it with tests/run-vm cgroup2)"
	exit 0
fi
exec bash "$ROOT/tests/serve/session_bounds.sh"
