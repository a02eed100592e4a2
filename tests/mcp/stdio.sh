#!/bin/bash
# tests/mcp/stdio.sh — `ward mcp` over stdio with the real MCP SDK's client
# (StdioClientTransport spawning it, as a desktop assistant does): tools and
# their schemas, run_code in every enabled language (those whose toolchain
# is absent are skipped), run_command, the connection's session and its
# files, progress on a long run, cancellation that kills the run's tree,
# and hostile arguments (SPEC §21).
. "$(dirname "$0")/lib.bash"
node_ready || exit 0
client stdio
rc=$?
[ $rc -eq 0 ] || [ $rc -eq 1 ] || fail "client.mjs stdio" "exited $rc (timeout or crash)"
