#!/bin/bash
# tests/cgroup2/cgroup_keep.sh — a server's kept cgroups (src/sandbox/cgroup.c,
# recycling) on cgroup v2: tests/serve/cgroup_reuse.sh, run in the pure-v2
# guest (tests/run-vm cgroup2).  Its kernel (6.1) cannot reset memory.peak,
# so the script checks that no cgroup is kept there; on 6.12 and later it
# checks everything it checks on v1.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
if ! "$HELPERS/cgtool" probe 2>&1 | grep -qx 'version=2'; then
	pass "cgroup2 cgroup keep: skipped, this host is not cgroup v2 (run it with tests/run-vm cgroup2)"
	exit 0
fi
exec bash "$(dirname "${BASH_SOURCE[0]}")/../serve/cgroup_reuse.sh"
