#!/bin/bash
# review3 proof (low): the directory plan.c makes for a bind point beneath
# an image's read-only directory (mirror_entry's OP_DIR) is 0755 whatever
# the image's was: a 0700 directory of the root's ("/secret", the image's
# root's alone) becomes listable and its entries readable by the sandbox's
# user once a bind point is asked for beneath it.  Without the bind the
# same file cannot be read.  A rootfs made here: the host's /usr bound
# into a temporary directory (unmounted and removed at the end), a 0700
# /secret holding a 0644 key.  Prints SHOWN: while the key is read.
. "$(dirname "$0")/../lib.sh"
[ "$(id -u)" = 0 ] || { echo "skipped: needs root"; exit 0; }
T=$(mktemp -d /tmp/review3-plan.XXXXXX)
cleanup() { umount "$T/root/usr" 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
mkdir -p "$T/root/usr" "$T/root/secret" "$T/vol"
mount --bind -o ro /usr "$T/root/usr" || { echo "skipped: cannot bind /usr"; exit 0; }
for l in bin sbin lib lib64; do [ -e "/usr/$l" ] && ln -s "usr/$l" "$T/root/$l"; done
echo TOPSECRET >"$T/root/secret/key"
chmod 0644 "$T/root/secret/key"
chmod 0700 "$T/root/secret"
without=$("$WARD" run --rootfs "$T/root" -- sh -c 'cat /secret/key 2>&1; true' 2>&1)
with=$("$WARD" run --rootfs "$T/root" --bind "$T/vol:/secret/mnt" -- sh -c 'ls -ld /secret; cat /secret/key 2>&1; true' 2>&1)
echo "without a bind beneath it: $without"
echo "with --bind DIR:/secret/mnt: $with"
case "$without" in *TOPSECRET*) echo "NOT SHOWN: readable even without the bind (the sandbox's user reads a 0700 root directory?)"; exit 0 ;; esac
case "$with" in
*TOPSECRET*) echo "SHOWN: a 0700 directory of the root is made 0755 by ward once a bind point is beneath it: its key is read" ;;
*) echo "NOT SHOWN" ;;
esac
