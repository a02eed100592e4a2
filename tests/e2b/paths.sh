#!/bin/bash
# tests/e2b/paths.sh — the files API reaches every path of the sandbox as
# its user sees it, never a host path (SPEC §18 "Paths, user, sizes"; issue
# 30.10), and the user is `user` (uid 1000, home /home/user), with the real
# SDK (tests/e2b/shared.mjs paths): /tmp, /etc/hostname, /, relative paths;
# "..", planted symlinks, /proc/self/root, /proc/self/environ and mem.
. "$(dirname "$0")/lib.bash"
node_ready || exit 0
start_alice paths || exit 1
sdk_checked shared.mjs paths
stop_e2b paths
