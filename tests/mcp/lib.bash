# tests/mcp/lib.bash — sourced by tests/mcp/*.sh (not a test itself): the
# real MCP clients (package.json pins @modelcontextprotocol/sdk and
# @modelcontextprotocol/inspector; `npm ci` from package-lock.json into
# build/mcp-node, again only when the lock changes), and `ward serve --mcp`
# on ports the kernel picks.  Everything started here is killed by pid when
# the script ends (tests/serve/lib.bash).
. "$(dirname "${BASH_SOURCE[0]}")/../serve/lib.bash"
MCP_DIR=$ROOT/tests/mcp
NODE_DIR=${NODE_DIR:-$ROOT/build/mcp-node}

# node_ready — node >= 20 and the clients installed under $NODE_DIR; 1
# (with a note) when that cannot be had here.
node_ready() {
	command -v node >/dev/null && command -v npm >/dev/null || { echo "# node/npm missing: MCP client tests skipped"; return 1; }
	[ "$(node -e 'console.log(+process.versions.node.split(".")[0] >= 20 ? 1 : 0)')" = 1 ] ||
		{ echo "# node $(node --version) is older than 20: MCP client tests skipped"; return 1; }
	mkdir -p "$NODE_DIR"
	local want have
	want=$(sha256sum "$MCP_DIR/package-lock.json" | cut -d' ' -f1)
	have=$(cat "$NODE_DIR/.lock-sha" 2>/dev/null || true)
	if [ "$want" != "$have" ] || [ ! -d "$NODE_DIR/node_modules/@modelcontextprotocol/sdk" ]; then
		cp "$MCP_DIR/package.json" "$MCP_DIR/package-lock.json" "$NODE_DIR/"
		(cd "$NODE_DIR" && timeout 300 npm ci --no-audit --no-fund >"$NODE_DIR/npm.log" 2>&1) ||
			{ echo "# npm ci failed (no registry?): MCP client tests skipped: $(tail -3 "$NODE_DIR/npm.log")"; return 1; }
		echo "$want" >"$NODE_DIR/.lock-sha"
	fi
	cp "$MCP_DIR"/*.mjs "$NODE_DIR/"
}

# client MODE PART... — the SDK's client (client.mjs) over stdio or http
client() {
	(cd "$NODE_DIR" && WARD=$WARD WARD_ROOT=$ROOT timeout -k 5 "${CLIENT_TIMEOUT:-600}" node client.mjs "$@")
}

# inspector ARGS... — the MCP Inspector's CLI, as a user runs it
inspector() {
	(cd "$NODE_DIR" && timeout -k 5 120 node node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js --cli "$@")
}

# start_mcp NAME [ARGS...] — ward serve with --mcp on port 0; sets MCP_URL
# (and URL, SRV_PID, SRV_LOG as start_server does).
start_mcp() {
	start_server "$@" --mcp 127.0.0.1:0 || return 1
	local a _
	for _ in $(seq 100); do
		a=$(sed -n 's/.*"event":"listening-dialect","message":"mcp \([^"]*\)".*/\1/p' "$SRV_LOG" | head -1)
		[ -n "$a" ] && break
		sleep 0.1
	done
	[ -n "$a" ] || { fail "start the mcp listener $1" "no listening-dialect in the log"; return 1; }
	MCP_URL=http://$a
}

# rpc BODY [CURL ARGS...] — POST /mcp on $MCP_URL (BODY @FILE: FILE's
# bytes); prints "CODE BODY", the
# answer's headers in $SERVE_TMP/rpc.h
rpc() {
	local body=$1
	shift
	curl -s --max-time 30 -o "$SERVE_TMP/rpc.b" -D "$SERVE_TMP/rpc.h" -w '%{http_code}' -X POST \
		-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
		--data-binary "$body" "$@" "$MCP_URL/mcp"
	printf ' %s' "$(tr -d '\n' <"$SERVE_TMP/rpc.b")"
}

# mcp_sid — the Mcp-Session-Id of the last rpc's answer
mcp_sid() { sed -n 's/^[Mm]cp-[Ss]ession-[Ii]d: *\([^\r]*\).*/\1/p' "$SERVE_TMP/rpc.h"; }

INIT='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}'
