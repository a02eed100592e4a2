#!/bin/bash
# The store (SPEC §14): sources ward reads itself, layers kept once, two
# imports at once, a full disk, a crash mid-import, rm of an image in use,
# and the CLI's shapes.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lib.bash"
[ "$(id -u)" = 0 ] || { echo "PASS: store skipped (needs root)"; exit 0; }

python3 "$OCI" case good "$T/good" >/dev/null

# oci:DIR[:REF], and the ls/inspect shapes.
wimg import py:3 "oci:$T/good:latest"
check "oci: imported" [ "$RC" -eq 0 ]
expect_contains "import prints the digest" "$OUT" "sha256:"
wimg ls --json
expect_eq "ls --json shape" '["py", "3", 71, 44, 2, "2024-01-02T03:04:05Z"]' \
	"$(jg "$OUT" '[d[0]["name"], d[0]["tag"], len(d[0]["digest"]), d[0]["size"], d[0]["layers"], d[0]["created"]]')"
wimg inspect py:3
expect_eq "inspect: config" '[["PATH=/usr/bin:/bin", "LANG=C.UTF-8"], ["/bin/sh"], "0:0"]' \
	"$(jg "$OUT" '[d["config"]["Env"], d["config"]["Cmd"], d["config"]["User"]]')"
L1=$(layer_dir py:3 1)
expect_eq "inspect: layer paths are the store's" "$S/layers/sha256" "$(dirname "$L1")"
expect_eq "layer: files unpacked" "hello" "$(cat "$L1/bin/hello2" | tail -1 | cut -d' ' -f2)"
expect_eq "store dirs are 0700" "700 700" "$(stat -c %a "$S" "$S/layers" | tr '\n' ' ' | sed 's/ $//')"
wimg inspect nosuch
expect_contains "inspect: unknown image named" "$OUT" "no image nosuch:latest"
wimg import "Bad/../name" "oci:$T/good"
expect_contains "import: bad name refused" "$OUT" "image name"
wimg import x "tar:$T/good"
expect_contains "import: unknown source names the ones there are" "$OUT" "give oci:DIR[:REF]"

# WARD_IMAGE_STORE is the default store.
expect_contains "WARD_IMAGE_STORE" "$(WARD_IMAGE_STORE=$S "$WARD" image ls)" "py "

# Layers are kept once: the same image under another name, and from an
# oci-archive (a tar of the layout, unpacked as hostile as a layer).
tar -C "$T/good" -cf "$T/good.tar" .
wimg import other "oci-archive:$T/good.tar"
check "oci-archive: imported" [ "$RC" -eq 0 ]
expect_eq "layers kept once" "2" "$(ls "$S/layers/sha256" | wc -l)"
wimg rm py:3
check "rm: removed" [ "$RC" -eq 0 ]
expect_eq "rm: layers another image uses stay" "2" "$(ls "$S/layers/sha256" | wc -l)"
wimg rm other
expect_eq "rm: the last user's layers go" "" "$(ls -A "$S/layers/sha256" "$S/blobs/sha256" | grep -v : | tr -d '\n')"

# rootfs:FILE.tar[.gz|.zst]: one layer, no config (PATH given).
python3 "$OCI" tar "$T/r.tar" bin/x=hi
gzip -k "$T/r.tar"
zstd -q "$T/r.tar" -o "$T/r.tar.zst"
for f in r.tar r.tar.gz r.tar.zst; do
	wimg import "root:${f//./-}" "rootfs:$T/$f"
	check "rootfs: $f imported" [ "$RC" -eq 0 ]
done
expect_eq "rootfs: the three are one layer" "1" "$(ls "$S/layers/sha256" | wc -l)"
wimg inspect root:r-tar-zst
expect_contains "rootfs: a PATH is given" "$OUT" "PATH=/usr/local/sbin"

# skopeo missing: the error names the package.
OUT=$(PATH=/nonexistent "$WARD" image import d "docker-archive:$T/nothing.tar" --image-store "$S" 2>&1)
expect_contains "skopeo missing: names the package" "$OUT" "apt-get install skopeo"

