#!/bin/bash
# tests/e2b/floor.sh — the oldest SDKs that can work against ward (SPEC §17:
# e2b 2.14.1, the first to send E2b-Sandbox-Id on /files and /health;
# @e2b/code-interpreter 2.7.0, the first to honour E2B_SANDBOX_URL), pinned
# in tests/e2b/floor/, running the same script as sdk.sh.
PKG_DIR=$(cd "$(dirname "$0")" && pwd)/floor
NODE_DIR=$(cd "$(dirname "$0")/../.." && pwd)/build/e2b-node-floor
. "$(dirname "$0")/lib.bash"
node_ready || exit 0
printf 'alice sekrit-alice-0123456789\nbob sekrit-bob-0123456789\n' >"$SERVE_TMP/tokens"
start_e2b floor --token-file "$SERVE_TMP/tokens" || exit 1
KEY=sekrit-alice-0123456789 OTHER_KEY=sekrit-bob-0123456789 sdk sdk.mjs all | sed 's/^\(PASS\|FAIL\): e2b sdk:/\1: e2b sdk (floor: e2b 2.14.1, code-interpreter 2.7.0):/'
