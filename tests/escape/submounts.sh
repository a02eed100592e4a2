#!/bin/bash
# tests/escape/submounts.sh — a mount below a bind source (a tmpfs the host
# mounted inside a --workdir, a --bind or a --ro-bind directory, without
# nosuid or nodev) is nosuid and nodev inside too, and read-only below a
# read-only bind: a device node in it cannot be opened, a setuid-root helper
# in it grants nothing.  As root the workdir and writable binds are
# idmapped, and the idmap is set on their top mount only: before the fix
# their submounts kept the host's flags (a 0666 device node there opened).
# The host mounts live in a private mount namespace of this script's own
# (unshare -m), so nothing is left mounted on the host whatever happens.
if [ -z "${WARD_SUBMOUNTS_NS:-}" ]; then
	if [ "$(id -u)" != 0 ] || ! command -v unshare >/dev/null; then
		echo "PASS: submounts: skipped (needs root and unshare, to mount below the bind sources)"
		exit 0
	fi
	WARD_SUBMOUNTS_NS=1 exec unshare -m --propagation private -- bash "$0" "$@"
fi
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/escape.inc"
esc_preflight

# a directory with a tmpfs mounted at sub (suid, dev), holding a 0666 null
# device and a setuid-root copy of esc_suid
submounted() {
	mkdir -p "$1/sub"
	mount -t tmpfs -o size=1m,mode=0777,suid,dev ward-test-sub "$1/sub" || return 1
	mknod -m 0666 "$1/sub/null" c 1 3
	cp "$HELPERS/esc_suid" "$1/sub/esc_suid"
	chown 0:0 "$1/sub/esc_suid"
	chmod 4755 "$1/sub/esc_suid"
}
chmod 0755 "$T"
trap 'for d in w rw ro; do umount "$T/$d/sub" 2>/dev/null; done; _esc_cleanup' EXIT
for d in w rw ro; do
	if ! submounted "$T/$d"; then fail "submounts: mount a tmpfs below $T/$d"; exit 0; fi
done
check "submounts: the host's submount is suid, dev" sh -c "! grep ' $T/w/sub ' /proc/self/mountinfo | grep -q 'nosuid\|nodev'"

# probe DIR — inside: DIR/sub's mount options, whether its device opens,
# whether it takes a new file, and the ids esc_suid gets
PROBE='o=$(awk -v m="$0/sub" '\''$5 == m {print $6}'\'' /proc/self/mountinfo); echo "opts $o"
(echo x >"$0/sub/null") 2>/dev/null && echo "device opened"
(echo x >"$0/sub/new") 2>/dev/null && echo "file written"
"$0/sub/esc_suid" | grep ^IDS'

# probe_in NAME DIR WARD-OPTION ARG — the checks for one kind of bind
probe_in() {
	local name=$1 dir=$2 opts
	wrun "$3" "$4" -- /bin/sh -c "$PROBE" "$dir"
	opts=$(printf '%s\n' "$OUT" | sed -n 's/^opts //p')
	check "submounts: $name: the submount is there" test -n "$opts"
	case ",$opts," in *,nosuid,*) pass "submounts: $name: nosuid below it ($opts)" ;; *) fail "submounts: $name: nosuid below it" "opts [$opts] out [$OUT] err [$ERR $WERR]" ;; esac
	case ",$opts," in *,nodev,*) pass "submounts: $name: nodev below it" ;; *) fail "submounts: $name: nodev below it" "opts [$opts]" ;; esac
	expect_not_contains "submounts: $name: the device node below it does not open" "$OUT" "device opened"
	expect_not_contains "submounts: $name: the setuid-root helper below it gets no id 0" "$(printf %s "$OUT" | grep ^IDS)" " 0"
}
probe_in workdir /work --workdir "$T/w"
probe_in bind /rw --bind "$T/rw:/rw"
probe_in ro-bind /ro --ro-bind "$T/ro:/ro"
# below a read-only bind, the submount is read-only too (OUT is its probe's)
expect_contains "submounts: ro-bind: read-only below it" "$(printf %s "$OUT" | sed -n 's/^opts //p')," "ro,"
expect_not_contains "submounts: ro-bind: no file written below it" "$OUT" "file written"
check "submounts: ro-bind: nothing new on the host" test ! -e "$T/ro/sub/new"
