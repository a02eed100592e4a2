#!/bin/bash
# tests/mcp/http_wire.sh — ward serve --mcp on the wire (SPEC §21), with
# curl and the SDK's client: tokens (401 without, 200 with), quotas
# (--client-rate: a tools/call over it is 429, an initialize or ping is not
# a run), MCP sessions bounded per client, DELETE ending the MCP session
# and the ward session kept for it, another client's Mcp-Session-Id, and
# a stream's client going away cancelling the run, and
# hostile messages: malformed JSON, a batch, an unknown method, a body
# over --max-body, a missing session id, an unsupported protocol version.
. "$(dirname "$0")/lib.bash"
printf 'alice sekrit-alice-0123456789\nbob sekrit-bob-0123456789\ncarol sekrit-carol-0123456789\n' >"$SERVE_TMP/tokens"
A='Authorization: Bearer sekrit-alice-0123456789'
B='Authorization: Bearer sekrit-bob-0123456789'
start_mcp wire --token-file "$SERVE_TMP/tokens" --client-rate 3 --client-sessions 2 --max-body 65536 || exit 1

# tokens
r=$(rpc "$INIT")
expect_eq "no token: 401" 401 "$(code_of "$r")"
expect_contains "no token: a JSON-RPC error naming the header" "$(body_of "$r")" '"error":{"code":-32600,"message":"missing or wrong token'
r=$(rpc "$INIT" -H 'Authorization: Bearer wrong')
expect_eq "a wrong token: 401" 401 "$(code_of "$r")"
r=$(rpc "$INIT" -H "$A")
expect_eq "a token: 200" 200 "$(code_of "$r")"
expect_contains "initialize answers the version asked for" "$(body_of "$r")" '"protocolVersion":"2025-11-25"'
S=$(mcp_sid)
case "$S" in ?*.????????????????????????????????) pass "initialize gives an Mcp-Session-Id (node id, 128 bits)" ;; *) fail "Mcp-Session-Id" "'$S'" ;; esac
r=$(rpc '{"jsonrpc":"2.0","method":"notifications/initialized"}' -H "$A" -H "Mcp-Session-Id: $S")
expect_eq "a notification: 202" 202 "$(code_of "$r")"
r=$(rpc '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' -H "$A" -H "Mcp-Session-Id: $S" -H 'MCP-Protocol-Version: 2025-11-25')
expect_contains "tools/list with the session" "$(code_of "$r") $(body_of "$r")" '200 {"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"run_code"'
r=$(rpc '{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"1999-01-01","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}' -H "$A")
expect_contains "an unknown version asked for: ward's newest" "$(body_of "$r")" '"protocolVersion":"2025-11-25"'
rpc '{"jsonrpc":"2.0","method":"x"}' -X DELETE -H "$A" -H "Mcp-Session-Id: $(mcp_sid)" >/dev/null

# another client cannot use alice's session
r=$(rpc '{"jsonrpc":"2.0","id":3,"method":"ping"}' -H "$B" -H "Mcp-Session-Id: $S")
expect_eq "another client's Mcp-Session-Id: 404" 404 "$(code_of "$r")"

# hostile messages
H=(-H "$A" -H "Mcp-Session-Id: $S")
r=$(rpc '{"jsonrpc":"2.0","id":4,' "${H[@]}")
expect_contains "malformed JSON: 400 with -32700" "$(code_of "$r") $(body_of "$r")" '400 {"jsonrpc":"2.0","id":null,"error":{"code":-32700'
r=$(rpc '[{"jsonrpc":"2.0","id":5,"method":"ping"}]' "${H[@]}")
expect_contains "a batch: 400 with -32600" "$(code_of "$r") $(body_of "$r")" '400 {"jsonrpc":"2.0","id":null,"error":{"code":-32600'
r=$(rpc '{"jsonrpc":"1.0","id":6,"method":"ping"}' "${H[@]}")
expect_contains "jsonrpc 1.0: -32600" "$(body_of "$r")" '"id":6,"error":{"code":-32600'
r=$(rpc '{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}' "${H[@]}")
expect_contains "an object id: -32600" "$(body_of "$r")" '"error":{"code":-32600'
r=$(rpc '{"jsonrpc":"2.0","id":7,"method":"resources/list"}' "${H[@]}")
expect_contains "an unknown method: -32601" "$(code_of "$r") $(body_of "$r")" '200 {"jsonrpc":"2.0","id":7,"error":{"code":-32601'
r=$(rpc '{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"run_code","arguments":{"language":["python"],"code":1}}}' "${H[@]}")
expect_contains "wrong argument types: -32602" "$(body_of "$r")" '"id":8,"error":{"code":-32602'
{ printf '{"jsonrpc":"2.0","id":9,"method":"ping","params":{"x":"'; head -c 200000 /dev/zero | tr '\0' 'a'; printf '"}}'; } >"$SERVE_TMP/big"
r=$(rpc "@$SERVE_TMP/big" "${H[@]}")
expect_eq "a body over --max-body: 413" 413 "$(code_of "$r")"
r=$(rpc '{"jsonrpc":"2.0","id":10,"method":"ping"}' -H "$A")
expect_eq "no Mcp-Session-Id: 400" 400 "$(code_of "$r")"
r=$(rpc '{"jsonrpc":"2.0","id":11,"method":"ping"}' "${H[@]}" -H 'MCP-Protocol-Version: 1999-01-01')
expect_eq "an unsupported MCP-Protocol-Version: 400" 400 "$(code_of "$r")"
r=$(curl -s -o /dev/null -w '%{http_code}' -H "$A" "$MCP_URL/mcp")
expect_eq "GET /mcp: 405 (no stream of the server's own)" 405 "$r"
r=$(rpc '{"jsonrpc":"2.0","id":12,"method":"ping"}' "${H[@]}")
expect_contains "the session still answers" "$(code_of "$r") $(body_of "$r")" '200 {"jsonrpc":"2.0","id":12,"result":{}}'

