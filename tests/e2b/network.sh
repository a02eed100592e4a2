#!/bin/bash
# tests/e2b/network.sh — updateNetwork (SPEC §18, issue 32.6) with the real
# SDK (tests/e2b/network.mjs): a sandbox's allow-list replaced live within
# --egress-allow, against local upstreams (tests/egress.bash) pinned by
# --egress-resolve.
. "$(dirname "$0")/lib.bash"
. "$ROOT/tests/egress.bash"
node_ready || exit 0
EG_PID=
trap '[ -n "$EG_PID" ] && kill "$EG_PID" 2>/dev/null; _serve_cleanup' EXIT
if ! egress_fixture "$SERVE_TMP/fx"; then
	fail "e2b network: local upstreams start" "$(head -5 "$SERVE_TMP/fx/servers.err" 2>/dev/null)"
	exit 0
fi
start_alice network --e2b-state "$SERVE_TMP/state" --egress-allow "pypi.test:$EG_HTTP" \
	--egress-allow "*.files.test:$EG_HTTP" --egress-resolve pypi.test:127.0.0.1 \
	--egress-resolve a.files.test:127.0.0.1 || exit 1
PORT=$EG_HTTP sdk_checked network.mjs
stop_e2b network
