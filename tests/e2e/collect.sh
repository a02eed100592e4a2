#!/bin/bash
# tests/e2e/collect.sh — files out (SPEC §12) from `ward run --collect GLOB
# --collect-dir DIR`: globs, directories and '**'; the caps and
# files_truncated; symlinks never followed (to a host file, to
# /proc/self/root/etc/shadow, a loop, a directory planted in a --workdir);
# a FIFO skipped without hanging; 10,000 small files walked within the caps
# and a generous time; binary content byte for byte; --json lists the files;
# modes under the caller's umask; and --collect-dir never written through a
# symlink planted in it.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/e2e.inc"

D=$T/out
sorted_files() { (cd "$1" && find . -type f | sed 's|^\./||' | sort | tr '\n' ' '); }

# --- globs ----------------------------------------------------------------
wr --collect '*.png' --collect 'a/**/*.txt' --collect 'keep/' --collect-dir "$D" \
	--shell 'mkdir -p a/b/c keep/deep/er; echo 1 >top.png; echo 2 >a/x.png; echo 3 >a/b/c/z.txt; echo 4 >a/y.txt
		 echo 5 >keep/deep/er/f; echo 6 >keep/.hidden; echo 7 >other.txt; chmod 750 a/y.txt; echo ran'
expect_eq "collect: the program ran (exit 0)" 0 "$RC"
expect_eq "collect: the program's output as usual" ran "$OUT"
expect_eq "collect: *.png at the top, a/**/*.txt at any depth, keep/ everything below" \
	"a/b/c/z.txt a/y.txt keep/.hidden keep/deep/er/f top.png " "$(sorted_files "$D")"
expect_eq "collect: a file's permission bits kept" 750 "$(stat -c %a "$D/a/y.txt")"
expect_eq "collect: content" 5 "$(cat "$D/keep/deep/er/f")"

# the caller's umask applies on the host: a sandbox's 0777 never lands
# world-writable (and never set-id or sticky)
for um in 022:755 077:700 002:775; do
	rm -rf "$D"
	(umask "${um%%:*}" && timeout 30 "$WARD" run --collect s --collect-dir "$D" \
		--shell 'echo "#!/bin/sh" >s; chmod 0777 s' >/dev/null 2>&1 </dev/null)
	expect_eq "collect: a 0777 file under the caller's umask ${um%%:*} lands ${um#*:}" "${um#*:}" \
		"$(stat -c %a "$D/s" 2>/dev/null)"
done

# a directory matched by name takes all below it; '**' alone takes all
rm -rf "$D"
wr --collect 'res*' --collect-dir "$D" --shell 'mkdir -p results/x; echo a >results/x/1; echo b >results/2; echo c >rest'
expect_eq "collect: a glob matching a directory takes the files below it" \
	"rest results/2 results/x/1 " "$(sorted_files "$D")"

# without --collect-dir: ./ward-collect
(cd "$T" && timeout 30 "$WARD" run --collect f --shell 'echo here >f' >/dev/null 2>&1)
expect_eq "collect: the default directory is ./ward-collect" here "$(cat "$T/ward-collect/f" 2>/dev/null)"

# --- binary content, --json --------------------------------------------------
rm -rf "$D"
wr --json --collect 'bin/' --collect-dir "$D" \
	--shell 'mkdir bin; head -c 300000 /dev/urandom >bin/r; printf "\000\001\377" >bin/z; sha256sum bin/r >&2'
expect_eq "collect: binary content byte for byte" "$(jg "$OUT" 'd["stderr"].split()[0]')" \
	"$(sha256sum <"$D/bin/r" | cut -d' ' -f1)"
expect_eq "collect: NUL and 0xff bytes" "0001ff" "$(od -An -tx1 "$D/bin/z" | tr -d ' \n')"
expect_eq "collect --json: the files listed (path, size, mode), no content" \
	'[["bin/r", 300000, 420, false], ["bin/z", 3, 420, false]]' \
	"$(jg "$OUT" 'sorted([f["path"], f["size"], f["mode"], "content" in f] for f in d["files"])')"
expect_eq "collect --json: files_truncated false" false "$(jg "$OUT" 'd["files_truncated"]')"

# --- caps ---------------------------------------------------------------------
rm -rf "$D"
wr --json --collect 'f*' --collect-max-files 3 --collect-dir "$D" --shell 'for i in 1 2 3 4 5 6; do echo $i >f$i; done'
expect_eq "collect: --collect-max-files 3 brings three" 3 "$(jg "$OUT" 'len(d["files"])')"
expect_eq "collect: ... files_truncated true" true "$(jg "$OUT" 'd["files_truncated"]')"
expect_contains "collect: ... and stderr says a cap was reached" "$ERR" "a cap was reached"
rm -rf "$D"
wr --json --collect '*' --collect-max-bytes 1000 --collect-dir "$D" \
	--shell 'head -c 800 /dev/zero >a; head -c 800 /dev/zero >b; echo s >c'
expect_eq "collect: --collect-max-bytes 1000 keeps the bytes in all under it" true \
	"$(jg "$OUT" 'sum(f["size"] for f in d["files"]) <= 1000 and len(d["files"]) == 2')"
expect_eq "collect: ... files_truncated true" true "$(jg "$OUT" 'd["files_truncated"]')"

