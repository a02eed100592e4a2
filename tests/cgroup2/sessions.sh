#!/bin/bash
# tests/cgroup2/sessions.sh — sessions (SPEC §11) on cgroup v2: the session's
# cgroup hands its controllers to the execs' cgroups (PID 1 in a leaf of its
# own), so that a timeout kills one exec's tree, a memory kill is reported
# in its exec, and destroy leaves nothing.  The C test of the unit group
# (tests/unit/test_session.c), run alone; bounded by its execs' timeouts and
# the session's 64 MB and 64 pids.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
PROBE=$("$HELPERS/cgtool" probe 2>&1)
if ! printf '%s\n' "$PROBE" | grep -qx 'version=2'; then
	pass "cgroup2 sessions: skipped, this host is not cgroup v2 (run it with tests/run-vm cgroup2)"
	exit 0
fi
timeout -k 5 120 "$ROOT/build/unit_tests" session
