#!/bin/bash
# tests/cgroup2/pool.sh — sandboxes built ahead (ward serve --pool) on cgroup
# v2: a pooled sandbox's PID 1 is born in a cgroup with the default limits
# (clone3 CLONE_INTO_CGROUP), and a request that asks for others gets them
# when it takes the sandbox.
# Run in the pure-v2 guest (tests/run-vm cgroup2); few requests, since every
# exec there costs ~50 ms.  The memory attack is capped at 256 MB.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
PROBE=$("$HELPERS/cgtool" probe 2>&1)
if ! printf '%s\n' "$PROBE" | grep -qx 'version=2'; then
	pass "cgroup2 pool: skipped, this host is not cgroup v2 (run it with tests/run-vm cgroup2)"
	exit 0
fi
T=$(mktemp -d /tmp/ward-test.XXXXXX)
SRV=""
cleanup() {
	[ -n "$SRV" ] && kill -KILL "$SRV" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

"$WARD" serve --listen 127.0.0.1:0 --pool 2 --max-concurrent 2 --log "$T/log" </dev/null >"$T/out" 2>&1 &
SRV=$!
URL=$(listening_addr "$T/log" "$SRV")
if [ -z "$URL" ]; then
	fail "cgroup2 pool: ward serve --pool 2 starts" "$(head -c 600 "$T/out" "$T/log")"
	exit 0
fi
URL=http://$URL
metric() { curl -s --max-time 30 "$URL/metrics" | awk -v m="$1" '$1==m{print $2}'; }
expect_eq "cgroup2 pool: two sandboxes ready" 2 "$(metric ward_pool_ready)"
pooled=$(ls -d /sys/fs/cgroup/ward/ward-"$SRV"-* 2>/dev/null | head -1)
expect_eq "cgroup2 pool: a pooled sandbox's cgroup has the default memory limit (512 MiB)" "$((512 << 20))" "$(cat "$pooled/memory.max" 2>/dev/null)"

MEM='b=[]
for i in range(32): b.append(bytearray(8 << 20))
print("survived")'
body=$(python3 -c 'import json,sys; print(json.dumps({"argv":["python3","-c",sys.argv[1]],"limits":{"memory_mb":24,"pids":16,"timeout_s":60}}))' "$MEM")
r=$(curl -s --max-time 90 --data-binary "$body" "$URL/exec")
expect_eq "cgroup2 pool: the request's memory limit holds in a pooled sandbox" "memory cgroup-v2" \
	"$(jg "$r" 'd["status"] + " " + d["enforced"]["memory"]')"
expect_eq "cgroup2 pool: it was a pooled sandbox" 1 "$(metric 'ward_pool_takes_total{result="hit"}')"
r=$(curl -s --max-time 90 --data-binary '{"command":"echo ok","limits":{"timeout_s":60}}' "$URL/exec")
expect_eq "cgroup2 pool: the next pooled run is unaffected" "ok ok" "$(jg "$r" 'd["status"] + " " + d["stdout"].strip()')"
# On this kernel too (6.1), the helper's prepared root serves: copied whole,
# owned by the host (unmapped inside), and read-only.
r=$(curl -s --max-time 90 --data-binary '{"command":"stat -c %u /; touch /etc/x 2>/dev/null || echo read-only","limits":{"timeout_s":60}}' "$URL/exec")
expect_eq "cgroup2 pool: the sandbox's root is the helper's prepared one, read-only" "65534 read-only" "$(jg "$r" 'd["stdout"]' | xargs)"

kill -TERM "$SRV"
for _ in $(seq 300); do kill -0 "$SRV" 2>/dev/null || break; sleep 0.1; done
wait "$SRV" 2>/dev/null
expect_eq "cgroup2 pool: SIGTERM exits 0" 0 $?
expect_eq "cgroup2 pool: no cgroup of the server left" "" "$(ls -d /sys/fs/cgroup/ward/ward-"$SRV"-* 2>/dev/null)"
SRV=""
