#!/bin/bash
# ward serve with a request's rootfs (under --allow-root): a realistic root
# filesystem (a static busybox, etc/ssl/certs, an etc/localtime symlink into
# usr/share/zoneinfo, a merged-usr style sbin -> bin symlink, top-level
# directories) runs, with what ward takes from the rootfs's etc bound from
# beneath the rootfs.  A rootfs whose etc is a symlink to a directory
# outside the allowed root shows nothing of that directory.  As root (the
# supervisor clones from the held descriptor: before the fix, any rootfs
# with an etc/ssl failed with "cannot bind '/proc/self/fd/N/etc/ssl':
# Invalid argument") and as uid 65534 (where etc -> outside leaked it).
. "$(dirname "$0")/lib.bash"

if [ "$(id -u)" != 0 ]; then
	pass "serve rootfs: skipped (needs root, to start ward serve as root and as uid 65534)"
	exit 0
fi
BB=/bin/busybox
if ! file -L "$BB" 2>/dev/null | grep -q 'statically linked' && ! ldd "$BB" 2>&1 | grep -q 'not a dynamic'; then
	fail "serve rootfs: a static busybox" "$BB is not static (apt-get install busybox-static)"
	exit 0
fi
A=$SERVE_TMP/allowed
OUTSIDE=$SERVE_TMP/outside
R=$A/root
mkdir -p "$R/bin" "$R/etc/ssl/certs" "$R/usr/share/zoneinfo/Etc" "$R/usr/bin" "$R/lib" "$R/home" "$R/var/lib" \
	"$A/evil/bin" "$OUTSIDE/ssl"
for r in "$R" "$A/evil"; do
	cp "$BB" "$r/bin/busybox"
	for a in sh cat wc readlink echo test ls; do ln -s busybox "$r/bin/$a"; done
done
ln -s bin "$R/sbin"
if [ -s /etc/ssl/certs/ca-certificates.crt ]; then
	cp -L /etc/ssl/certs/ca-certificates.crt "$R/etc/ssl/certs/"
else
	printf -- '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n' >"$R/etc/ssl/certs/ca-certificates.crt"
fi
echo '[openssl_init]' >"$R/etc/ssl/openssl.cnf"
printf 'TZif2-UTC' >"$R/usr/share/zoneinfo/Etc/UTC"
ln -s /usr/share/zoneinfo/Etc/UTC "$R/etc/localtime"
echo 'root:x:0:0::/root:/bin/sh' >"$R/etc/passwd"
echo 'rootfs-home' >"$R/home/marker"
echo OUTSIDE >"$OUTSIDE/ssl/marker"
ln -s "$OUTSIDE" "$A/evil/etc"
chmod -R a+rX "$SERVE_TMP"
CERTS=$(wc -c <"$R/etc/ssl/certs/ca-certificates.crt")

# rootfs_case WHO — the checks with ward serve as WHO (root, or SERVE_AS).
rootfs_case() {
	local who=$1 r out
	start_server "rootfs-$who" --allow-root "$A" || return
	r=$(post_exec "{\"argv\":[\"/bin/sh\",\"-c\",\"wc -c </etc/ssl/certs/ca-certificates.crt; readlink /etc/localtime; cat /usr/share/zoneinfo/Etc/UTC; echo; cat /home/marker; test -x /sbin/sh && echo sbin\"],\"rootfs\":\"$R\"}")
	expect_eq "serve rootfs ($who): a realistic rootfs runs" "200 ok" "$(code_of "$r") $(jg "$(body_of "$r")" 'd["status"]')"
	out=$(jg "$(body_of "$r")" 'd["stdout"] + d["error"]')
	expect_eq "serve rootfs ($who): its etc/ssl, etc/localtime, usr, home and sbin -> bin are there" \
		"$CERTS /usr/share/zoneinfo/Etc/UTC TZif2-UTC rootfs-home sbin" "$(echo $out)"
	r=$(post_exec "{\"argv\":[\"/bin/sh\",\"-c\",\"cat /etc/ssl/marker; ls /etc/ssl; echo end\"],\"rootfs\":\"$A/evil\"}")
	expect_eq "serve rootfs ($who): a rootfs whose etc is a symlink outside still runs" "200 ok" \
		"$(code_of "$r") $(jg "$(body_of "$r")" 'd["status"]')"
	expect_not_contains "serve rootfs ($who): ... and shows nothing of the symlink's target" "$r" OUTSIDE
	# A rootfs whose top level would take more mounts than a plan holds
	# (PLAN_MAX_OPS): refused with a message, never run with trees that
	# PID 1 had to close (a root server holds one descriptor per entry);
	# 200 entries (which once failed: PID 1 kept 160 fds) run.
	local n
	for n in 200 600; do
		rm -rf "$A/wide"; mkdir -p "$A/wide/bin"; cp "$R/bin/busybox" "$A/wide/bin/"; ln -s busybox "$A/wide/bin/sh"
		for i in $(seq "$n"); do mkdir "$A/wide/d$i"; done
		chmod -R a+rX "$A/wide"
		r=$(post_exec "{\"argv\":[\"/bin/sh\",\"-c\",\"echo wide\"],\"rootfs\":\"$A/wide\"}")
		if [ "$n" = 200 ]; then
			expect_eq "serve rootfs ($who): a rootfs of 200 top-level entries runs (it once bound closed descriptors)" "200 ok wide" \
				"$(code_of "$r") $(jg "$(body_of "$r")" 'd["status"]') $(jg "$(body_of "$r")" 'd["stdout"].strip()')"
		else
			expect_eq "serve rootfs ($who): a rootfs of 600 top-level entries is refused, saying why" "error more than the 512" \
				"$(jg "$(body_of "$r")" 'd["status"]') $(jg "$(body_of "$r")" '"more than the 512" if "more than the 512 ward allows" in d["error"] else d["error"]')"
		fi
	done
	stop_server "$SRV_PID"
}

SERVE_AS= rootfs_case root
SERVE_AS=65534 rootfs_case 65534
