#!/bin/bash
# tests/e2b/sdk.sh — every call the SDK's main features need, with the real
# e2b and @e2b/code-interpreter packages (tests/e2b/sdk.mjs): sandboxes,
# commands, files, the code interpreter, and another key's view (SPEC §17).
. "$(dirname "$0")/lib.bash"
node_ready || exit 0
printf 'alice sekrit-alice-0123456789\nbob sekrit-bob-0123456789\n' >"$SERVE_TMP/tokens"
start_e2b sdk --token-file "$SERVE_TMP/tokens" || exit 1
KEY=sekrit-alice-0123456789 OTHER_KEY=sekrit-bob-0123456789 sdk sdk.mjs all
rc=$?
[ $rc -eq 0 ] || [ $rc -eq 1 ] || fail "sdk.mjs" "exited $rc (timeout or crash): $(tail -c 600 "$SRV_LOG")"
stop_e2b sdk
