#!/bin/bash
# ward serve run by a service account (not root), --allow-root a temporary
# directory: a request's mount, workdir or rootfs (and what ward binds from
# inside the rootfs: its top-level entries, etc/ssl) is the directory that
# passed the check, never what a symlink swapped in afterwards points to.
# One request's sandbox swaps, in a tight loop, directories of its own
# workdir for symlinks to a directory outside the allowed root that the
# service account can read (a token); other requests bind those paths and
# try to read it.  Bounded: one attacker run of at most 20 s, at most 200
# victim requests.  (Before the fix, the sandbox's PID 1 opened the path
# string again, following the symlink: the token showed within a few
# requests.  A rootfs whose etc is a symlink leaked it with no race at all.)
. "$(dirname "$0")/lib.bash"

if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null; then
	pass "unprivileged swap: skipped (needs root and setpriv to start ward serve as uid 65534)"
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
chmod 0700 "$S"
chmod 0600 "$S/token" "$S/ssl/token"

SERVE_AS=$NOBODY start_server swap --allow-root "$A" --max-concurrent 4 --queue 8 || exit 0

# The static case first: nothing races.
r=$(post_exec "{\"argv\":[\"/bin/sh\",\"-c\",\"cat /etc/ssl/token; echo end\"],\"rootfs\":\"$A/static\"}")
expect_not_contains "unprivileged swap: a rootfs whose etc is a symlink outside shows nothing of it" "$r" "$TOKEN"
expect_contains "unprivileged swap: ... and the run itself works" "$(jg "$(body_of "$r")" 'd["stdout"]')" end

# The attacker: rename each directory away, put a symlink to the secret
# directory in its place, take it out, rename the directory back.
cat >"$W/swap.py" <<EOF
import os, time
os.chdir('/work')
names = ['x', 'r/srv', 'r/etc/ssl']
n = 0
end = time.time() + 20
while time.time() < end and not os.path.exists('stop'):
    for p in names:
        os.rename(p, p + '.d'); os.symlink('$S', p); os.unlink(p); os.rename(p + '.d', p)
    n += 1
print('swaps', n)
EOF
chown "$NOBODY" "$W/swap.py"
post_exec "{\"argv\":[\"python3\",\"swap.py\"],\"workdir\":\"$W\",\"limits\":{\"timeout_s\":30}}" >"$SERVE_TMP/attacker" &
att=$!
if ! wait_for test -e "$W/x.d" -o -L "$W/x"; then
	fail "unprivileged swap: the attacker's loop started" "$(cat "$SERVE_TMP/attacker")"
	exit 0
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
	*"$TOKEN"*) leaked=1; fail "unprivileged swap: request $i read the secret through a swapped symlink" "$r" ;;
	"400 "*) refused=$((refused + 1)) ;;
	"200 "*decoy*) ran=$((ran + 1)) ;;
	*) other=$((other + 1)) ;;
	esac
	i=$((i + 1))
done
touch "$W/stop"
wait "$att"
[ "$leaked" = 0 ] && pass "unprivileged swap: $i requests raced the swaps, none read the secret ($ran ran on the checked directory, $refused refused at the check, $other refused at the bind; attacker: $(jg "$(body_of "$(cat "$SERVE_TMP/attacker")")" 'd["stdout"].strip()'))"
expect_eq "unprivileged swap: the secret is unchanged" "$TOKEN" "$(cat "$S/token")"
check "unprivileged swap: nothing was written into the secret directory" test ! -e "$S/written"
stop_server "$SRV_PID"
