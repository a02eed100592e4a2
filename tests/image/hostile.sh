#!/bin/bash
# Hostile layers (SPEC §14, docs/security.md "Images: the unpack threat
# model"): each case is a real OCI layout made by oci.py whose layer aims at
# $TARGET, a host directory outside the store.  Checked: nothing appears
# there, the entry is dropped or the import refused as designed, and a
# refused import leaves nothing in the store.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lib.bash"
[ "$(id -u)" = 0 ] || { echo "PASS: hostile layers skipped (needs root: whiteouts are device nodes)"; exit 0; }
TARGET=$T/target
mkdir -p "$TARGET"

# refused CASE MESSAGE [IMPORT OPTIONS...]
refused() {
	local c=$1 msg=$2
	local S=$T/store-$c # a store of its own: it must stay empty
	shift 2
	rm -rf "$T/$c"
	python3 "$OCI" case "$c" "$T/$c" "$TARGET" >/dev/null
	wimg import "$@" "$c" "oci:$T/$c"
	if [ "$RC" -ne 0 ]; then pass "$c: refused"; else fail "$c: refused" "import succeeded: $OUT"; fi
	expect_contains "$c: says why" "$OUT" "$msg"
	if store_clean; then pass "$c: nothing left in the store"; else fail "$c: nothing left in the store" "$(find "$S" | head)"; fi
	expect_eq "$c: nothing written outside" "" "$(ls -A "$TARGET")"
}

# accepted CASE — imported as CASE; L1 = its bottom layer directory.
accepted() {
	local c=$1
	rm -rf "$T/$c"
	python3 "$OCI" case "$c" "$T/$c" "$TARGET" >/dev/null
	wimg import "$c" "oci:$T/$c"
	if [ "$RC" -eq 0 ]; then pass "$c: imported"; else fail "$c: imported" "$OUT"; fi
	L1=$(layer_dir "$c" 1)
	expect_eq "$c: nothing written outside" "" "$(ls -A "$TARGET")"
}

accepted absolute
if [ -f "$L1/${TARGET#/}/abs" ]; then pass "absolute: made relative to the layer"; else fail "absolute: made relative to the layer"; fi

refused dotdot "has a '..' part"
refused symlink-parent "planted as its parent"
refused symlink-parent-relative "planted as its parent"

accepted symlink-dot # umoci's CVE-2021-29136: a symlink named "."
if [ -f "$L1/pwned" ] && [ ! -L "$L1" ]; then pass "symlink-dot: '.' is the layer's own root"; else fail "symlink-dot: '.' is the layer's own root"; fi

accepted symlink-replaced
expect_eq "symlink-replaced: the file replaced the symlink, not its target" "mine" "$(cat "$L1/s" 2>&1)"

links=$(stat -c %h /etc/passwd)
refused hardlink-passwd "not a file unpacked earlier in this layer"
expect_eq "hardlink-passwd: /etc/passwd not linked" "$links" "$(stat -c %h /etc/passwd)"
refused hardlink-dotdot "has a '..' part"
refused hardlink-via-symlink "not a file unpacked earlier in this layer"
accepted hardlink-own-passwd
expect_eq "hardlink-own-passwd: links the layer's own file" "2 root:x:0:0::/:/bin/sh" \
	"$(stat -c %h "$L1/pw") $(cat "$L1/pw")"
expect_eq "hardlink-own-passwd: /etc/passwd not linked" "$links" "$(stat -c %h /etc/passwd)"

refused longname "over PATH_MAX"
refused longpart "over NAME_MAX"
refused dir-replaced "would replace a directory"

# A NUL inside a pax name: libarchive ends the name there ("nul"); whatever
# it makes of it, nothing may land outside.
rm -rf "$T/nul"
python3 "$OCI" case nul "$T/nul" "$TARGET" >/dev/null
wimg import nul "oci:$T/nul"
expect_eq "nul: nothing written outside" "" "$(ls -A "$TARGET")"
if [ "$RC" -eq 0 ]; then
	L1=$(layer_dir nul 1)
	expect_eq "nul: the name ends at the NUL" "nul" "$(ls "$L1")"
else
	pass "nul: refused ($OUT)"
fi

accepted devices
expect_contains "devices: character device named on stderr" "$OUT" "dropped 'null' (a device node)"
expect_contains "devices: block device named on stderr" "$OUT" "dropped 'sda' (a device node)"
expect_eq "devices: no device node unpacked" "" "$(find "$L1" -type c -o -type b)"
# A FIFO in a layer is one inode every sandbox on the image shares: dropped.
expect_contains "devices: FIFO named on stderr" "$OUT" "dropped 'fifo' (a FIFO"
expect_eq "devices: no FIFO unpacked, the file kept" "no-fifo k" \
	"$([ -e "$L1/fifo" ] || [ -L "$L1/fifo" ] && echo fifo || echo no-fifo) $(cat "$L1/kept")"

accepted modes
expect_eq "modes: setuid and setgid stripped, sticky /tmp kept" "755 775 1777 640" \
	"$(stat -c %a "$L1/suid" "$L1/sgid" "$L1/tmp" "$L1/plain" | tr '\n' ' ' | sed 's/ $//')"
expect_eq "modes: owned by root on the host" "0:0" "$(stat -c %u:%g "$L1/suid")"

