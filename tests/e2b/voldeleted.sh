#!/bin/bash
# tests/e2b/voldeleted.sh — a deleted volume still mounted by a sandbox
# counts against its API key's --e2b-max-volumes until the sandbox ends
# (SPEC §18 Volumes; the second review's vol_deleted: a key held 36 MiB of
# unlinked images under a cap of one 16 MiB volume), with the real SDK
# (tests/e2b/voldeleted.mjs); its image is let go once the sandbox ended.
. "$(dirname "$0")/lib.bash"
[ "$(id -u)" = 0 ] || { echo "PASS: e2b voldeleted skipped (needs root)"; exit 0; }
node_ready || exit 0
VOLS=$SERVE_TMP/vols
vols_unmounted_at_exit "$VOLS"
start_alice voldeleted --e2b-volumes "$VOLS" --e2b-volume-max-bytes 16777216 --e2b-max-volumes 1 || exit 1
sdk_checked voldeleted.mjs
expect_contains "e2b voldeleted: the delete is logged as still mounted" "$(cat "$SRV_LOG")" "still mounted by a sandbox"
check "e2b voldeleted: no loop device holds an image of this runner's any more" \
	bash -c "! losetup -l -n -O BACK-FILE | grep -qF '$VOLS/'"
stop_e2b voldeleted
