#!/bin/bash
# tests/cgroup2/layouts.sh — where root's ward puts its cgroups on v2
# (SPEC §3 "Limits"): a systemd Delegate=yes service (trusted.delegate
# xattr) is subdivided in place; a root-owned cgroup without the mark is
# left alone (top-level ward/ instead); a container's cgroup namespace
# whose top holds only ward steps aside into a leaf.  Runs in the pure-v2
# guest (tests/run-vm cgroup2).
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
CG=$HELPERS/cgtool
[ -x "$CG" ] || { fail "cgroup2-layout: helper cgtool built" "run make helpers"; exit 0; }
if ! "$CG" probe 2>/dev/null | grep -qx 'version=2' || [ "$(id -u)" != 0 ]; then
	pass "cgroup2-layout: skipped, needs root on a cgroup v2 host (run it with tests/run-vm cgroup2)"
	exit 0
fi
S=/sys/fs/cgroup/svc-$$ U=/sys/fs/cgroup/plain-$$ C=/sys/fs/cgroup/ctr-$$
cleanup() { for d in "$S"/ward-* "$S" "$U"/ward-* "$U" "$C"/ward/ward-* "$C"/ward "$C"/ward-* "$C"; do [ -d "$d" ] && rmdir "$d" 2>/dev/null; done; }
trap cleanup EXIT
mkdir "$S" "$U" "$C"
/usr/bin/python3 -c 'import os,sys; os.setxattr(sys.argv[1], "trusted.delegate", b"1")' "$S" 2>/dev/null
# inside CG ARGS... — run ARGS as root, alone in cgroup CG.
inside() { local cg=$1; shift; OUT=$(timeout -k 2 60 /bin/sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$cg" "$@" 2>&1 </dev/null); RC=$?; }

inside "$S" "$CG" probe
expect_contains "cgroup2-layout: Delegate=yes service: runs inside it" "$OUT" "where=$S"
expect_contains "cgroup2-layout: Delegate=yes service: ward in a leaf" "$OUT" "self=${S#/sys/fs/cgroup}/ward-supervisor"

inside "$U" "$CG" probe
expect_contains "cgroup2-layout: root in a cgroup not delegated: top-level ward/" "$OUT" "where=/sys/fs/cgroup/ward"
expect_eq "cgroup2-layout: root in a cgroup not delegated: not moved" "self=${U#/sys/fs/cgroup}" "$(printf '%s\n' "$OUT" | grep '^self=')"

# A container: own cgroup namespace and cgroup2 mount; its top is $C.
inside "$C" unshare -Cm /bin/sh -c 'umount -l /sys/fs/cgroup && mount -t cgroup2 none /sys/fs/cgroup && exec "$0" run -m 64 -p 20 -- /bin/sh -c "cat /proc/self/cgroup; exec $1/probe_mem 1024"' "$CG" "$HELPERS"
expect_eq "cgroup2-layout: container top: memory bomb exits 137" 137 "$RC"
expect_contains "cgroup2-layout: container top: OOM seen" "$OUT" "oom=1"
expect_contains "cgroup2-layout: container top: run cgroup under ward/" "$OUT" "0::/ward/ward-"
check "cgroup2-layout: container top: ward stepped into a leaf" test -d "$C/ward-supervisor"
expect_eq "cgroup2-layout: container top: nothing left" "" "$(ls -d "$C"/ward/ward-[0-9]* 2>/dev/null)"
exit 0