# rm of an image in use: a sandbox holds a shared flock on pins/DIGEST
# (ward_image_open); a python process holding one stands in for it here.
S=$T/store-pin
wimg import pinned "oci:$T/good"
hex=$(jg "$("$WARD" image ls --json --image-store "$S")" 'd[0]["digest"][7:]')
python3 -c 'import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_SH)
time.sleep(30)' "$S/pins/$hex" &
holder=$!
for _ in $(seq 100); do flock -xn "$S/pins/$hex" true || break; sleep 0.1; done
wimg rm pinned
expect_contains "rm: refused while in use" "$OUT" "image pinned:latest is in use by a running sandbox; retry when it ends"
expect_eq "rm: the image stays listed" "1" "$(jg "$("$WARD" image ls --json --image-store "$S")" 'len(d)')"
# Imported again over the pinned one (another image under the same name):
# the old layers stay while it is pinned.
python3 "$OCI" case three "$T/three" >/dev/null
wimg import pinned "oci:$T/three"
expect_eq "re-import over a pinned image keeps its layers" "5" "$(ls "$S/layers/sha256" | wc -l)"
kill "$holder"
wait "$holder" 2>/dev/null
wimg rm pinned
check "rm: works once released" [ "$RC" -eq 0 ]
if store_clean; then pass "rm: the unpinned old layers went too"; else fail "rm: the unpinned old layers went too" "$(ls "$S/layers/sha256")"; fi

# Two (four) imports of the same image at once: all succeed, one copy.
S=$T/store-conc
python3 "$OCI" random "$T/rand" 24 >/dev/null
pids=()
for i in 1 2 3 4; do
	"$WARD" image import --image-store "$S" "same:$((i % 2))" "oci:$T/rand" >"$T/conc$i" 2>&1 &
	pids+=($!)
done
ok=0
for i in 1 2 3 4; do wait "${pids[$((i - 1))]}" && ok=$((ok + 1)) || echo "import $i: $(cat "$T/conc$i")" >&2; done
expect_eq "concurrent imports: all four succeed" "4" "$ok"
expect_eq "concurrent imports: two names, one layer, tmp/ empty" "2 1 0" \
	"$(jg "$("$WARD" image ls --json --image-store "$S")" 'len(d)') $(ls "$S/layers/sha256" | wc -l) $(ls -A "$S/tmp" | wc -l)"
L1=$(layer_dir same:0 1)
expect_eq "concurrent imports: the layer is whole" "25165824" "$(stat -c %s "$L1/random")"

# A crash mid-import (SIGKILL): only tmp/ garbage, removed at the next open.
S=$T/store-crash
python3 "$OCI" random "$T/big" 256 >/dev/null
"$WARD" image import --image-store "$S" big "oci:$T/big" >/dev/null 2>&1 &
p=$!
for _ in $(seq 200); do
	[ -n "$(find "$S/tmp" -name random 2>/dev/null)" ] && break
	sleep 0.02
done
kill -9 "$p"
wait "$p" 2>/dev/null
expect_eq "crash: nothing listed, no layer" "[] 0" \
	"$("$WARD" image ls --json --image-store "$S") $(ls "$S/layers/sha256" | wc -l)"
expect_eq "crash: tmp/ garbage removed at the next open" "0" "$(ls -A "$S/tmp" | wc -l)"

# A full disk: an 8 MiB tmpfs store, a 20 MiB image.
mkdir -p "$T/small"
if mount -t tmpfs -o size=8m tmpfs "$T/small"; then
	MOUNTS+=("$T/small")
	S=$T/small/store
	python3 "$OCI" random "$T/r20" 20 >/dev/null
	wimg import full "oci:$T/r20"
	if [ "$RC" -ne 0 ]; then pass "disk full: refused"; else fail "disk full: refused" "$OUT"; fi
	expect_contains "disk full: says so" "$OUT" "the image store's filesystem is full"
	if store_clean; then pass "disk full: nothing listed, nothing left"; else fail "disk full: nothing listed, nothing left" "$(find "$S" | head)"; fi
	wimg import small "oci:$T/good"
	check "disk full: the store still works" [ "$RC" -eq 0 ]
	umount "$T/small"
	MOUNTS=()
else
	fail "disk full: mount a tmpfs"
fi

# ward doctor reports the store and whether overlayfs mounts in a user namespace.
S=$T/store-doctor
python3 "$OCI" case good "$T/good2" >/dev/null
wimg import g "oci:$T/good2"
out=$(WARD_IMAGE_STORE=$S "$WARD" doctor 2>&1)
expect_contains "doctor: the store, its images" "$out" "store $S: 1 image,"
expect_contains "doctor: overlayfs in a user namespace" "$out" "overlay "
