#!/bin/bash
# tests/mcp/http.sh — `ward serve --mcp` (streamable HTTP) with the real MCP
# SDK's client (StreamableHTTPClientTransport), the same checks as over
# stdio, on the runner's tokens (SPEC §21).
. "$(dirname "$0")/lib.bash"
node_ready || exit 0
printf 'alice sekrit-alice-0123456789\nbob sekrit-bob-0123456789\n' >"$SERVE_TMP/tokens"
start_mcp http --token-file "$SERVE_TMP/tokens" --max-concurrent 4 || exit 1
MCP_URL=$MCP_URL MCP_TOKEN=sekrit-alice-0123456789 client http
rc=$?
[ $rc -eq 0 ] || [ $rc -eq 1 ] || fail "client.mjs http" "exited $rc (timeout or crash): $(tail -c 600 "$SRV_LOG")"
stop_checked http
