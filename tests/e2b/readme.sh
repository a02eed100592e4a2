#!/bin/bash
# tests/e2b/readme.sh — README's E2B example, as written there (the block
# under "E2B's SDK, self-hosted", its port and token replaced by this test
# server's), with the real SDK.
. "$(dirname "$0")/lib.bash"
node_ready || exit 0
printf 'alice sekrit-alice-0123456789\n' >"$SERVE_TMP/tokens"
start_e2b readme --token-file "$SERVE_TMP/tokens" --e2b-state "$SERVE_TMP/state" --e2b-volumes "$SERVE_TMP/vols" || exit 1
# (a block whose first line names another test that runs it, the code
# interpreter image's, is left out: it is minutes of downloads)
block=$(awk '/^## E2B.s SDK, self-hosted/ { on = 1; next }
	on && /^## / { exit }
	on && /^    / { if (!inb) { inb = 1; skip = /(interp|templates)\.sh runs it/ } if (!skip) { sub(/^    /, ""); print } next }
	on && /^[^ ]/ { inb = 0 }' "$ROOT/README.md")
expect_contains "README: the E2B block is there" "$block" "Sandbox.create()"
block=${block//http:\/\/127.0.0.1:49983/$E2B_URL}
block=${block//<a token from --token-file>/sekrit-alice-0123456789}
out=$(cd "$NODE_DIR" && timeout -k 5 120 bash -c "$block" 2>&1)
expect_contains "README: the E2B example runs: a command's output" "$out" "Linux ward"
expect_contains "README: the E2B example runs: runCode's value" "$out" " 42"
expect_contains "README: the pause example runs: the file read after connect" "$out" "kept"
expect_contains "README: the volumes example runs: the sandbox reads the volume's file" "$out" "hello"
