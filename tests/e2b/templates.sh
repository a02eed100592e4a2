#!/bin/bash
# tests/e2b/templates.sh — E2B templates (SPEC §19) with the real SDK
# (tests/e2b/templates.mjs): Template() code built by ward serve --e2b on a
# base image of the store (tests/image/build-image minbase, cached), then
# Sandbox.create('alias') on it; the hostile ends under --max-body 2097152: an
# unknown base, a failing step, installs without the network, an upload
# over its cap, an upload link without its token, uploads that climb out
# of the context or are no tar (tests/e2b/template_raw.py).  A build's context and
# uploads are gone when the server stops.
. "$(dirname "$0")/lib.bash"
[ "$(id -u)" = 0 ] || { echo "PASS: e2b templates skipped (needs root)"; exit 0; }
node_ready || exit 0
M=$("$ROOT/tests/image/build-image" minbase) || { fail "templates: build the minbase image"; exit 0; }
ST=$SERVE_TMP/store
"$WARD" image import --image-store "$ST" minbase:1 "oci:$M:1" >/dev/null 2>&1 ||
	{ fail "templates: import minbase"; exit 0; }
export TMPDIR=$SERVE_TMP

start_alice tmpl --image-store "$ST" --e2b-base debian:stable=minbase:1 || exit 1
mkdir -p "$SERVE_TMP/ctx"
CTX=$SERVE_TMP/ctx sdk_checked templates.mjs build
expect_contains "templates: the built image is in the store" "$("$WARD" image ls --image-store "$ST" 2>&1)" "e2b-ward-tmpl"
stop_e2b tmpl
check "templates: the uploads and contexts went with the server" \
	[ -z "$(ls -d "$SERVE_TMP"/ward-e2b-templates.* 2>/dev/null)" ]

start_alice tmpl-hostile --image-store "$ST" --e2b-base debian:stable=minbase:1 --max-body 2097152 || exit 1
mkdir -p "$SERVE_TMP/ctx2"
CTX=$SERVE_TMP/ctx2 sdk_checked templates.mjs hostile
expect_contains "templates: a failed build is logged" "$(cat "$SRV_LOG")" "e2b-template-failed"
# an upload link is its template's token: without it, or with another, nothing is kept
TID=$(sed -n 's/.*"event":"e2b-template-new","message":"\([0-9a-f]*\) .*/\1/p' "$SRV_LOG" | head -1)
H=$(printf '%064d' 0)
for q in "" "?token=0123456789abcdef0123456789abcdef"; do
	code=$(curl -s -o /dev/null -w '%{http_code}' -X PUT --data-binary planted "$E2B_URL/ward/template-files/$TID.$H$q")
	expect_eq "templates: an upload link without its token ('$q'): 404" 404 "$code"
done
check "templates: nothing planted" [ -z "$(find "$SERVE_TMP"/ward-e2b-templates.* -name "$H" 2>/dev/null)" ]
# past the SDK: uploads that climb out, write through a link, or are no tar
OUTSIDE=$SERVE_TMP/outside/planted
mkdir -p "$SERVE_TMP/outside"
python3 "$E2B_DIR/template_raw.py" "$E2B_URL" "$KEY_ALICE" "$OUTSIDE"
stop_e2b tmpl-hostile
