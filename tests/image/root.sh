#!/bin/bash
# An image's root bound whole as the sandbox's root (SPEC §14): one mount
# for the image however many entries its top and its /etc hold, ward's own
# mounts on the points the store's mount points layer holds
# (mountpoints/HEX, made at import or on first use, gone with the last
# image; concurrent first uses place one), and hostile layers whose
# symlinks, files and directories sit where ward mounts: none of them is
# followed or seen.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lib.bash"
[ "$(id -u)" = 0 ] || { echo "PASS: an image's bound root skipped (needs root)"; exit 0; }
export WARD_IMAGE_STORE=$S

python3 - "$T" <<'PY'
import os, sys
sys.path.insert(0, os.path.join(os.environ["ROOT"], "tests/image"))
import oci
out = sys.argv[1]
bb = open("/bin/busybox", "rb").read()
def base():
    return (oci.T().dir("bin").file("bin/busybox", bb, 0o755).symlink("bin/sh", "busybox")
            .dir("etc").file("etc/os-release", b"ID=wardtest\n").dir("opt"))
oci.layout(out + "/small", [base().bytes()], ref="1")
# the same, and 40 more entries in /etc, 20 more at the top
big = base()
for i in range(40):
    big = big.file("etc/conf%d" % i, b"x\n")
for i in range(20):
    big = big.dir("top%d" % i)
oci.layout(out + "/big", [big.bytes()], ref="1")
# where ward mounts or hides, the image has something else
evil = (base().file("etc/evil", b"root:x:0:0::/:/bin/sh\nsandbox:x:0:0::/:/bin/sh\n")
        .symlink("etc/passwd", "evil").dir("etc/hosts").file("etc/hosts/x", b"x\n")
        .file("etc/shadow", b"root:SECRET:1::::::\n").file("etc/gshadow", b"root:SECRET::\n")
        .file("etc/resolv.conf", b"nameserver 203.0.113.1\n").symlink("etc/mtab", "/proc/self/mounts")
        .symlink("tmp", "/etc").symlink("work", "/bin").file("proc", b"not a directory\n")
        .dir("dev").file("dev/null", b"not a device\n").file("dev/leak", b"from the image\n")
        .symlink("dev/ptmx", "/etc/shadow")
        .dir("sys").file("sys/x", b"x\n").dir("run").file("run/secret", b"x\n"))
oci.layout(out + "/evil", [evil.bytes()], ref="1")
# /etc itself a symlink, /dev a file
etcl = (oci.T().dir("bin").file("bin/busybox", bb, 0o755).symlink("bin/sh", "busybox")
        .dir("other").file("other/passwd", b"root:x:0:0::/:/bin/sh\n").symlink("etc", "other")
        .file("dev", b"x\n").symlink("home", "/etc"))
oci.layout(out + "/etcl", [etcl.bytes()], ref="1")
PY
for i in small big evil etcl; do
	wimg import "$i" "oci:$T/$i:1"
	check "image $i imports" [ "$RC" -eq 0 ]
done

# the mount points layer: one, made at import
points=$(ls "$S/mountpoints")
expect_eq "import made the mount points layer (one for every image)" 1 "$(echo "$points" | wc -w)"
P=$S/mountpoints/$points/top
expect_eq "... its whiteouts are overlayfs's (0:0 character devices)" "0,0" \
	"$(stat -c '%t,%T' "$P/etc/shadow" 2>&1)"
expect_eq "... its /dev is opaque" y "$(xattr "$P/dev" trusted.overlay.opaque)"

# one mount for the image's root, whatever it holds
out=$("$WARD" run --print-plan --image big -- true 2>&1)
expect_eq "--print-plan on an image: its root bound first, nothing of its /etc or top bound one by one" \
	"bind / ro 0" "$(echo "$out" | head -1 | awk '{print $1, $2, $NF}') $(grep -c -e /etc/conf -e /top <<<"$out")"