# 10,000 small files: bounded by the caps, and quick (generous bound)
rm -rf "$D"
s=$(date +%s)
WT=120 wr --json --collect '**/*' --collect-dir "$D" --timeout 100 --pids 16 \
	--shell 'mkdir -p t; cd t; i=0; while [ $i -lt 100 ]; do mkdir d$i; j=0; while [ $j -lt 100 ]; do echo $j >d$i/f$j; j=$((j+1)); done; i=$((i+1)); done'
expect_eq "collect: 10,000 files with **/*: the default cap (64 files)" 64 "$(jg "$OUT" 'len(d["files"])')"
expect_eq "collect: ... files_truncated" true "$(jg "$OUT" 'd["files_truncated"]')"
rm -rf "$D"
WT=120 wr --json --collect '**/*' --collect-max-files 20000 --collect-dir "$D" --timeout 100 \
	--shell 'mkdir -p t; cd t; i=0; while [ $i -lt 100 ]; do mkdir d$i; j=0; while [ $j -lt 100 ]; do echo $j >d$i/f$j; j=$((j+1)); done; i=$((i+1)); done'
expect_eq "collect: 10,000 files with a cap above: all come back" 10000 "$(jg "$OUT" 'len(d["files"])')"
expect_eq "collect: ... written into --collect-dir" 10000 "$(find "$D" -type f | wc -l)"
check "collect: 10,000 files within a generous bound (60 s)" \
	test $(($(date +%s) - s)) -lt 60

# the walk itself is bounded: 100,000 entries looked at, 32 directories deep
rm -rf "$D"
WT=120 wr --json --collect '**/x' --timeout 100 --collect-dir "$D" -- python3 -c '
import os
os.mkdir("many")
for i in range(100001):
    open("many/%d" % i, "w").close()'
expect_eq "collect: a walk past 100,000 entries stops, files_truncated" '[0, true]' \
	"$(jg "$OUT" '[len(d["files"]), d["files_truncated"]]')"
wr --json --collect '**' --collect-dir "$D" --shell 'p=deep; for i in $(seq 40); do p=$p/d; done; mkdir -p $p; echo x >$p/bottom; echo y >top'
expect_eq "collect: no deeper than 32 directories, files_truncated" '[["top"], true]' \
	"$(jg "$OUT" '[[f["path"] for f in d["files"]], d["files_truncated"]]')"

# --- symlinks and special files -----------------------------------------------
rm -rf "$D"
WT=30 wr --json --collect '**/*' --collect 'l/' --collect 'etc/' --collect-dir "$D" --shell \
	'mkdir l; ln -s /etc/passwd l/passwd; ln -s /proc/self/root/etc/shadow l/shadow; ln -s /proc/1/root/etc/hostname l/h
	 ln -s loop l/loop; ln -s a l/b; ln -s b l/a; ln -s /etc etc; mkfifo l/fifo; echo ok >l/real'
expect_eq "collect: a FIFO does not hang the run (exit 0)" 0 "$RC"
expect_eq "collect: symlinks (host file, /proc/self/root, loops, a directory) and a FIFO skipped" \
	'["l/real"]' "$(jg "$OUT" 'sorted(f["path"] for f in d["files"])')"
expect_eq "collect: ... nothing else written" "l/real " "$(sorted_files "$D")"

# A --workdir (a host directory) with a symlink to a host directory planted
# in it: the walk in the sandbox's view does not follow it either.
W=$T/work
mkdir -p "$W" "$T/hostdir"
echo secret >"$T/hostdir/secret"
ln -s "$T/hostdir" "$W/link"
chmod 0777 "$W"
rm -rf "$D"
wr --json --workdir "$W" --collect 'link/' --collect 'link/secret' --collect '**' --collect-dir "$D" \
	--shell 'ln -s /etc/shadow sh; echo mine >mine'
expect_eq "collect --workdir: a planted symlink to a host directory is not followed" '["mine"]' \
	"$(jg "$OUT" 'sorted(f["path"] for f in d["files"])')"

# --- --collect-dir: never through a symlink planted in it ----------------------
rm -rf "$D"
mkdir -p "$D" "$T/victim"
ln -s "$T/victim" "$D/out"
echo orig >"$T/victim-file"
ln -s "$T/victim-file" "$D/f"
wr --collect 'out/' --collect f --collect-dir "$D" --shell 'mkdir out; echo x >out/x; echo y >f'
expect_eq "collect-dir: the program's status is kept" 0 "$RC"
expect_eq "collect-dir: nothing written through a symlinked directory in it" "" "$(ls -A "$T/victim")"
expect_eq "collect-dir: a symlinked file in it is not written through" orig "$(cat "$T/victim-file")"
expect_contains "collect-dir: stderr names the file not written" "$ERR" "collected file 'out/x' not written"

# --- refused --------------------------------------------------------------------
wr --collect-dir "$D" -- true
expect_eq "collect: --collect-dir without --collect: 125" 125 "$RC"
wr --collect ../x -- true
expect_eq "collect: a glob with '..': 125" 125 "$RC"
expect_contains "collect: ... saying why" "$ERR" "collect glob '../x' refused"
WARD_ALLOW_APPLICATION=1 wr --isolation application --collect x -- true
expect_eq "collect: at the application level: 125" 125 "$RC"
expect_contains "collect: ... naming the fix" "$ERR" "collect needs isolation 'system'"
