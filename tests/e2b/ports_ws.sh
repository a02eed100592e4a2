#!/bin/bash
# tests/e2b/ports_ws.sh — WebSockets to a sandbox's port (SPEC §18
# "Ports"; issue 32.3) through getHost(port), with the real SDK and the
# `ws` client (tests/e2b/ports_ws.mjs): text and a 1 MiB binary message
# echoed by a server in the sandbox, the client's close and the upstream's
# passed on, a refused upgrade's 400 passed through, the caps (429 a
# sandbox, 503 in all: --e2b-key-sockets 8 lets alice's sandboxes reach it;
# the per-key cap is ports_strict.sh's), a killed sandbox closing its client, the traffic
# token of allowPublicTraffic false; the server stops cleanly with a
# socket open, and closes it.
. "$(dirname "$0")/lib.bash"
node_ready || exit 0
start_alice ports_ws --e2b-max-sockets 4 --max-connections 16 --e2b-key-sockets 8 || exit 1
sdk_checked ports_ws.mjs
KEY=$KEY_ALICE sdk ports_ws.mjs hold >"$SERVE_TMP/hold.out" 2>&1 &
held=$!
for _ in $(seq 600); do grep -q '^HELD\|^FAIL' "$SERVE_TMP/hold.out" && break; sleep 0.1; done
stop_e2b ports_ws # with the socket open: closed before the listener stops
wait $held
grep -v '^HELD' "$SERVE_TMP/hold.out"
