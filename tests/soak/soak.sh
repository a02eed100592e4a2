#!/bin/bash
# tests/soak/soak.sh — a soak, with nothing lost: one `ward serve` with every
# listener (native, --piston, --judge0, --e2b) takes SOAK_REQUESTS mixed
# requests from SOAK_CLIENTS clients at once (tests/soak/soak.mjs: /exec,
# /judge, sessions with background processes and files, the real
# piston-client, Judge0's API, E2B sandboxes through the real e2b SDK),
# bounded by SOAK_SECONDS; afterwards the server's own resources must come
# back to their baseline, taken after a warm-up round of every kind:
#   fds         every fd but the kept caches', exactly; the kept network
#               namespaces (net:[...]) and cgroups (/sys/fs/cgroup/..., and
#               the socket of the process parked in each on cgroup v1)
#               within their bounds (serve.c: --max-concurrent + --pool + 16
#               and + 4; a kept cgroup holds at most 35 fds, cgroup_keep.c's
#               KEEP_FDS)
#   threads     exactly
#   RSS         within SOAK_RSS_SLACK_MB (default 16) of the baseline
#   cgroups     its own (ward-PID-*, every controller's hierarchy): within
#               the kept cgroups' bound
#   mounts      none of its own added (a mount point naming its pid or its
#               files); /run/ward/netns's shared slots within 64
#               (SHARE_SLOTS_MAX, for every server on the host)
#   processes   its descendants, exactly (the spawner helpers stay), and
#               the processes parked in its kept cgroups within their bound
# Figures go to stdout as "# soak:" lines (docs/security.md has them).
# tests/run's soak group runs the short form (300 requests, well under a
# minute); `make soak` the full one (10,000; SOAK_SECONDS 1800).
. "$(dirname "$0")/../e2b/lib.bash"
SOAK_REQUESTS=${SOAK_REQUESTS:-300}
SOAK_CLIENTS=${SOAK_CLIENTS:-4}
SOAK_SECONDS=${SOAK_SECONDS:-300}
SLACK_MB=${SOAK_RSS_SLACK_MB:-16}
MAXC=2

# the real clients, as tests/e2b and tests/dialect install them (skipped as
# those groups skip, with a note, where node or the registry is missing)
node_ready || exit 0
. "$ROOT/tests/dialect/dialect.bash"
node_modules_ready || { echo "# npm ci of piston-client failed (no registry?): soak skipped: $(tail -3 "$NODE_DIR/npm.log")"; exit 0; }
PISTON_CLIENT_DIR=$NODE_DIR/node_modules/piston-client
NODE_DIR=$ROOT/build/e2b-node
cp "$ROOT/tests/soak/soak.mjs" "$NODE_DIR/"

# finished Judge0 submissions are kept --judge0-keep: 2 s here, so that the
# check sees them go (they are a cache bounded by --judge0-max-queue)
start_e2b soak --languages "$ROOT/languages.json" --max-concurrent $MAXC \
	--piston 127.0.0.1:0 --judge0 127.0.0.1:0 --judge0-keep 2 || exit 0
PISTON_URL=$(dialect_url piston)
JUDGE0_URL=$(dialect_url judge0)
NETNS_KEEP=$((MAXC + 16))
CG_KEEP=$((MAXC + 4))

