#!/bin/bash
# tests/e2b/ports_bytes.sh — the bytes a sandbox's ports relay are its own
# (SPEC §18 "Ports"; issue 32.3), under --e2b-port-bytes 1048576 with the
# real SDK (tests/e2b/ports_bytes.mjs): a 600 KiB answer passes, the
# second is cut short, then 403; an upload's body counts; another sandbox
# is not charged; a resume from files keeps the count; a WebSocket that
# streams past it is closed (ports_ws.mjs spent); the log and /metrics say
# so.  And --e2b-max-sockets 2 counts a sandbox's HTTP relays at once too.
. "$(dirname "$0")/lib.bash"
node_ready || exit 0
start_alice ports_bytes --e2b-port-bytes 1048576 --e2b-max-sockets 2 || exit 1
sdk_checked ports_bytes.mjs
sdk_checked ports_ws.mjs spent
m=$(curl -s -H "Authorization: Bearer $KEY_ALICE" "$URL/metrics")
n() { sed -n "s/^$1 \([0-9]*\)$/\1/p" <<<"$m"; }
if [ "$(n 'ward_e2b_port_spent_total{event="cut"}')" -ge 4 ] 2>/dev/null &&
	[ "$(n 'ward_e2b_port_spent_total{event="refused"}')" -ge 3 ] 2>/dev/null &&
	[ "$(n ward_e2b_port_bytes_total)" -ge $((2 << 20)) ] 2>/dev/null; then
	pass "e2b ports bytes: /metrics counts the bytes relayed, the relays cut and the requests refused"
else
	fail "e2b ports bytes: /metrics" "$(grep e2b_port <<<"$m")"
fi
if grep -q '"event":"e2b-port-bytes".*a WebSocket cut' "$SRV_LOG" && grep -q '"event":"e2b-port-bytes".*an answer cut' "$SRV_LOG"; then
	pass "e2b ports bytes: the log says which sandbox's relay was cut"
else
	fail "e2b ports bytes: the log" "no e2b-port-bytes line for an answer and a WebSocket"
fi
stop_e2b ports_bytes
