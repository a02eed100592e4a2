#!/bin/bash
# tests/e2b/fleet.sh — E2B traffic in a fleet (SPEC §17, §8): three real
# `ward serve --node-id runnerN --e2b` behind HAProxy running the shipped
# deploy/haproxy.cfg (only addresses, bind lines and the log target
# replaced); the real SDK makes sandboxes through it and every later call
# reaches the runner that holds its sandbox (tests/e2b/fleet.mjs).
. "$(dirname "$0")/lib.bash"
FLEET_NAME="e2b fleet"
. "$ROOT/tests/serve/fleet.bash"
node_ready || exit 0
printf 'alice sekrit-alice-0123456789\n' >"$SERVE_TMP/tokens"
declare -a EP
for i in 1 2 3; do
	start_e2b "runner$i" --node-id "runner$i" --token-file "$SERVE_TMP/tokens" || exit 1
	EP[$i]=${E2B_URL##*:}
	NP[$i]=$PORT
done
port=$(free_port) wport=$(free_port)
sed -e "s/server runner1 10\.0\.0\.11:49983$/server runner1 127.0.0.1:${EP[1]}/" \
    -e "s/server runner2 10\.0\.0\.12:49983$/server runner2 127.0.0.1:${EP[2]}/" \
    -e "s/server runner3 10\.0\.0\.13:49983$/server runner3 127.0.0.1:${EP[3]}/" \
    -e "s/server runner1 10\.0\.0\.11:8900$/server runner1 127.0.0.1:${NP[1]}/" \
    -e "s/server runner2 10\.0\.0\.12:8900$/server runner2 127.0.0.1:${NP[2]}/" \
    -e "s/server runner3 10\.0\.0\.13:8900$/server runner3 127.0.0.1:${NP[3]}/" \
    -e "s/^\(\s*\)bind :49983$/\1bind 127.0.0.1:$port/" \
    -e "s/^\(\s*\)bind :8900$/\1bind 127.0.0.1:$wport/" \
    -e "s#^\(\s*\)log /dev/log local0#\1log stderr format raw local0#" \
    "$ROOT/deploy/haproxy.cfg" >"$LB/haproxy.cfg"
expect_eq "e2b fleet: the shipped haproxy.cfg, 9 lines adapted" 9 "$(diff "$ROOT/deploy/haproxy.cfg" "$LB/haproxy.cfg" | grep -c '^>')"
if ! out=$(timeout 10 "$HAPROXY" -c -f "$LB/haproxy.cfg" 2>&1); then
	fail "e2b fleet: haproxy -c" "$out"
	exit 0
fi
"$HAPROXY" -db -f "$LB/haproxy.cfg" </dev/null >"$LB/haproxy.out" 2>&1 &
_LB_PIDS="$_LB_PIDS $!"
for _ in $(seq 50); do (echo >/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
sleep 2.5 # the first checks
E2B_URL=http://127.0.0.1:$port KEY=sekrit-alice-0123456789 sdk fleet.mjs || fail "e2b fleet: fleet.mjs" "exited $?: $(tail -c 800 "$LB/haproxy.out")"
