#!/bin/bash
# ward serve, --allow-root a temporary directory: a request's mount, workdir
# or rootfs (and what ward binds from inside the rootfs: its top-level
# entries, etc/ssl) is the directory that passed the check, never what a
# symlink swapped in afterwards points to.  One request's sandbox swaps, in a
# tight loop, directories of its own workdir for symlinks to a directory
# outside the allowed root that the service account can read (a token);
# other requests bind those paths and try to read it.  Bounded: one attacker
# run of at most 20 s, at most 200 victim requests, per case.  As uid 65534
# (a service account: before the fix, the sandbox's PID 1 opened the path
# string again, following the symlink, and the token showed within a few
# requests; a rootfs whose etc is a symlink leaked it with no race at all),
# then as root.
. "$(dirname "$0")/lib.bash"

if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null; then
	pass "swap race: skipped (needs root and setpriv to start ward serve as uid 65534)"
	exit 0
fi
NOBODY=65534
A=$SERVE_TMP/allowed
S=$SERVE_TMP/secret # outside the allowed root; the service account's own
W=$A/ws             # the attacker's workdir
mkdir -p "$W/x" "$W/r/bin" "$W/r/srv" "$W/r/etc/ssl" "$S/ssl" "$A/static/bin"
TOKEN=SECRET-$$-$RANDOM
echo "$TOKEN" >"$S/token"
echo "$TOKEN" >"$S/ssl/token"
for d in "$W/x" "$W/r/srv" "$W/r/etc/ssl"; do echo decoy >"$d/token"; done
for r in "$W/r" "$A/static"; do
	cp /bin/busybox "$r/bin/busybox"
	for a in sh cat echo; do ln -s busybox "$r/bin/$a"; done
done
# a rootfs whose etc is a symlink to the secret directory from the start
ln -s "$S" "$A/static/etc"
chmod 0755 "$SERVE_TMP"
chown -R "$NOBODY:$NOBODY" "$A" "$S"
chmod 0755 "$S" # readable by everyone: as root a leak must show too

# The attacker: rename each directory away and put a symlink to the secret
# directory in its place; then take the symlinks out and rename the
# directories back (each path is a directory half the time, a symlink the
# other half).
cat >"$W/swap.py" <<EOF
import os, time
os.chdir('/work')
names = ['x', 'r/srv', 'r/etc/ssl']
n = 0
end = time.time() + 20
while time.time() < end and not os.path.exists('stop'):
    for p in names:
        os.rename(p, p + '.d'); os.symlink('$S', p)
    for p in names:
        os.unlink(p); os.rename(p + '.d', p)
    n += 1
print('swaps', n)
EOF
chown "$NOBODY" "$W/swap.py"

# race_case WHO — the checks with ward serve as WHO (root, or SERVE_AS)
race_case() {
	local who=$1 r j i t0 att leaked ran refused other
	rm -f "$W/stop"
	start_server "swap-$who" --allow-root "$A" --max-concurrent 4 --queue 8 || return

	# The static case first: nothing races.
	r=$(post_exec "{\"argv\":[\"/bin/sh\",\"-c\",\"cat /etc/ssl/token; echo end\"],\"rootfs\":\"$A/static\"}")
	expect_not_contains "swap race ($who): a rootfs whose etc is a symlink outside shows nothing of it" "$r" "$TOKEN"
	expect_contains "swap race ($who): ... and the run itself works" "$(jg "$(body_of "$r")" 'd["stdout"]')" end

	post_exec "{\"argv\":[\"python3\",\"swap.py\"],\"workdir\":\"$W\",\"limits\":{\"timeout_s\":30}}" >"$SERVE_TMP/attacker" &
	att=$!
	if ! wait_for test -e "$W/x.d" -o -L "$W/x"; then
		fail "swap race ($who): the attacker's loop started" "$(cat "$SERVE_TMP/attacker")"
		return
	fi

	leaked=0 ran=0 refused=0 other=0 i=0
	t0=$(date +%s)
	while [ "$i" -lt 200 ] && [ $(($(date +%s) - t0)) -lt 20 ] && [ "$leaked" = 0 ]; do
		case $((i % 3)) in
		0) j="{\"command\":\"cat /m/token\",\"mounts\":[{\"host_path\":\"$W/x\",\"sandbox_path\":\"/m\",\"read_only\":true}]}" ;;
		1) j="{\"command\":\"cat token; echo pwned >written\",\"workdir\":\"$W/x\"}" ;;
		2) j="{\"argv\":[\"/bin/sh\",\"-c\",\"cat /srv/token /etc/ssl/token\"],\"rootfs\":\"$W/r\"}" ;;
		esac
		r=$(post_exec "$j")
		case "$r" in
		*"$TOKEN"*) leaked=1; fail "swap race ($who): request $i read the secret through a swapped symlink" "$r" ;;
		"400 "*) refused=$((refused + 1)) ;;
		"200 "*decoy*) ran=$((ran + 1)) ;;
		*) other=$((other + 1)) ;;
		esac
		i=$((i + 1))
	done
	touch "$W/stop"
	wait "$att"
	[ "$leaked" = 0 ] && pass "swap race ($who): $i requests raced the swaps, none read the secret ($ran ran on the checked directory, $refused refused at the check, $other refused at the bind; attacker: $(jg "$(body_of "$(cat "$SERVE_TMP/attacker")")" 'd["stdout"].strip()'))"
	expect_eq "swap race ($who): the secret is unchanged" "$TOKEN" "$(cat "$S/token")"
	check "swap race ($who): nothing was written into the secret directory" test ! -e "$S/written"
	stop_server "$SRV_PID"
}

SERVE_AS=$NOBODY race_case 65534
SERVE_AS= race_case root
