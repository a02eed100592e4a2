#!/bin/bash
# tests/cgroup2/dynmods.sh — `ward serve --favor-dynmods` on cgroup v2: the
# cgroup2 mount gains favordynmods and keeps its other options (nsdelegate,
# memory_recursiveprot: a remount's options replace them all).  The checks
# are tests/serve/favor_dynmods.sh's, which takes the v2 branch here.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
if [ ! -e /sys/fs/cgroup/cgroup.controllers ]; then
	pass "cgroup2 favor-dynmods: skipped, this host is not cgroup v2 (run it with tests/run-vm cgroup2)"
	exit 0
fi
exec bash "$ROOT/tests/serve/favor_dynmods.sh"