accepted xattrs
expect_eq "xattrs: no file capability restored" "none" "$(xattr "$L1/capfile" security.capability)"
expect_eq "xattrs: no user xattr restored" "none" "$(xattr "$L1/capfile" user.note)"
expect_eq "xattrs: no overlay redirect restored" "none" "$(xattr "$L1/od" trusted.overlay.redirect)"
expect_eq "xattrs: no opaque flag from a pax header" "none" "$(xattr "$L1/od" trusted.overlay.opaque)"

# Whiteouts across three layers, then the layers mounted as the runtime
# will (overlayfs, lowerdir top first) in a mount namespace of this test's.
accepted whiteouts
L2=$(layer_dir whiteouts 2)
L3=$(layer_dir whiteouts 3)
expect_eq "whiteouts: .wh.f1 is a 0:0 character device" "character special file 0 0" \
	"$(stat -c '%F %t %T' "$L2/a/f1")"
expect_eq "whiteouts: .wh.c at the root too" "character special file" "$(stat -c %F "$L2/c")"
expect_eq "whiteouts: .wh..wh..opq marks the directory opaque" "y" "$(xattr "$L2/b" trusted.overlay.opaque)"
expect_eq "whiteouts: no .wh. file is left" "" "$(find "$L1" "$L2" "$L3" -name '.wh.*')"
expect_eq "whiteouts: a file of the same layer wins over its whiteout" "same-layer" "$(cat "$L2/d/same")"
merged=$(unshare -m sh -c 'mkdir -p "$4" && mount -t overlay overlay -o "lowerdir=$1:$2:$3" "$4" &&
	cd "$4" && echo $(cat a/f1) $(ls a) [$(ls -d b c 2>/dev/null)] $(ls d)' sh "$L3" "$L2" "$L1" "$T/merged" 2>&1)
expect_eq "whiteouts: overlayfs sees files deleted, recreated and opaque dirs" "new f1 f2 [] keep same" "$merged"

refused many "more than 100 entries" --max-image-inodes 100
refused three "3 layers" --max-image-layers 2
# A directory stated 300 times makes one inode, but each entry is work:
# all 300 count against the entry cap.
refused restated "more than 100 entries" --max-image-inodes 100

# A sparse file (GNU tar): 64 MiB long, 8 bytes of data.  Its holes are
# never written: the real bytes count against a 1 MiB cap, and on disk it
# takes a few blocks.
rm -rf "$T/sparse"
python3 "$OCI" case sparse "$T/sparse" >/dev/null
wimg import sparse "oci:$T/sparse"
if [ "$RC" -eq 0 ]; then pass "sparse: imported"; else fail "sparse: imported" "$OUT"; fi
L1=$(layer_dir sparse 1)
expect_eq "sparse: its size, head and tail kept" "67108864 head tail" \
	"$(stat -c %s "$L1/sparse" 2>&1) $(head -c 4 "$L1/sparse" 2>&1) $(tail -c 4 "$L1/sparse" 2>&1)"
blocks=$(stat -c %b "$L1/sparse" 2>/dev/null || echo 9999999)
if [ "$blocks" -lt 1024 ]; then pass "sparse: holes kept ($blocks blocks on disk)"; else fail "sparse: holes kept" "$blocks blocks"; fi
wimg inspect sparse
expect_contains "sparse: its size is the real bytes" "$OUT" '"size": 8'
S=$T/store-sparse-cap
wimg import sparse "oci:$T/sparse" --max-image-bytes 1M
if [ "$RC" -ne 0 ]; then pass "sparse: a size over the cap refused"; else fail "sparse: a size over the cap refused" "$OUT"; fi
expect_contains "sparse: says why" "$OUT" "more than 1048576 bytes"
S=$T/store

# Digests: each blob is checked before it is used.
for bad in blob diff config manifest; do
	S=$T/store-bad-$bad
	rm -rf "$T/bad-$bad"
	OCI_BAD=$bad python3 "$OCI" case good "$T/bad-$bad" >/dev/null
	wimg import "bad-$bad" "oci:$T/bad-$bad"
	if [ "$RC" -ne 0 ]; then pass "digest: bad $bad refused"; else fail "digest: bad $bad refused" "$OUT"; fi
	expect_contains "digest: bad $bad says so" "$OUT" "refused (a corrupt or tampered image)"
	if store_clean; then pass "digest: bad $bad leaves nothing"; else fail "digest: bad $bad leaves nothing"; fi
done

# A gzip bomb: 1 GiB of zeros in ~1 MiB, against a 64 MiB cap.
# (made once, ~1 MiB, cached with the real images)
S=$T/store-bomb
bomb=$ROOT/build/image-cache/bomb-1024
[ -e "$bomb/index.json" ] || { rm -rf "$bomb" && python3 "$OCI" bomb "$bomb.tmp" 1024 >/dev/null && mv "$bomb.tmp" "$bomb"; }
start=$(date +%s)
wimg import bomb "oci:$bomb" --max-image-bytes 64M
if [ "$RC" -ne 0 ]; then pass "bomb: refused"; else fail "bomb: refused" "$OUT"; fi
expect_contains "bomb: stopped at the cap" "$OUT" "more than 67108864 bytes (--max-image-bytes)"
if store_clean; then pass "bomb: nothing left"; else fail "bomb: nothing left"; fi
[ $(($(date +%s) - start)) -lt 20 ] && pass "bomb: stopped early" || fail "bomb: stopped early" "took $(($(date +%s) - start)) s"
