#!/bin/bash
# ward serve --allow-root: the directory a request names is the one that is
# checked and the one that is bound, also when the path changes in between.
# A request waits in the queue (one slot, held by a slow run) after its
# mounts and workdir passed the check; meanwhile the directory is renamed
# and a symlink to a host directory outside the allowed root is put in its
# place.  The run must see the original directory, never the symlink's
# target.  Twice: ward serve as root (the supervisor clones the held
# descriptor) and as uid 65534 (PID 1 binds the descriptor's path, pinned to
# its inode).  (Before ward held the checked directory open, and as 65534
# until it pinned it, the sandbox's PID 1 opened the path again and
# followed the swapped-in symlink.)
. "$(dirname "$0")/lib.bash"

if [ "$(id -u)" != 0 ]; then
	pass "allow-root swap: skipped (needs root, to start ward serve as root and as uid 65534)"
	exit 0
fi

# wait_metric NAME VALUE — up to 5 s for /metrics to say so
wait_metric() {
	for _ in $(seq 100); do
		curl -s --max-time 5 "$URL/metrics" | grep -q "^$1 $2\$" && return 0
		sleep 0.05
	done
	return 1
}

# swap_case WHO — the whole check with ward serve as WHO (root, or a uid in
# SERVE_AS); every line says which.
swap_case() {
	local who=$1
	ROOTDIR=$SERVE_TMP/allowed-$who
	OUTSIDE=$SERVE_TMP/outside-$who
	mkdir -p "$ROOTDIR/data" "$ROOTDIR/wd" "$ROOTDIR/gate" "$OUTSIDE"
	echo original >"$ROOTDIR/data/marker"
	echo original-wd >"$ROOTDIR/wd/marker"
	echo OUTSIDE >"$OUTSIDE/marker"
	chmod -R a+rX "$SERVE_TMP"
	# as the service account: the outside directory is its own, writable
	[ -n "$SERVE_AS" ] && chown -R "$SERVE_AS" "$ROOTDIR" "$OUTSIDE"

	start_server "swap-$who" --allow-root "$ROOTDIR" --max-concurrent 1 --queue 4 || exit 0

	# occupy the only slot until the swap is done (a gate, not a sleep:
	# the queued request must be checked before the swap and bound after)
	post_exec "{\"argv\":[\"sh\",\"-c\",\"while [ ! -e /gate/go ]; do sleep 0.05; done\"],\"mounts\":[{\"host_path\":\"$ROOTDIR/gate\",\"sandbox_path\":\"/gate\",\"read_only\":true}],\"limits\":{\"timeout_s\":30}}" >"$SERVE_TMP/slow" &
	slow=$!
	check "allow-root swap ($who): the gated run holds the only slot" wait_metric ward_in_flight 1
	# queued behind it: a read-only mount and a workdir, both checked now
	post_exec "{\"command\":\"cat /data/marker; cat marker; touch /work/new 2>&1\",\"mounts\":[{\"host_path\":\"$ROOTDIR/data\",\"sandbox_path\":\"/data\",\"read_only\":true}],\"workdir\":\"$ROOTDIR/wd\",\"limits\":{\"timeout_s\":20}}" >"$SERVE_TMP/queued" &
	queued=$!
	check "allow-root swap ($who): the second request waits in the queue, checked" wait_metric ward_queued 1
	# swap both paths for symlinks to a directory outside the allowed root
	mv "$ROOTDIR/data" "$ROOTDIR/data.moved"
	mv "$ROOTDIR/wd" "$ROOTDIR/wd.moved"
	ln -s "$OUTSIDE" "$ROOTDIR/data"
	ln -s "$OUTSIDE" "$ROOTDIR/wd"
	touch "$ROOTDIR/gate/go"
	wait "$slow" "$queued"
	r=$(cat "$SERVE_TMP/queued")
	expect_eq "allow-root swap ($who): the queued request ran" "200 ok" "$(code_of "$r") $(jg "$(body_of "$r")" 'd["status"]')"
	out=$(jg "$(body_of "$r")" 'd["stdout"]')
	expect_eq "allow-root swap ($who): the mount is the directory that was checked, not the symlink's target" \
		"original" "$(sed -n 1p <<<"$out")"
	expect_eq "allow-root swap ($who): so is the workdir" "original-wd" "$(sed -n 2p <<<"$out")"
	check "allow-root swap ($who): the workdir's writes land in the checked directory" test -e "$ROOTDIR/wd.moved/new"
	check "allow-root swap ($who): nothing was written outside the allowed root" test ! -e "$OUTSIDE/new"
	# and a path that is a symlink at check time is refused, as before
	r=$(post_exec "{\"command\":\"true\",\"mounts\":[{\"host_path\":\"$ROOTDIR/data\",\"read_only\":true}]}")
	expect_eq "allow-root swap ($who): a symlinked path is refused at the check (400)" 400 "$(code_of "$r")"
	stop_server "$SRV_PID"
}

SERVE_AS= swap_case root
SERVE_AS=65534 swap_case 65534