descendants() { # every process under $1, as "pid comm"
	ps -e -o pid=,ppid=,comm= | awk -v root="$1" '
		{ pp[$1] = $2; c[$1] = $3 }
		END { for (p in pp) { q = pp[p]; while (q && q != root && q in pp) q = pp[q]; if (q == root) print p, c[p] } }'
}
# its cgroups: ward-PID-* in the hierarchy that has the most (each is in
# every controller's hierarchy under cgroup v1)
own_cgroups() {
	find /sys/fs/cgroup -maxdepth 4 -type d -name "ward-$SRV_PID-*" 2>/dev/null |
		awk -F/ '{ n[$5]++ } END { m = 0; for (h in n) if (n[h] > m) m = n[h]; print m }'
}
own_mounts() { awk -v p="ward-$SRV_PID-" -v t="$SERVE_TMP" 'index($5, p) || index($5, t)' /proc/"$SRV_PID"/mountinfo | wc -l; }
slot_mounts() { awk '$5 ~ "^/run/ward/netns/"' /proc/"$SRV_PID"/mountinfo | wc -l; }
fd_kinds() { # plain kept_netns kept_cgroup
	local f plain=0 ns=0 cg=0
	for f in /proc/"$SRV_PID"/fd/*; do
		case "$(readlink "$f" 2>/dev/null)" in
		'') ;;
		net:\[*) ns=$((ns + 1)) ;;
		/sys/fs/cgroup/*) cg=$((cg + 1)) ;;
		*) plain=$((plain + 1)) ;;
		esac
	done
	# each parked process's socket is its kept cgroup's (cgroup_park.c)
	local parked
	parked=$(descendants "$SRV_PID" | grep -c ' ward-parked$')
	echo "$((plain - parked)) $ns $((cg + parked))"
}
procs() { descendants "$SRV_PID" | grep -vc ' ward-parked$'; }
rss_kb() { awk '$1 == "VmRSS:" { print $2 }' /proc/"$SRV_PID"/status; }
snap() { # fds kept_ns_fds kept_cg_fds threads procs cgroups own_mounts slot_mounts rss_kb
	echo "$(fd_kinds) $(ls /proc/"$SRV_PID"/task | wc -l) $(procs) $(own_cgroups) $(own_mounts) $(slot_mounts) $(rss_kb)"
}

drive() { # N SECONDS
	(cd "$NODE_DIR" && NATIVE_URL=$URL PISTON_URL=$PISTON_URL JUDGE0_URL=$JUDGE0_URL E2B_API_URL=$E2B_URL \
		E2B_SANDBOX_URL=$E2B_URL E2B_API_KEY=soak E2B_DOMAIN=ward.invalid PISTON_CLIENT_DIR=$PISTON_CLIENT_DIR \
		SOAK_REQUESTS=$1 SOAK_SECONDS=$2 SOAK_CLIENTS=$SOAK_CLIENTS \
		timeout -k 5 $(($2 + 120)) node soak.mjs)
}

# warm-up: every kind once (what the first of each loads and keeps), then
# the baseline, once the server is idle again
drive 1 120 | grep -v '^SOAK ' | sed 's/^PASS: soak:/PASS: soak warm-up:/; s/^FAIL: soak:/FAIL: soak warm-up:/'
idle() { [ "$(descendants "$SRV_PID" | grep -cvE ' ward-(spawner|parked)$')" = 0 ]; }
wait_for idle
sleep 3 # past --judge0-keep and a sweep
before=$(snap)

out=$(drive "$SOAK_REQUESTS" "$SOAK_SECONDS")
printf '%s\n' "$out" | grep -v '^SOAK '
read -r _ nreq secs <<<"$(printf '%s\n' "$out" | sed -n 's/^SOAK requests=\([0-9]*\) seconds=\([0-9.]*\)/x \1 \2/p')"
[ -n "${nreq:-}" ] || fail "soak: the driver" "no summary line: $(printf '%s' "$out" | tail -5)"
peak=$(awk '$1 == "VmHWM:" { print $2 }' /proc/"$SRV_PID"/status)

# back to the baseline: what the clients left is closed at the deadlines,
# Judge0's records at --judge0-keep, sandboxes torn down by the reaper
read -r f0 n0 c0 t0 p0 g0 m0 s0 r0 <<<"$before"
back() {
	read -r f1 n1 c1 t1 p1 g1 m1 s1 r1 <<<"$(snap)"
	[ "$f1" = "$f0" ] && [ "$t1" = "$t0" ] && [ "$p1" = "$p0" ] && [ "$m1" -le "$m0" ] && [ "$g1" -le "$CG_KEEP" ] &&
		[ "$r1" -le $((r0 + SLACK_MB * 1024)) ]
}
for _ in $(seq 30); do back && break; sleep 1; done
read -r f1 n1 c1 t1 p1 g1 m1 s1 r1 <<<"$(snap)"
echo "# soak: $nreq requests from $SOAK_CLIENTS clients in $secs s (--max-concurrent $MAXC)"
echo "# soak: baseline -> after: fds $f0 -> $f1, kept netns fds $n0 -> $n1 (bound $NETNS_KEEP), kept cgroup fds $c0 -> $c1," \
	"threads $t0 -> $t1, processes $p0 -> $p1, own cgroups $g0 -> $g1 (bound $CG_KEEP), own mounts $m0 -> $m1," \
	"netns slot mounts $s0 -> $s1 (bound 64, host-wide), RSS $((r0 / 1024)) -> $((r1 / 1024)) MiB (peak $((peak / 1024)) MiB)"
expect_eq "soak: fds back to the baseline (but the kept caches')" "$f0" "$f1"
check "soak: kept network namespaces within their bound ($n1 <= $NETNS_KEEP)" test "$n1" -le "$NETNS_KEEP"
check "soak: kept cgroups' fds within their bound ($c1 <= $CG_KEEP x 35)" test "$c1" -le $((CG_KEEP * 35))
pk=$(descendants "$SRV_PID" | grep -c ' ward-parked$')
check "soak: processes parked in its kept cgroups within their bound ($pk <= $CG_KEEP)" test "$pk" -le "$CG_KEEP"
expect_eq "soak: threads back to the baseline" "$t0" "$t1"
expect_eq "soak: processes back to the baseline ($(descendants "$SRV_PID" | awk '{print $2}' | sort | uniq -c | tr '\n' ' '))" "$p0" "$p1"
check "soak: its cgroups within the kept bound ($g1 <= $CG_KEEP)" test "$g1" -le "$CG_KEEP"
if [ "$g1" -gt "$CG_KEEP" ]; then # which: path, tasks, bytes charged
	for d in $(find /sys/fs/cgroup/memory /sys/fs/cgroup/ward -maxdepth 3 -type d -name "ward-$SRV_PID-*" 2>/dev/null); do
		echo "#   $d tasks=$(wc -l <"$d/cgroup.procs") mem=$(cat "$d/memory.usage_in_bytes" "$d/memory.current" 2>/dev/null | head -1)"
	done
	curl -s "$URL/metrics" | grep -i cgroup | sed 's/^/#   /'
fi
check "soak: no mount of its own left ($m0 -> $m1)" test "$m1" -le "$m0"
check "soak: netns slots within 64 ($s1)" test "$s1" -le 64
check "soak: RSS back within ${SLACK_MB} MiB of the baseline ($((r0 / 1024)) -> $((r1 / 1024)) MiB)" \
	test "$r1" -le $((r0 + SLACK_MB * 1024))
stop_e2b soak
