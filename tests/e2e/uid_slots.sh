#!/bin/bash
# tests/e2e/uid_slots.sh — how ward (as root) keeps two sandboxes running at
# once off one host uid (SPEC §3): one file, /run/ward/uid-slots, with an OFD
# lock on byte N while slot N's uid is in use — not a file per uid ever used
# (older wards left one in /run/ward/uids for each, tens of thousands on a
# busy host).  The byte locked is the uid itself, so that wards with other
# ranges exclude each other where the ranges overlap.  With a range of 3
# slots: 3 sandboxes at once get 3 distinct uids, each holding its byte of
# that one file; a 4th is refused; once they
# end the locks are gone and the slots serve again.  A private uid range
# (WARD_UID_BASE 3900000) keeps other wards on this host off these slots.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/e2e.inc"
if [ "$(id -u)" != 0 ]; then pass "uid slots: unprivileged, the caller's own uid (nothing to lock)"; exit 0; fi
export WARD_UID_BASE=3900000 WARD_UID_COUNT=3
F=/run/ward/uid-slots
S=$T/shared; mkdir -p "$S"; chmod 1777 "$S"

# Three holders: each says it is up, then waits (at most 15 s) for release.
pids=""
for i in 1 2 3; do
	timeout -k 2 40 "$WARD" run --json --timeout 20 --bind "$S:/shared" --shell "
		touch /shared/up$i; k=0
		while [ ! -e /shared/release ] && [ \$k -lt 150 ]; do sleep 0.1; k=\$((k+1)); done" \
		</dev/null >"$T/out$i" 2>"$T/err$i" &
	pids="$pids $!"
done
for _ in $(seq 150); do [ -e "$S/up1" ] && [ -e "$S/up2" ] && [ -e "$S/up3" ] && break; sleep 0.1; done
expect_eq "uid slots: all 3 holders up" "up1 up2 up3" "$(cd "$S" && echo up*)"

# The locks: OFD write locks of one byte each, on the one file.
if [ -f "$F" ]; then
	ino=$(stat -c %i "$F")
	# only this test's range: other wards on the host hold bytes of their own
	locks=$(awk -v ino="$ino" '$2 == "OFDLCK" && $4 == "WRITE" && $7 >= 3900000 && $7 < 3900003 { n = split($6, a, ":"); if (a[n] == ino) print $7 "-" $8 }' /proc/locks | sort | tr '\n' ' ')
else
	locks="(no $F)"
fi
expect_eq "uid slots: bytes 3900000-3900002 (the uids) of $F are locked" "3900000-3900000 3900001-3900001 3900002-3900002 " "$locks"
expect_eq "uid slots: the file is root's, mode 600, empty" "0 600 0" "$(stat -c '%u %a %s' "$F" 2>&1)"

# A 4th while the 3 hold every slot: refused, naming the fix.
wr --timeout 5 -- /bin/true
expect_eq "uid slots: a 4th at once is refused (exit 125)" 125 "$RC"
expect_contains "uid slots: the refusal names the fix" "$ERR" "all 3 sandbox uids are in use: raise WARD_UID_COUNT"

touch "$S/release"
for p in $pids; do wait "$p"; done
users=$(for i in 1 2 3; do jg "$(cat "$T/out$i")" 'd["enforced"]["user"]'; done | sort | tr '\n' ' ')
expect_eq "uid slots: the 3 got the 3 uids of the range" "userns-uid-3900000 userns-uid-3900001 userns-uid-3900002 " "$users"

# Ended: no lock left, and the range serves again, run after run.
expect_eq "uid slots: no lock left on $F in this range" "" "$(awk -v ino="$(stat -c %i "$F" 2>/dev/null)" '$2 == "OFDLCK" && $7 >= 3900000 && $7 < 3900003 { n = split($6, a, ":"); if (a[n] == ino) print }' /proc/locks)"
bad=0
for i in $(seq 10); do wr --timeout 5 -- /bin/true; [ "$RC" = 0 ] || bad=$((bad + 1)); done
expect_eq "uid slots: 10 runs after them all succeed" 0 "$bad"

# Two wards whose ranges overlap, shifted (WARD_UID_BASE 3900011 and
# 3900010): while the first holds 3900011, the second never gets it (with
# a byte per index in the range, both would lock "their" byte and share
# the uid).
rm -f "$S/release" "$S/upA"
WARD_UID_BASE=3900011 WARD_UID_COUNT=1 timeout -k 2 40 "$WARD" run --json --timeout 20 --bind "$S:/shared" --shell "
	touch /shared/upA; k=0
	while [ ! -e /shared/release ] && [ \$k -lt 150 ]; do sleep 0.1; k=\$((k+1)); done" </dev/null >"$T/outA" 2>"$T/errA" &
pa=$!
for _ in $(seq 150); do [ -e "$S/upA" ] && break; sleep 0.1; done
for i in 1 2 3; do
	WARD_UID_BASE=3900010 WARD_UID_COUNT=2 wr --json --timeout 5 -- /bin/true
	echo "$(jg "$OUT" 'd["enforced"]["user"]')"
done >"$T/shifted"
expect_eq "uid slots: a ward with a shifted, overlapping range never gets a uid another holds" \
	"userns-uid-3900010 userns-uid-3900010 userns-uid-3900010" "$(tr '\n' ' ' <"$T/shifted" | sed 's/ $//')"
WARD_UID_BASE=3900011 WARD_UID_COUNT=1 wr --timeout 5 -- /bin/true
expect_eq "uid slots: the held uid is refused to a range of just it" 125 "$RC"
touch "$S/release"
wait "$pa"
expect_eq "uid slots: the holder got 3900011" userns-uid-3900011 "$(jg "$(cat "$T/outA")" 'd["enforced"]["user"]')"
