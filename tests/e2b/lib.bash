# tests/e2b/lib.bash — sourced by tests/e2b/*.sh (not a test itself):
# `ward serve --e2b` on ports the kernel picks, and the real E2B SDK
# (package.json pins e2b 2.51.0 and @e2b/code-interpreter 2.8.0; `npm ci`
# from package-lock.json into build/e2b-node, again only when the lock
# changes).  Everything started here is killed by pid when the script ends.
. "$(dirname "${BASH_SOURCE[0]}")/../serve/lib.bash"
E2B_DIR=$ROOT/tests/e2b
PKG_DIR=${PKG_DIR:-$E2B_DIR}            # where package.json and its lock are
NODE_DIR=${NODE_DIR:-$ROOT/build/e2b-node}

# node_ready — node >= 20.18.1 and the SDK installed under $NODE_DIR; 1
# (with a note) when that cannot be had here.
node_ready() {
	command -v node >/dev/null && command -v npm >/dev/null || { echo "# node/npm missing: E2B SDK tests skipped"; return 1; }
	local v
	v=$(node -e 'const [a,b,c]=process.versions.node.split(".").map(Number);console.log(a>20||(a==20&&(b>18||(b==18&&c>=1)))?1:0)')
	[ "$v" = 1 ] || { echo "# node $(node --version) is older than 20.18.1: E2B SDK tests skipped"; return 1; }
	mkdir -p "$NODE_DIR"
	local want have
	want=$(sha256sum "$PKG_DIR/package-lock.json" | cut -d' ' -f1)
	have=$(cat "$NODE_DIR/.lock-sha" 2>/dev/null || true)
	if [ "$want" != "$have" ] || [ ! -d "$NODE_DIR/node_modules/e2b" ]; then
		cp "$PKG_DIR/package.json" "$PKG_DIR/package-lock.json" "$NODE_DIR/"
		(cd "$NODE_DIR" && timeout 300 npm ci --no-audit --no-fund >"$NODE_DIR/npm.log" 2>&1) ||
			{ echo "# npm ci failed (no registry?): E2B SDK tests skipped: $(tail -3 "$NODE_DIR/npm.log")"; return 1; }
		echo "$want" >"$NODE_DIR/.lock-sha"
	fi
	cp "$E2B_DIR"/*.mjs "$NODE_DIR/"
}

# start_e2b NAME [ARGS...] — ward serve with --e2b; sets E2B_URL (and
# URL, SRV_PID, SRV_LOG as start_server does).
start_e2b() {
	start_server "$@" --e2b 127.0.0.1:0 || return 1
	local a _
	for _ in $(seq 50); do
		a=$(sed -n 's/.*"event":"e2b-listening","message":"\([^ ]*\) .*/\1/p' "$SRV_LOG" | head -1)
		[ -n "$a" ] && break
		sleep 0.1
	done
	[ -n "$a" ] || { fail "start e2b listener $1" "no e2b-listening in the log"; return 1; }
	E2B_URL=http://$a
}

# sdk SCRIPT [ARGS...] — node $NODE_DIR/SCRIPT against $E2B_URL with $KEY
# (volumes' content API there too: E2B_VOLUME_API_URL)
sdk() {
	local s=$1; shift
	(cd "$NODE_DIR" && E2B_API_URL=$E2B_URL E2B_SANDBOX_URL=$E2B_URL E2B_VOLUME_API_URL=$E2B_URL \
		E2B_API_KEY=${KEY:-} E2B_DOMAIN=ward.invalid \
		timeout -k 5 "${SDK_TIMEOUT:-240}" node "$s" "$@")
}

# stop_e2b NAME — SIGTERM to the server started last; it must exit 0 and
# (under ASan) report nothing: the dialect's records, streams and threads
# all end with it.
stop_e2b() {
	stop_checked "$1" "e2b $1"
}

# start_alice NAME [ARGS...] — start_e2b with one token, alice's ($KEY)
KEY_ALICE=sekrit-alice-0123456789
start_alice() {
	printf 'alice %s\n' "$KEY_ALICE" >"$SERVE_TMP/tokens"
	local name=$1; shift
	start_e2b "$name" --token-file "$SERVE_TMP/tokens" "$@"
}

# sdk_checked SCRIPT [ARGS...] — sdk as alice; a FAIL when it did not end
# with its own verdict (0 or 1: a timeout or a crash)
sdk_checked() {
	KEY=$KEY_ALICE sdk "$@"
	local rc=$?
	[ $rc -eq 0 ] || [ $rc -eq 1 ] || fail "$*" "exited $rc (timeout or crash): $(tail -c 600 "$SRV_LOG")"
}

# vols_unmounted_at_exit DIR — every volume under DIR (--e2b-volumes) that a
# run left mounted is unmounted when the script ends, whatever it did (by
# path: only ours), before the servers are stopped and SERVE_TMP removed
vols_unmounted_at_exit() {
	VOLS_AT_EXIT=$1
	trap '_vol_cleanup; _serve_cleanup' EXIT
}
_vol_cleanup() {
	local m
	[ -n "${FROZEN:-}" ] && fsfreeze -u "$FROZEN" 2>/dev/null # (thawed first: a frozen one blocks its unmount)
	for m in "$VOLS_AT_EXIT"/*/root; do
		[ -d "$m" ] && mountpoint -q "$m" && umount -l "$m"
	done
}
