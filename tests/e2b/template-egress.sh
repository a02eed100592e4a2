#!/bin/bash
# tests/e2b/template-egress.sh — an E2B template's aptInstall through the
# build egress (SPEC §19): ward serve --e2b-build-egress deb.debian.org lets
# a build's RUN reach the Debian archive through ward's proxy, and only it;
# the package is in Sandbox.create(alias); the runner's --egress-resolve
# pins hold for builds.  Needs the Debian archive (a FAIL names it when it
# is not reachable).
. "$(dirname "$0")/lib.bash"
[ "$(id -u)" = 0 ] || { echo "PASS: e2b template egress skipped (needs root)"; exit 0; }
node_ready || exit 0
M=$("$ROOT/tests/image/build-image" minbase) || { fail "template egress: build the minbase image"; exit 0; }
ST=$SERVE_TMP/store
"$WARD" image import --image-store "$ST" minbase:1 "oci:$M:1" >/dev/null 2>&1 ||
	{ fail "template egress: import minbase"; exit 0; }
export TMPDIR=$SERVE_TMP
# the archive's names as this host resolves them, pinned (the proxy reaches
# no reserved address unless told to: --egress-resolve)
PINS=
for n in deb.debian.org security.debian.org; do
	a=$(getent ahostsv4 $n | awk 'NR==1{print $1}')
	[ -n "$a" ] && PINS="$PINS --egress-resolve $n:$a"
done
start_alice tmpl-egress --image-store "$ST" --e2b-base debian:stable=minbase:1 \
	--e2b-build-egress deb.debian.org,security.debian.org $PINS || exit 1
SDK_TIMEOUT=600 sdk_checked templates.mjs egress
stop_e2b tmpl-egress
