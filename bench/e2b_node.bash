# bench/e2b_node.bash — sourced by bench/e2b.sh and bench/e2b_life.sh (not a
# bench itself): ROOT, WARD, NODE_DIR, and the E2B SDK installed there from
# tests/e2b's lockfile (npm ci, again only when the lock changes); exits 3
# (skipped) without node/npm.  Then SCRIPT.mjs (the first argument) copied
# beside it.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 2
WARD=${WARD:-build/ward}
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
