#!/bin/bash
# tests/e2b/matplotlib.sh — the code interpreter's matplotlib figures as
# `png` results (SPEC §17), with the real SDK (tests/e2b/matplotlib.mjs), in
# a sandbox made from a real Debian image with python3-matplotlib
# (tests/image/build-image, cached; tests/run prebuilds it in the
# background) offered as the template "mpl".
. "$(dirname "$0")/lib.bash"
skip() { echo "PASS: e2b matplotlib skipped: $1"; exit 0; }
node_ready || exit 0
[ "$(id -u)" = 0 ] || skip "building the image needs root"
command -v mmdebstrap >/dev/null && command -v umoci >/dev/null || skip "mmdebstrap or umoci is not installed"
# Ready in the cache (tests/run's background prebuild made it): taken
# without build-image's lock, which a build of another image may hold.
key=$({ cat "$ROOT/tests/image/build-image"; echo "mpl python3-matplotlib"; } | sha256sum | cut -c1-16)
P=$ROOT/build/image-cache/mpl-$key/oci rc=0
# (bounded to leave tests/run's 600 s per script room for the rest)
[ -e "$ROOT/build/image-cache/mpl-$key/done" ] ||
	{ P=$(timeout -k 5 "${WARD_IMAGE_BUILD_TIMEOUT:-420}" "$ROOT/tests/image/build-image" mpl python3-matplotlib 2>"$SERVE_TMP/build.log"); rc=$?; }
if [ $rc -ne 0 ]; then
	# the archive out of reach is a skip; anything else a failure
	if grep -qiE "could not resolve|temporary failure|failed to fetch|unable to connect|connection (refused|timed out)|network is unreachable|release file .* is not valid" "$SERVE_TMP/build.log"; then
		skip "the Debian archive is unreachable ($(grep -iE -m1 'resolve|fetch|connect|unreachable|release' "$SERVE_TMP/build.log" | head -c 200))"
	fi
	fail "build the mpl image (tests/image/build-image mpl python3-matplotlib)" "exited $rc: $(tail -c 600 "$SERVE_TMP/build.log")"
	exit 0
fi
STORE=$SERVE_TMP/store
out=$("$WARD" image import --image-store "$STORE" mpl "oci:$P:1" 2>&1) ||
	{ fail "ward image import mpl" "$out"; exit 0; }
printf 'alice sekrit-alice-0123456789\n' >"$SERVE_TMP/tokens"
start_e2b mpl --token-file "$SERVE_TMP/tokens" --image mpl --image-store "$STORE" || exit 1
start=$(date +%s.%N)
KEY=sekrit-alice-0123456789 SDK_TIMEOUT=180 sdk matplotlib.mjs mpl
rc=$?
[ $rc -eq 0 ] || [ $rc -eq 1 ] || fail "matplotlib.mjs" "exited $rc (timeout or crash): $(tail -c 600 "$SRV_LOG")"
echo "# the SDK's part took $(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}') s"
stop_e2b mpl