count() { "$WARD" run --image "$1" -- /bin/sh -c 'wc -l < /proc/self/mountinfo' 2>&1; }
small=$(count small)
big=$(count big)
expect_eq "60 more entries in the image, not one mount more (the root bound whole)" "$small" "$big"
out=$("$WARD" run --image big -- /bin/sh -c 'cat /etc/conf39 /etc/os-release; test -d /top19 && echo top19' 2>&1)
expect_eq "... and the image's files are all there" "x ID=wardtest top19" "$(echo $out)"
out=$("$WARD" run --image small -- /bin/sh -c 'grep " / " /proc/self/mountinfo | cut -d" " -f6' 2>&1)
expect_contains "the root is the image's, read-only" "$out" "ro"
out=$("$WARD" run --image small -- /bin/sh -c 'echo x > /opt/f; echo x > /etc/passwd; mkdir /new' 2>&1)
expect_eq "nothing of it can be written: files, ward's /etc, its top" 3 "$(grep -c 'Read-only' <<<"$out")"
out=$("$WARD" run --image small -- /bin/sh -c 'cat /etc/hostname; grep -c sandbox /etc/passwd /etc/group | tr "\n" " "; ls /dev | tr "\n" " "; echo x > /tmp/a && echo x > /work/b && echo x > /dev/shm/c && echo written; head -c 3 /dev/zero | wc -c' 2>&1)
expect_eq "ward's /etc files, /dev, writable /tmp /work /dev/shm" \
	"ward /etc/passwd:1 /etc/group:1 fd full null ptmx pts random shm stderr stdin stdout urandom zero written 3" "$(echo $out)"

# hostile: a symlink, a file or a directory where ward mounts or hides
out=$("$WARD" run --image evil -- /bin/sh -c '
	grep -c "^sandbox:x:1000:" /etc/passwd; test -L /etc/passwd || echo passwd-not-a-link
	cat /etc/hosts | head -1
	for f in /etc/shadow /etc/gshadow /etc/resolv.conf /etc/mtab /sys /run /dev/leak; do test -e $f && echo "SEEN $f"; done
	test -L /tmp || echo tmp-dir; echo t > /tmp/t; test -e /etc/t || echo not-in-etc
	test -L /work || echo work-dir; echo w > /work/w; test -e /bin/w || echo not-in-bin
	test -c /dev/null && echo null-dev; readlink /dev/ptmx; test -d /proc/self && echo proc' 2>&1)
expect_eq "a hostile image: ward's passwd and hosts, nothing hidden seen, /tmp /work /dev /proc ward's" \
	"1 passwd-not-a-link 127.0.0.1 localhost ward tmp-dir not-in-etc work-dir not-in-bin null-dev pts/ptmx proc" \
	"$(echo $out)"
expect_eq "... and the store's layers are untouched by what it wrote" "" \
	"$(find "$S/layers" "$S/mountpoints" -name t -o -name w | head -1)"
out=$("$WARD" run --image etcl -- /bin/sh -c 'ls /etc | tr "\n" " "; grep -c sandbox /etc/passwd; test -c /dev/null && echo null-dev' 2>&1)
expect_eq "/etc a symlink to elsewhere in the image, /dev a file: ward's alone" \
	"group hostname hosts nsswitch.conf passwd 1 null-dev" "$(echo $out)"

# a bind of the caller's: into a directory the image has, or one it has not
mkdir -p "$T/data" && echo host-data >"$T/data/f"
out=$("$WARD" run --image small --ro-bind "$T/data:/opt" -- /bin/sh -c 'cat /opt/f; wc -l < /proc/self/mountinfo' 2>&1)
expect_eq "a bind onto the image's /opt: on the bound root, one mount more" "host-data $((small + 1))" "$(echo $out)"
out=$("$WARD" run --image small --ro-bind "$T/data:/data" -- /bin/sh -c 'cat /data/f' 2>&1)
expect_eq "a bind where the image has no directory: the root built as before" "host-data" "$out"
out=$("$WARD" run --image small --ro-bind "$T/data:/work/d" -- /bin/sh -c 'cat /work/d/f' 2>&1)
expect_eq "a bind inside /work (ward's tmpfs)" "host-data" "$out"

# the layer on first use for a store made before it, and gone with the last image
rm -rf "${S:?}/mountpoints"
out=$("$WARD" run --image small -- /bin/sh -c 'cat /etc/hostname' 2>&1)
expect_eq "a store without the layer: it is made at first use" "ward $points" "$out $(ls "$S/mountpoints" 2>&1)"
rm -rf "${S:?}/mountpoints"
for i in 1 2 3 4; do "$WARD" run --image small -- /bin/sh -c 'cat /etc/hostname' >"$T/race$i" 2>&1 & done
wait
expect_eq "four first runs at once: each runs, one layer is placed, no temporary left" "ward ward ward ward $points 0" \
	"$(echo $(cat "$T"/race[1-4])) $(ls "$S/mountpoints") $(ls -A "$S/tmp" | wc -l)"
for i in small big evil; do wimg rm "$i"; done
expect_eq "rm: the layer stays while an image is left" "$points" "$(ls "$S/mountpoints")"
mkdir "$S/mountpoints/$(printf '%064d' 0)" # an older layer's name
wimg rm etcl
expect_eq "rm of the last image: the layer goes (an older one too)" "" "$(ls -A "$S/mountpoints")"
if store_clean; then pass "... and the store is empty"; else fail "... and the store is empty" "$(find "$S" | head)"; fi
