# tests/dialect/dialect.bash — sourced by tests/dialect/*.sh: a runner with
# dialect listeners, the npm client installed once per lock.
. "$(dirname "${BASH_SOURCE[0]}")/../serve/lib.bash"
DDIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
NODE_DIR=$ROOT/build/dialect-node

skip() { echo "SKIP: $1"; }

# jg JSON EXPR — python3 evaluates EXPR with d = the parsed JSON
jg() { /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$2" <<<"$1" 2>/dev/null; }

# start_dialects NAME ARGS... — a runner with the table, dialects on port 0
start_dialects() {
	local name=$1; shift
	start_server "$name" --languages "$ROOT/languages.json" --max-concurrent 2 "$@"
}

# dialect_url NAME — the address the dialect NAME listens on (from the log)
dialect_url() {
	local a _
	for _ in $(seq 100); do
		a=$(sed -n "s/.*\"event\":\"listening-dialect\",\"message\":\"$1 \([^\"]*\)\".*/\1/p" "$SRV_LOG" | tail -1)
		[ -n "$a" ] && break
		sleep 0.1
	done
	echo "http://$a"
}

# node_modules_ready — npm ci from the lock into build/dialect-node, once per lock
node_modules_ready() {
	local stamp=$NODE_DIR/.lock-sha
	local want
	want=$(sha256sum "$DDIR/package-lock.json" | cut -d' ' -f1)
	[ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && return 0
	rm -rf "$NODE_DIR"; mkdir -p "$NODE_DIR"
	cp "$DDIR/package.json" "$DDIR/package-lock.json" "$NODE_DIR/"
	(cd "$NODE_DIR" && timeout 180 npm ci --no-audit --no-fund >npm.log 2>&1) || return 1
	echo "$want" >"$stamp"
}

# stop_dialects NAME — the server started last (by start_dialects NAME)
# stops cleanly and, under ASan (tests/run asan), reports nothing: the
# dialects' submissions, runner and sender threads and the unpacked files
# all end with it.
stop_dialects() {
	stop_checked "$1"
}
