# bench/e2b_node.bash — sourced by bench/e2b.sh and bench/e2b_life.sh (not a
# bench itself): ROOT, WARD, NODE_DIR, and the E2B SDK installed there from
# tests/e2b's lockfile (npm ci, again only when the lock changes); exits 3
# (skipped) without node/npm.  Then SCRIPT.mjs (the first argument) copied
# beside it; e2b_serve starts the server.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 2
WARD=${WARD:-build/ward}
. "$ROOT/tests/lib.sh" # stop_pids
NODE_DIR=$ROOT/build/e2b-node
me=bench/$(basename "$0")
command -v node >/dev/null && command -v npm >/dev/null || { echo "$me: no node/npm" >&2; exit 3; }
mkdir -p "$NODE_DIR"
want=$(sha256sum tests/e2b/package-lock.json | cut -d' ' -f1)
if [ "$want" != "$(cat "$NODE_DIR/.lock-sha" 2>/dev/null)" ] || [ ! -d "$NODE_DIR/node_modules/e2b" ]; then
	cp tests/e2b/package.json tests/e2b/package-lock.json "$NODE_DIR/"
	(cd "$NODE_DIR" && timeout 300 npm ci --no-audit --no-fund >npm.log 2>&1) || { echo "$me: npm ci failed" >&2; exit 3; }
	echo "$want" >"$NODE_DIR/.lock-sha"
fi
cp "bench/$1" "$NODE_DIR/"

# e2b_serve DIR [ARGS...] — ward serve ($SERVE_WARD, else $WARD) with --e2b and ARGS,
# the token bench-token-0123456789 in DIR/tokens, its log DIR/log; killed by pid and DIR
# removed when the script ends (every one started so).  Sets pid, e (the
# E2B listener's address) and n (the native one's); exits 2 when it does
# not start.
_E2B_PIDS=
_E2B_DIRS=()
_e2b_end() {
	# shellcheck disable=SC2086
	stop_pids $_E2B_PIDS
	rm -rf "${_E2B_DIRS[@]}"
}
trap _e2b_end EXIT
e2b_serve() {
	T=$1
	shift
	_E2B_DIRS+=("$T")
	echo "bench bench-token-0123456789" >"$T/tokens"
	"${SERVE_WARD:-$WARD}" serve --listen 127.0.0.1:0 --e2b 127.0.0.1:0 --token-file "$T/tokens" --log "$T/log" "$@" \
		</dev/null >"$T/out" 2>&1 &
	pid=$!
	_E2B_PIDS="$_E2B_PIDS $pid"
	for _ in $(seq 100); do
		e=$(sed -n 's/.*"event":"e2b-listening","message":"\([^ ]*\) .*/\1/p' "$T/log" 2>/dev/null | head -1)
		n=$(sed -n 's/.*"event":"listening","message":"\([^ ]*\) .*/\1/p' "$T/log" 2>/dev/null | head -1)
		[ -n "$e" ] && [ -n "$n" ] && break
		sleep 0.1
	done
	[ -n "$e" ] || { echo "$me: ward serve did not start: $(head -c 400 "$T/out")" >&2; exit 2; }
}
