#!/bin/bash
# tests/e2e/mount_cover.sh — a mount over a directory the earlier ops
# worked in (src/sandbox/mounts.c keeps the last parent directory open
# between ops): later ops beneath it land on the new mount, not in the
# directory it covers.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/e2e.inc"
mkdir -p "$T/a" "$T/b" "$T/c"
echo from-c >"$T/c/marker"
echo from-b >"$T/b/top"
chmod -R a+rwX "$T/a" "$T/b" "$T/c"

# /opt/x puts /opt (the root's) in use; the bind at /opt covers it; /opt/y
# must be made in that bind and mounted there, where the command looks.
wr --ro-bind "$T/a:/opt/x" --bind "$T/b:/opt" --ro-bind "$T/c:/opt/y" -- cat /opt/y/marker /opt/top
expect_eq "cover: a mount beneath a covering bind is on top of it" "from-c
from-b" "$OUT"
expect_eq "cover: exit 0" 0 "$RC"
check "cover: its mount point was made in the covering bind" test -d "$T/b/y"
