#!/bin/bash
# tests/e2b/snapkeys.sh — snapshots and templates between API keys (SPEC §18
# Fork and snapshots, §19) with the real SDK (tests/e2b/snapkeys.mjs), the
# second review's tmpl_cross, snap_overwrite, snap_name and snap_cap: a
# template build never starts from another key's template or snapshot (by
# fromTemplate, by its alias's or its snapshot's name in the store), and
# answers as for a base that does not exist; snapshot names are each key's
# (bob's prod-env beside alice's, bob's template shared beside her snapshot
# e2b-shared); an image built on a base the operator maps to a snapshot
# keeps none of ward's labels; a key's snapshots are capped in count and
# bytes, and one refused leaves no layer in the store.
. "$(dirname "$0")/lib.bash"
[ "$(id -u)" = 0 ] || { echo "PASS: e2b snapkeys skipped (needs root)"; exit 0; }
node_ready || exit 0
M=$("$ROOT/tests/image/build-image" minbase) || { fail "snapkeys: build the minbase image"; exit 0; }
ST=$SERVE_TMP/store
"$WARD" image import --image-store "$ST" minbase:latest "oci:$M:1" >/dev/null 2>&1 || { fail "snapkeys: import minbase"; exit 0; }
export TMPDIR=$SERVE_TMP STORE=$ST
KEY_BOB=sekrit-bob-0123456789 KEY_CAROL=sekrit-carol-0123456789
printf 'alice %s\nbob %s\ncarol %s\n' "$KEY_ALICE" "$KEY_BOB" "$KEY_CAROL" >"$SERVE_TMP/tokens"
H=$(printf alice | sha256sum | cut -c1-16)
start_e2b snapkeys --token-file "$SERVE_TMP/tokens" --image-store "$ST" --e2b-state "$SERVE_TMP/state" \
	--image minbase --e2b-base debian:stable=minbase:latest --e2b-base "snapbase=e2b-snap/$H/alice-snap:default" \
	--e2b-max-snapshots 4 --e2b-snapshot-bytes 10485760 || exit 1
sdk_checked snapkeys.mjs alice
KEY=$KEY_BOB sdk snapkeys.mjs bob
sdk_checked snapkeys.mjs alice2
KEY=$KEY_CAROL sdk snapkeys.mjs cap
# the image bob built on alice's snapshot (the operator's mapping) keeps none of ward.*
labels=$(python3 - "$ST" <<'PY'
import json, sys
st = sys.argv[1]
ix = json.load(open(st + "/index.json"))
ims = ix["images"] if isinstance(ix, dict) and "images" in ix else ix
def cfg(name):
    for im in ims:
        if im.get("name") == name:
            c = json.load(open(st + "/blobs/sha256/" + im["config"].split(":")[-1]))
            return sorted(k for k in (c.get("config", {}).get("Labels") or {}) if k.startswith("ward."))
    return None
print(cfg("e2b-snap/" + __import__("hashlib").sha256(b"alice").hexdigest()[:16] + "/alice-snap"), cfg("e2b-bob-from-snap"))
PY
)
expect_eq "snapkeys: alice's snapshot has ward's labels, bob's image built on it none" \
	"['ward.e2b.snapshot', 'ward.e2b.snapshot.owner', 'ward.e2b.snapshot.sandbox', 'ward.e2b.snapshot.template'] []" "$labels"
stop_e2b snapkeys
