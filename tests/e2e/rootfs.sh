#!/bin/bash
# tests/e2e/rootfs.sh — --rootfs DIR (SPEC §2, §3): DIR, read-only, is the
# sandbox's root instead of the host's system dirs.  The tree here is the
# smallest that works: /bin/busybox and its applet links.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/e2e.inc"
BB=/bin/busybox
if ! file -L "$BB" 2>/dev/null | grep -q 'statically linked' && ! ldd "$BB" 2>&1 | grep -q 'not a dynamic'; then
	fail "a static busybox for the rootfs" "$BB is not static (apt-get install busybox-static)"; exit 0
fi
R=$T/root; mkdir -p "$R/bin"; cp "$BB" "$R/bin/busybox"
for a in sh echo cat ls id touch stat mkdir sleep head wc tr grep awk hostname env true; do ln -s busybox "$R/bin/$a"; done
echo rootfs-marker >"$R/marker"
echo rootfs-marker >"$R/$X-marker"
chmod -R go+rX "$R"

wr --timeout 10 --rootfs "$R" -- /bin/sh -c 'echo hi; cat /marker; ls /bin | wc -l'
expect_eq "rootfs: runs busybox sh" 0 "$RC"
expect_eq "rootfs: output" "hi rootfs-marker $(ls "$R/bin" | wc -l)" "$(echo $OUT)"
[ "$RC" = 0 ] || echo "# stderr: $ERR"
wr --timeout 10 --rootfs "$R" --shell 'test -e /usr/bin/python3 && echo host || echo own; test -e /lib/x86_64-linux-gnu/libc.so.6 && echo hostlib || echo nolib'
expect_eq "rootfs: the host's system dirs are not there" "own nolib" "$(echo $OUT)"
guard "/$X-new" "/$X-marker"
wr --timeout 10 --rootfs "$R" --env X=$X --shell '(touch /$X-new) 2>/dev/null; (echo x >/$X-marker) 2>/dev/null; echo end'
check "rootfs: read-only (no new file on the host tree)" test ! -e "$R/$X-new"
expect_eq "rootfs: read-only (marker unchanged)" rootfs-marker "$(cat "$R/$X-marker")"
# The sandbox is still a sandbox: /tmp, /work, /proc, /dev, no caps.
guard "/tmp/$X-t" "$PWD/$X-w" "/work/$X-w"
wr --timeout 10 --rootfs "$R" --env X=$X --shell 'echo t >/tmp/$X-t && cat /tmp/$X-t; pwd; echo w >$X-w && cat $X-w; id -u; ls /dev | wc -l; grep CapEff /proc/self/status'
expect_eq "rootfs: /tmp, /work, /proc, /dev, uid, caps" "t /work w" "$(printf '%s\n' "$OUT" | head -3 | tr '\n' ' ' | sed 's/ $//')"
u=$(printf '%s\n' "$OUT" | sed -n 4p)
if [ -n "$u" ] && [ "$u" != 0 ]; then pass "rootfs: non-root uid ($u)"; else fail "rootfs: non-root uid" "uid=[$u] out=[$OUT] err=$ERR"; fi
expect_contains "rootfs: no capabilities" "$OUT" "CapEff:	0000000000000000"
# --workdir and binds work with it, and a static helper runs.
W=$T/w; mkdir -p "$W"; chmod 0777 "$W"
wr --timeout 10 --rootfs "$R" --workdir "$W" --ro-bind "$HELPERS:/probe" --shell 'echo from-rootfs >out; /probe/probe_spin 0.1'
expect_eq "rootfs + workdir + ro-bind" "spun from-rootfs" "$OUT $(cat "$W/out" 2>&1)"
# The rootfs's own /etc is used (not a host copy), when it has one.
mkdir -p "$R/etc"; echo 'rootfs-host' >"$R/etc/hostname-marker"
wr --timeout 10 --rootfs "$R" --shell 'cat /etc/hostname-marker 2>/dev/null || echo none; test -e /etc/shadow && echo shadow; echo end'
expect_contains "rootfs: no host /etc/shadow" "$OUT" end
expect_not_contains "rootfs: no host /etc/shadow (absent)" "$OUT" shadow
# A rootfs that is not a directory, or relative, is refused with 125.
wr --timeout 10 --rootfs "$R/marker" -- /bin/true
expect_eq "rootfs that is a file: 125" 125 "$RC"
# What ward takes from the rootfs's etc (etc/ssl, etc/localtime) is the
# rootfs's own, found beneath it; an etc that is a symlink (here to a
# directory outside) is not followed: none of it shows.
mkdir -p "$R/etc/ssl/certs"; echo rootfs-cert >"$R/etc/ssl/certs/ca.pem"
ln -s /usr/share/zoneinfo/Etc/UTC "$R/etc/localtime"
chmod -R go+rX "$R"
wr --timeout 10 --rootfs "$R" --shell 'cat /etc/ssl/certs/ca.pem; readlink /etc/localtime'
expect_eq "rootfs: its etc/ssl and etc/localtime" "0 rootfs-cert /usr/share/zoneinfo/Etc/UTC" "$RC $(echo $OUT)"
E=$T/evil; mkdir -p "$E" "$T/outside/ssl"; cp -a "$R/bin" "$E/"; echo OUTSIDE >"$T/outside/ssl/marker"
ln -s "$T/outside" "$E/etc"
chmod -R go+rX "$E" "$T/outside"
wr --timeout 10 --rootfs "$E" --shell 'cat /etc/ssl/marker 2>/dev/null; echo end'
expect_eq "rootfs: an etc that is a symlink outside is not followed" "0 end" "$RC $(echo $OUT)"
