#!/bin/bash
# tests/e2b/snapshot.sh — snapshots (SPEC §18, issue 32.4) with the real SDK
# (tests/e2b/life.mjs snap, snapother): a sandbox's files as an image of the
# store (--image-store), one layer content-addressed (a second snapshot of
# unchanged files adds no layer), usable as templateID, listed and deleted;
# another API key's snapshots are not its own.
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
stop_e2b snap
