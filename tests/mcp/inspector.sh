#!/bin/bash
# tests/mcp/inspector.sh — the MCP Inspector's CLI (@modelcontextprotocol/
# inspector --cli, pinned in package.json), unchanged, against `ward mcp`
# over stdio and `ward serve --mcp` over streamable HTTP: tools/list and
# tools/call as a user types them (SPEC §21).
. "$(dirname "$0")/lib.bash"
node_ready || exit 0

# jin JSON EXPR — python3 evaluates EXPR with d = the inspector's JSON output
jin() { /usr/bin/python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print(eval(sys.argv[1]))' "$2" <<<"$1" 2>&1; }
names='sorted(t["name"] for t in d["tools"])'
want="['list_files', 'list_languages', 'read_file', 'run_code', 'run_command', 'run_in_session', 'write_file']"

out=$(inspector "$WARD" mcp --method tools/list 2>/dev/null)
expect_eq "stdio: tools/list" "$want" "$(jin "$out" "$names")"
expect_eq "stdio: tools/list carries each tool's schemas" True "$(jin "$out" 'all(t["inputSchema"]["type"]=="object" and "outputSchema" in t for t in d["tools"])')"
out=$(inspector "$WARD" mcp --method tools/call --tool-name run_code --tool-arg language=python 'code=print(6*7)' 2>/dev/null)
expect_eq "stdio: tools/call run_code" "['ok', '42\\n', False]" "$(jin "$out" '[d["structuredContent"]["status"], d["structuredContent"]["stdout"], d["isError"]]')"
out=$(inspector "$WARD" mcp --method tools/call --tool-name run_command --tool-arg 'command=echo no >&2; exit 4' 2>/dev/null)
expect_eq "stdio: a failing command is a tool error" "[True, 4, 'no\\n']" "$(jin "$out" '[d["isError"], d["structuredContent"]["exit_code"], d["structuredContent"]["stderr"]]')"

printf 'alice sekrit-alice-0123456789\n' >"$SERVE_TMP/tokens"
start_mcp inspector --token-file "$SERVE_TMP/tokens" || exit 1
AUTH='Authorization: Bearer sekrit-alice-0123456789'
out=$(inspector "$MCP_URL/mcp" --transport http --header "$AUTH" --method tools/list 2>/dev/null)
expect_eq "http: tools/list" "$want" "$(jin "$out" "$names")"
out=$(inspector "$MCP_URL/mcp" --transport http --header "$AUTH" --method tools/call --tool-name run_code --tool-arg language=bash 'code=echo $((6*7))' 2>/dev/null)
expect_eq "http: tools/call run_code" "['ok', '42\\n']" "$(jin "$out" '[d["structuredContent"]["status"], d["structuredContent"]["stdout"]]')"
out=$(inspector "$MCP_URL/mcp" --transport http --method tools/list 2>&1)
rc=$?
[ $rc -ne 0 ] && pass "http: without the token the inspector is refused (exit $rc)" || fail "http: without the token" "exit 0: $out"
stop_checked inspector
