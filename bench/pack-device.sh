#!/bin/bash
# bench/pack-device.sh — put everything bench/scale.sh needs on a bare machine
# (no compiler, no packages, no network) into .devbench/ at the repository root,
# so that it can travel there beside the working tree.
#
#   bench/pack-device.sh            make all, then pack
#   bench/pack-device.sh --no-make  pack the binaries already in build/
#
# .devbench/bin   ward (static-pie, as built), ward-net beside it (`ward serve`
#                 re-execs the ward-net found beside ward), wbench (bench/wbench.c,
#                 RUNPATH $ORIGIN/../lib), httpload (bench/httpload.c), bwrap (this
#                 host's /usr/bin/bwrap)
# .devbench/lib   every shared library those load, glibc's own excepted (a binary
#                 built against glibc 2.36 runs on a newer glibc: the target's is
#                 used); one bigger than 4 MiB is stored gzipped (NAME.gz) and
#                 unpacked by bench/scale.sh into a temporary directory
# .devbench/MANIFEST  what was packed: git revision, ward --version, sizes, sha256
#
# The binaries that need .devbench/lib get it through LD_LIBRARY_PATH, set by
# bench/scale.sh only on the commands that need it.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 2

do_make=1
case "${1:-}" in
--no-make) do_make=0 ;;
"") ;;
-h | --help) sed -n '2,/^set -u/{/^#/p}' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
*) echo "pack-device: unknown argument '$1' (try --help)" >&2; exit 2 ;;
esac

die() { echo "pack-device: $*" >&2; exit 1; }

if [ "$do_make" = 1 ]; then
	make -C "$ROOT" all >/dev/null || die "make all failed (rerun with --no-make to pack build/ as it is)"
fi
for f in build/ward build/ward-net; do
	[ -x "$f" ] || die "no $f (make all)"
done
BWRAP=$(command -v bwrap) || die "no bwrap on this host (apt-get install bubblewrap)"

DEV=.devbench
rm -rf "$DEV"
mkdir -p "$DEV/bin" "$DEV/lib" || die "cannot create $DEV"

cp build/ward build/ward-net "$DEV/bin/" || die "cannot copy ward"
cp -L "$BWRAP" "$DEV/bin/bwrap" || die "cannot copy $BWRAP"

CC=${CC:-cc}
CFLAGS="-std=gnu11 -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wno-unused-parameter
	-D_FORTIFY_SOURCE=2 -fstack-protector-strong -fPIE -O2 -g -pie"
# shellcheck disable=SC2086  # CFLAGS is a word list
$CC $CFLAGS -o "$DEV/bin/wbench" bench/wbench.c -Wl,-rpath,'$ORIGIN/../lib' \
	-ljansson -lpthread -lm || die "cannot build bench/wbench.c (needs libjansson-dev)"
# shellcheck disable=SC2086
$CC $CFLAGS -o "$DEV/bin/httpload" bench/httpload.c -lpthread -lm ||
	die "cannot build bench/httpload.c"

# glibc's own libraries stay behind: the target's glibc is newer and serves them.
is_glibc() {
	case "$1" in
	linux-vdso.so.* | ld-linux*.so.* | libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | \
		librt.so.* | libresolv.so.* | libutil.so.* | libanl.so.* | libmvec.so.* | \
		libnsl.so.* | libBrokenLocale.so.* | libc_malloc_debug.so.*) return 0 ;;
	esac
	return 1
}
for b in "$DEV"/bin/*; do
	# "NAME => PATH (addr)": NAME is the soname the loader will look for.
	ldd "$b" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' |
		while read -r name path; do
			is_glibc "$name" && continue
			[ -e "$DEV/lib/$name" ] || [ -e "$DEV/lib/$name.gz" ] && continue
			if [ "$(stat -Lc %s "$path")" -gt $((4 << 20)) ]; then
				gzip -9c "$path" >"$DEV/lib/$name.gz" || exit 1
			else
				cp -L "$path" "$DEV/lib/$name" || exit 1
			fi
		done || die "cannot copy the libraries of $b"
	if ldd "$b" 2>/dev/null | grep -q 'not found'; then
		die "$b: a library is missing here: $(ldd "$b" | grep 'not found' | tr '\n' ' ')"
	fi
done

# What was packed, so the device's report says which build it measured.
{
	echo "packed: $(date -u '+%Y-%m-%d %H:%M UTC') on $(uname -n) ($(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME"), glibc $(ldd --version | sed -n '1s/.* //p'))"
	rev=$(git rev-parse --short HEAD 2>/dev/null || echo "no commit")
	git diff --quiet HEAD -- src include 2>/dev/null || rev="$rev + uncommitted changes in src/ include/"
	git ls-files --others --exclude-standard -- src include 2>/dev/null | grep -q . && rev="$rev + untracked files in src/ include/"
	echo "source: $rev"
	echo "ward: $("$DEV/bin/ward" --version 2>&1 | head -n1)"
	if "$DEV/bin/ward" serve --help 2>&1 | grep -q -- '--pool'; then
		echo "ward serve --pool: yes"
	else
		echo "ward serve --pool: no (bench/scale.sh skips the serve part)"
	fi
	echo "bwrap: $("$DEV/bin/bwrap" --version 2>&1 | head -n1) from $BWRAP"
	echo "files:"
	(cd "$DEV" && find bin lib -type f | sort | while read -r f; do
		printf '  %-32s %9s  %s\n' "$f" "$(stat -c %s "$f")" "$(sha256sum "$f" | cut -c1-16)"
	done)
} >"$DEV/MANIFEST"

# Each binary must start here with only .devbench/lib beside the system's glibc.
LIBS=$ROOT/$DEV/lib
tmp=$(mktemp -d /tmp/pack-device.XXXXXX) || die "mktemp"
trap 'rm -rf "$tmp"' EXIT
for z in "$DEV"/lib/*.gz; do
	[ -e "$z" ] && gzip -dc "$z" >"$tmp/$(basename "$z" .gz)"
done
for b in "$DEV"/bin/*; do
	# every library but glibc's must come from the pack, none from this host
	ldd_out=$(LD_LIBRARY_PATH=$LIBS:$tmp ldd "$b" 2>&1)
	while read -r name arrow path _; do
		[ "$arrow" = "=>" ] || continue
		is_glibc "$name" && continue
		case "$path" in
		"$LIBS"/* | "$tmp"/*) ;;
		*) die "$b: $name resolves to $path, not to the pack" ;;
		esac
	done <<<"$ldd_out"
done
LD_LIBRARY_PATH=$LIBS:$tmp "$DEV/bin/ward" serve --help >/dev/null 2>&1 ||
	die "ward serve --help fails with .devbench/lib (ward-net cannot start)"
LD_LIBRARY_PATH=$LIBS:$tmp "$DEV/bin/bwrap" --version >/dev/null 2>&1 || die "bwrap does not start"

kib=$(du -sk "$DEV" | cut -f1)
cat "$DEV/MANIFEST"
echo "pack-device: $DEV is $((kib / 1024)) MiB ($kib KiB)"
[ "$kib" -le $((60 * 1024)) ] || die "$DEV is over 60 MiB: too big to carry (64 MiB in all)"
[ "$kib" -le $((40 * 1024)) ] || echo "pack-device: warning: over 40 MiB" >&2
exit 0