# a tools/call with a progressToken streams (server-sent events): progress
# first; a client that goes away mid-stream cancels the run (its tree killed)
M=$RANDOM$RANDOM
curl -s -N --max-time 3 -X POST "${H[@]}" -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
	--data-binary '{"jsonrpc":"2.0","id":40,"method":"tools/call","params":{"name":"run_command","arguments":{"command":"sleep 5'"$M"'"},"_meta":{"progressToken":"p40"}}}' \
	"$MCP_URL/mcp" >"$SERVE_TMP/sse.out"
expect_contains "the stream's first event is a progress notification" "$(head -2 "$SERVE_TMP/sse.out")" \
	'event: message
data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p40","progress":0'
wait_for markers_gone "5$M" && pass "the client went away: the run was cancelled, its process gone" ||
	fail "the client went away: the run was cancelled" "sleep 5$M still runs"

# quotas: --client-rate 3 runs a minute (carol's: she has run nothing yet);
# initialize and ping are no runs
C='Authorization: Bearer sekrit-carol-0123456789'
rpc "$INIT" -H "$C" >/dev/null
H=(-H "$C" -H "Mcp-Session-Id: $(mcp_sid)")
call='{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":"run_command","arguments":{"command":"echo q"}}}'
codes=""
for _ in 1 2 3 4; do codes="$codes $(code_of "$(rpc "$call" "${H[@]}")")"; done
expect_eq "--client-rate 3: the fourth tools/call is 429" " 200 200 200 429" "$codes"
r=$(rpc '{"jsonrpc":"2.0","id":21,"method":"ping"}' "${H[@]}")
expect_eq "a ping is no run: 200 over the rate" 200 "$(code_of "$r")"
rpc "$INIT" -H "$B" >/dev/null
r=$(rpc "$call" -H "$B" -H "Mcp-Session-Id: $(mcp_sid)")
expect_eq "the quota is the client's: bob runs" 200 "$(code_of "$r")"
curl -s -o /dev/null -X DELETE -H "$B" -H "Mcp-Session-Id: $(mcp_sid)" "$MCP_URL/mcp"

# MCP sessions per client: --client-sessions 2 (S is one)
rpc "$INIT" -H "$A" >/dev/null; S2=$(mcp_sid)
r=$(rpc "$INIT" -H "$A")
expect_eq "a third MCP session of a client: 429" 429 "$(code_of "$r")"
r=$(rpc "$INIT" -H "$B")
expect_eq "another client's first: 200" 200 "$(code_of "$r")"
SB=$(mcp_sid)

# DELETE ends the MCP session and the ward session kept for it
r=$(rpc '{"jsonrpc":"2.0","id":30,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"x","content":"y"}}}' -H "$B" -H "Mcp-Session-Id: $SB")
WS=$(jg "$(body_of "$r")" 'd["result"]["structuredContent"]["session_id"]')
expect_eq "bob's connection has a ward session, listed as his" "[\"$WS\"]" "$(curl -s -H "$B" "$URL/sessions" | jg "$(cat)" '[x["id"] for x in d]')"
r=$(curl -s -o /dev/null -w '%{http_code}' -X DELETE -H "$B" -H "Mcp-Session-Id: $SB" "$MCP_URL/mcp")
expect_eq "DELETE /mcp: 204" 204 "$r"
r=$(rpc '{"jsonrpc":"2.0","id":31,"method":"ping"}' -H "$B" -H "Mcp-Session-Id: $SB")
expect_eq "a deleted MCP session: 404" 404 "$(code_of "$r")"
gone() { [ "$(curl -s -H "$B" "$URL/sessions")" = "[]" ]; }
wait_for gone && pass "its ward session ended with it" || fail "its ward session ended with it" "$(curl -s -H "$B" "$URL/sessions")"
r=$(rpc "$INIT" -H "$A")
expect_eq "a deleted session makes room: still 429 for alice (two held)" 429 "$(code_of "$r")"
curl -s -o /dev/null -X DELETE -H "$A" -H "Mcp-Session-Id: $S2" "$MCP_URL/mcp"
r=$(rpc "$INIT" -H "$A")
expect_eq "after alice's DELETE: 200" 200 "$(code_of "$r")"

# the SDK's client without a token fails to connect; with one it works
if node_ready >/dev/null; then
	out=$(cd "$NODE_DIR" && MCP_URL=$MCP_URL WARD=$WARD timeout 60 node client.mjs http 2>&1 | head -1)
	expect_contains "the SDK's client without a token: refused" "$out" "missing or wrong token"
fi
stop_checked wire
