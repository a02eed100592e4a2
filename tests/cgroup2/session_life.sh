#!/bin/bash
# tests/cgroup2/session_life.sh — a session's lifecycle on cgroup v2: freeze
# and thaw through the session cgroup's own cgroup.freeze (the whole
# subtree: PID 1's leaf and every exec's cgroup), save, restore and fork.
# The C test of the unit group (tests/unit/test_session_life.c), run alone.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
PROBE=$("$HELPERS/cgtool" probe 2>&1)
if ! printf '%s\n' "$PROBE" | grep -qx 'version=2'; then
	pass "cgroup2 session lifecycle: skipped, this host is not cgroup v2 (run it with tests/run-vm cgroup2)"
	exit 0
fi
timeout -k 5 300 "$ROOT/build/unit_tests" session_life
