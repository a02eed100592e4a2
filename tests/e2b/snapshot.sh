#!/bin/bash
# tests/e2b/snapshot.sh — snapshots (SPEC §18, issue 32.4) with the real SDK
# (tests/e2b/life.mjs snap, snapother): a sandbox's files as an image of the
# store (--image-store), one layer content-addressed (a second snapshot of
# unchanged files adds no layer), usable as templateID, listed and deleted;
# another API key's snapshots are not its own; a sandbox made from one,
# changed, then paused files-only (or across a restart) resumes with its
# files at the pause, not the snapshot's under them.
. "$(dirname "$0")/lib.bash"
node_ready || exit 0
STORE=$SERVE_TMP/store
printf 'alice %s\nbob sekrit-bob-0123456789\n' "$KEY_ALICE" >"$SERVE_TMP/tokens"
start_e2b snap --token-file "$SERVE_TMP/tokens" --image-store "$STORE" --e2b-state "$SERVE_TMP/state" || exit 1
out=$(KEY=$KEY_ALICE sdk life.mjs snap)
echo "$out" | grep -v '^SNAP '
check "e2b snapshot: three snapshots of unchanged files share one layer" \
	test "$(ls "$STORE/layers/sha256" | grep -cv '\.owners$')" = 1
check "e2b snapshot: the layer holds the home under home/user" test -f "$STORE/layers/sha256/$(ls "$STORE/layers/sha256" | head -1)/home/user/proj/a.txt"
KEY=sekrit-bob-0123456789 sdk life.mjs snapother
sdk_checked life.mjs snapres
out=$(KEY=$KEY_ALICE sdk life.mjs snapbefore)
echo "$out" | grep -v '^ID '
id=$(sed -n 's/^ID //p' <<<"$out")
stop_e2b snap
start_e2b snap2 --token-file "$SERVE_TMP/tokens" --image-store "$STORE" --e2b-state "$SERVE_TMP/state" || exit 1
sdk_checked life.mjs snapafter "$id"
stop_e2b snap2
