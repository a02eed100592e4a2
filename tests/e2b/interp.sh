#!/bin/bash
# tests/e2b/interp.sh — the code interpreter as IPython, with E2B's charts,
# js/ts/bash contexts and its bounds (SPEC §18), with the real SDK
# (tests/e2b/interp.mjs): in code-interpreter-v1 built by `make
# code-interpreter-image`'s script from Debian's packages, which
# Sandbox.create() asks for by default; in a template without IPython or
# node (tests/image/build-image's mpl image), where the plain kernel runs
# and js answers 400 naming node; and what ward doctor says of them.  Both
# images are cached under build/image-cache (only the first run downloads;
# its time is bounded).
. "$(dirname "$0")/lib.bash"
skip() { echo "PASS: e2b interp skipped: $1"; exit 0; }
node_ready || exit 0
[ "$(id -u)" = 0 ] || skip "building the images needs root"
command -v mmdebstrap >/dev/null && command -v umoci >/dev/null || skip "mmdebstrap or umoci is not installed"
unreachable() {
	grep -qiE "could not resolve|temporary failure|failed to fetch|unable to connect|connection (refused|timed out)|network is unreachable|release file .* is not valid" "$1"
}
STORE=$SERVE_TMP/store
timeout -k 5 "${WARD_IMAGE_BUILD_TIMEOUT:-420}" "$ROOT/scripts/code-interpreter-image" "$STORE" >"$SERVE_TMP/ci.log" 2>&1 || {
	unreachable "$SERVE_TMP/ci.log" && skip "the Debian archive is unreachable"
	fail "scripts/code-interpreter-image" "$(tail -c 600 "$SERVE_TMP/ci.log")"
	exit 0
}
P=$(timeout -k 5 "${WARD_IMAGE_BUILD_TIMEOUT:-420}" "$ROOT/tests/image/build-image" mpl python3-matplotlib 2>"$SERVE_TMP/mpl.log") || {
	unreachable "$SERVE_TMP/mpl.log" && skip "the Debian archive is unreachable"
	fail "build the mpl image" "$(tail -c 600 "$SERVE_TMP/mpl.log")"
	exit 0
}
out=$("$WARD" image import --image-store "$STORE" mpl "oci:$P:1" 2>&1) || { fail "ward image import mpl" "$out"; exit 0; }
# ward doctor says which kernel each template gives
d=$(WARD_IMAGE_STORE=$STORE "$WARD" doctor 2>&1 | grep '^  interpreter')
case "$d" in
*"code-interpreter-v1: IPython "[0-9]*", node v"*" with TypeScript "*", bash"*) pass "ward doctor: code-interpreter-v1 gives IPython, node with TypeScript, bash" ;;
*) fail "ward doctor names the kernels of code-interpreter-v1" "$d" ;;
esac
printf 'alice sekrit-alice-0123456789\n' >"$SERVE_TMP/tokens"
start_e2b interp --token-file "$SERVE_TMP/tokens" --image code-interpreter-v1 --image mpl --image-store "$STORE" || exit 1
KEY=sekrit-alice-0123456789 SDK_TIMEOUT=300 sdk interp.mjs ipython | tee "$SERVE_TMP/ipython.out"
rc=${PIPESTATUS[0]}
[ $rc -eq 0 ] || [ $rc -eq 1 ] || fail "interp.mjs ipython" "exited $rc (timeout or crash): $(tail -c 600 "$SRV_LOG")"
# the timed-out executions were ended by their connection's close, seen by
# the next call or the stream itself, not by a keepalive that found the
# client gone seconds later
ctx=$(sed -n 's/^# timed-out context \([0-9a-f]*\)$/\1/p' "$SERVE_TMP/ipython.out")
n=$(grep -c "\"e2b-interrupt\".*context $ctx: its client left (seen by" "$SRV_LOG")
if [ -n "$ctx" ] && [ "$n" -eq 2 ]; then pass "each timed-out runCode was interrupted as its client left (2 e2b-interrupt lines)"
else fail "the timed-out runCodes were interrupted as their client left" "context '$ctx': $n e2b-interrupt lines"; fi
KEY=sekrit-alice-0123456789 SDK_TIMEOUT=180 sdk interp.mjs plain mpl
rc=$?
[ $rc -eq 0 ] || [ $rc -eq 1 ] || fail "interp.mjs plain" "exited $rc (timeout or crash): $(tail -c 600 "$SRV_LOG")"
stop_e2b interp
