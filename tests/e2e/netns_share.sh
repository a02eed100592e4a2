#!/bin/bash
# tests/e2e/netns_share.sh — `ward run --net none` shares network namespaces
# across runs (src/system/netns.c, ward_netns_share): one left untouched is
# kept, bind-mounted in /run/ward/netns, for the next run; one that moved a
# counter, and one whose ward died before proving it untouched, are never
# given to another run.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/e2e.inc"
if [ "$(id -u)" != 0 ]; then
	echo "# netns_share: skipped (ward makes network namespaces only as root)"
	exit 0
fi
unset WARD_NETNS_SHARE
# One copy at a time on the host: the other lane runs this script with the
# ASan build at about the same moment, and each copy's runs take the kept
# namespaces the other's checks count on (ci13: 'd' taken before it was
# looked at).
mkdir -p /run/ward
exec 8>/run/ward/.test-netns-share.lock
flock -w 300 8 || { fail "netns_share: its host-wide test lock" "held for 300 s"; exit 0; }

# The namespace inode a run's sandbox sees, and those kept in the slots.
ino_of() { sed -n 's/^net:\[\([0-9]*\)\]$/\1/p' <<<"$1"; }
kept() { awk '$5 ~ "^/run/ward/netns/" {print $4}' /proc/self/mountinfo | sed -n 's/^net:\[\([0-9]*\)\]$/\1/p'; }
is_kept() { kept | grep -qx "$1"; }
# A namespace's cookie (SO_NETNS_COOKIE, Linux 5.14): never reused in a
# boot, where a destroyed namespace's inode number is given to the next
# one made (by any run on the host: ci12 saw "the touched one" again so).
# Making and closing a socket leaves a namespace fit to keep (below).
COOKIE='python3 -c "import socket; s = socket.socket(socket.AF_UNIX); print(int.from_bytes(s.getsockopt(socket.SOL_SOCKET, 71, 8), \"little\"))"'
cookie_of() { sed -n '2p' <<<"$1"; }
# whether a kept namespace has cookie $1 (each entered for a socket made and closed)
cookie_kept() {
	local m
	for m in $(awk '$5 ~ "^/run/ward/netns/" {print $5}' /proc/self/mountinfo); do
		[ "$(nsenter --net="$m" bash -c "$COOKIE" 2>/dev/null)" = "$1" ] && return 0
	done
	return 1
}

wr --net none -- readlink /proc/self/ns/net
a=$(ino_of "$OUT")
check "share: a run sees a namespace of its own" test -n "$a"
check "share: left untouched, it is kept for the next run" is_kept "$a"
wr --net none -- readlink /proc/self/ns/net
b=$(ino_of "$OUT")
check "share: the next run is given a kept one (made by no run of its own)" is_kept "$b"
b_host=$(stat -L -c %i /proc/self/ns/net)
expect_eq "share: not the host's" "" "$( [ "$b" = "$b_host" ] && echo same)"

# A refused send moves a counter: that namespace is destroyed, never kept.
wr --net none -- bash -c "readlink /proc/self/ns/net; $COOKIE; echo x >/dev/udp/127.0.0.1/9"
c=$(ino_of "$(head -n1 <<<"$OUT")")
cc=$(cookie_of "$OUT")
check "share: a touched run saw a namespace" test -n "$c" -a -n "$cc"
if cookie_kept "$cc"; then fail "share: a namespace whose counters moved is not kept" "$c still mounted"; else pass "share: a namespace whose counters moved is not kept"; fi
seen=""
for i in 1 2 3 4; do
	wr --net none -- bash -c "readlink /proc/self/ns/net; $COOKIE"
	[ "$(cookie_of "$OUT")" = "$cc" ] && seen=yes
done
expect_eq "share: no later run is given the touched one" "" "$seen"

# A socket made and closed with its process leaves nothing behind.
wr --net none -- python3 -c 'import socket,os; s=socket.socket(socket.AF_UNIX); s.bind("\0ward-share"); s.listen(); print(os.readlink("/proc/self/ns/net"))'
d=$(ino_of "$OUT")
check "share: a socket closed with its process leaves the namespace fit to keep" is_kept "$d"

# ward killed mid-run: nothing proved the namespace untouched (though here
# the sandbox did nothing to it), so no later run may have it; its mount
# stays until a run takes the slot.
"$WARD" run --net none -- bash -c "readlink /proc/self/ns/net; $COOKIE; exec sleep 97.52" >"$T/k.out" 2>/dev/null </dev/null &
wpid=$!
for i in $(seq 100); do [ "$(wc -l <"$T/k.out")" -ge 2 ] && break; sleep 0.05; done
sleep 0.2
kill -KILL "$wpid" 2>/dev/null
wait "$wpid" 2>/dev/null
for i in $(seq 50); do [ -z "$(marker_pids 97.52)" ] && break; sleep 0.1; done
expect_eq "share: the killed run's sandbox died with its ward" "" "$(marker_pids 97.52)"
k=$(ino_of "$(head -n1 "$T/k.out")")
kc=$(cookie_of "$(cat "$T/k.out")")
check "share: the killed run saw a namespace" test -n "$k" -a -n "$kc"
seen=""
for i in 1 2 3 4 5 6; do
	wr --net none -- bash -c "readlink /proc/self/ns/net; $COOKIE"
	[ "$(cookie_of "$OUT")" = "$kc" ] && seen=yes
done
expect_eq "share: a namespace whose ward died mid-run is never given to another run" "" "$seen"

# Off with WARD_NETNS_SHARE=0: each run makes its own and keeps none.
OUT=$(WARD_NETNS_SHARE=0 timeout 30 "$WARD" run --net none -- readlink /proc/self/ns/net 2>/dev/null </dev/null)
e=$(ino_of "$OUT")
if [ -n "$e" ] && ! is_kept "$e"; then pass "share: WARD_NETNS_SHARE=0 keeps none"; else fail "share: WARD_NETNS_SHARE=0 keeps none" "[$e]"; fi
# --net loopback makes its own namespace in the sandbox, never a shared one.
wr --net loopback -- readlink /proc/self/ns/net
l=$(ino_of "$OUT")
if [ -n "$l" ] && ! is_kept "$l"; then pass "share: --net loopback's namespace is never kept"; else fail "share: --net loopback's namespace is never kept" "[$l]"; fi
