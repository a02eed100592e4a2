#!/bin/bash
# tests/e2b/template-cli.sh — `e2b template create` (E2B's CLI, @e2b/cli
# pinned in tests/e2b/cli/package.json) from a Dockerfile against ward serve
# --e2b (SPEC §19): it builds on a base of the store (tests/image/build-image
# minbase, cached); Sandbox.create(name) with the real SDK then sees the
# Dockerfile's files and env (tests/e2b/templates.mjs cli).
. "$(dirname "$0")/lib.bash"
[ "$(id -u)" = 0 ] || { echo "PASS: e2b template create skipped (needs root)"; exit 0; }
node_ready || exit 0
SDK_NODE=$NODE_DIR
PKG_DIR=$E2B_DIR/cli NODE_DIR=$ROOT/build/e2b-cli-node node_ready || exit 0
CLI=$ROOT/build/e2b-cli-node/node_modules/.bin/e2b
M=$("$ROOT/tests/image/build-image" minbase) || { fail "template create: build the minbase image"; exit 0; }
ST=$SERVE_TMP/store
"$WARD" image import --image-store "$ST" minbase:1 "oci:$M:1" >/dev/null 2>&1 ||
	{ fail "template create: import minbase"; exit 0; }
export TMPDIR=$SERVE_TMP
start_alice tmpl-cli --image-store "$ST" --e2b-base debian:bookworm=minbase:1 || exit 1
D=$SERVE_TMP/proj
mkdir -p "$D/site"
echo 'served by ward' >"$D/site/index.html"
cat >"$D/e2b.Dockerfile" <<'EOD'
FROM debian:bookworm
ENV SITE_NAME=mysite OTHER=2
COPY site /srv/site
RUN echo "from a RUN" > /srv/site/run.txt
WORKDIR /srv/site
EOD
OUT=$(cd "$D" && E2B_API_URL=$E2B_URL E2B_API_KEY=$KEY_ALICE E2B_DOMAIN=ward.invalid timeout -k 5 300 "$CLI" template create cli-tmpl --cpu-count 1 --memory-mb 512 2>&1)
rc=$?
expect_eq "template create: e2b template create exits 0" 0 "$rc"
[ "$rc" = 0 ] || echo "# $(echo "$OUT" | tail -15)"
NODE_DIR=$SDK_NODE sdk_checked templates.mjs cli
stop_e2b tmpl-cli
