#!/bin/bash
# tests/serve/favor_dynmods.sh — `ward serve --favor-dynmods` turns on the
# kernel's favordynmods (src/sandbox/cgroup_dynmods.c) and `ward doctor`
# reports what a cgroup migration costs.  cgroup v1 (this host): a named
# hierarchy with the option at /run/ward-favordynmods, mounted once however
# many servers start; cgroup v2 (tests/cgroup2/dynmods.sh runs this in the
# VM): the cgroup2 mount gains the option and keeps the ones it had.
# Host-wide, as the option is: the v1 mount is removed at the end when this
# test made it (on some kernels the kernel's mode stays until reboot).
. "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
[ "$(id -u)" = 0 ] || { pass "favor-dynmods: skipped (needs root)"; exit 0; }

OUT=$(timeout 30 "$WARD" doctor </dev/null)
line=$(printf '%s\n' "$OUT" | grep '^  migration ')
expect_contains "doctor: measures a cgroup migration" "$line" "moving a process into a cgroup took"
printf '%s' "$line" | grep -Eq 'took [0-9]+\.[0-9]+ ms' && pass "doctor: gives the figure in ms" ||
	fail "doctor: gives the figure in ms" "$line"
J=$(timeout 30 "$WARD" doctor --json </dev/null)
expect_contains "doctor --json: the migration item" "$J" '"migration"'

v2_opts() { awk '$0 ~ / - cgroup2 / { for (i = 1; i <= NF; i++) if ($i == "-") { print $(i + 3); exit } }' /proc/self/mountinfo; }
v1_count() { grep -c ' - cgroup .*name=ward-favordynmods' /proc/self/mountinfo; }

# Where it cannot be done (no right to mount) the server says why and does
# not start.
if [ -e /sys/fs/cgroup/cgroup.controllers ] || [ "$(v1_count)" = 0 ]; then
	OUTF=$(timeout 20 setpriv --reuid 65534 --regid 65534 --clear-groups "$WARD" serve --listen 127.0.0.1:0 \
		--favor-dynmods --log /dev/null </dev/null 2>&1); rc=$?
	expect_eq "unprivileged: does not start" 125 "$rc"
	expect_contains "unprivileged: names the fix" "$OUTF" "without --favor-dynmods"
fi

if [ -e /sys/fs/cgroup/cgroup.controllers ]; then
	before=$(v2_opts)
	start_server a --favor-dynmods || exit 0
	after=$(v2_opts)
	expect_contains "v2: the cgroup2 mount has favordynmods" "$after" favordynmods
	for o in $(printf '%s' "$before" | tr , ' '); do
		expect_contains "v2: the remount kept '$o'" ",$after," ",$o,"
	done
else
	had=$(v1_count)
	start_server a --favor-dynmods || exit 0
	expect_eq "v1: the named hierarchy with favordynmods is mounted" 1 "$(v1_count)"
	grep ' - cgroup .*name=ward-favordynmods' /proc/self/mountinfo | grep -q favordynmods &&
		pass "v1: mounted with the option" || fail "v1: mounted with the option" "$(grep ward-favordynmods /proc/self/mountinfo)"
	start_server b --favor-dynmods || exit 0
	expect_eq "v1: a second server mounts nothing more" 1 "$(v1_count)"
fi
expect_contains "the log says so" "$(cat "$SRV_LOG")" '"favor-dynmods"'
# Sessions work on the tuned host.
sid=$(jg "$(curl -s -XPOST "$URL/sessions" -d '{}')" 'd["id"]')
R=$(curl -s -XPOST "$URL/sessions/$sid/exec" -d '{"argv":["sh","-c","echo hi"]}')
expect_eq "a session exec runs" "hi" "$(jg "$R" 'd["stdout"].strip()')"
curl -s -XDELETE "$URL/sessions/$sid" >/dev/null

if [ ! -e /sys/fs/cgroup/cgroup.controllers ] && [ "${had:-1}" = 0 ]; then
	_serve_cleanup
	trap - EXIT
	umount /run/ward-favordynmods 2>/dev/null && rmdir /run/ward-favordynmods 2>/dev/null
fi
