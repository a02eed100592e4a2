#!/bin/bash
# tests/e2b/ports_strict.sh — the port relay as a strict proxy and its shares
# between keys (tests/e2b/ports_strict.py, raw sockets; the second review's
# relay_cl_te, relay_status, ws_cap and relay_body): a body's framing is
# ward's alone (Content-Length with Transfer-Encoding, two Content-Lengths:
# 400 and closed; a chunked body goes up with its decoded length); the
# sandbox's server's status checked (a 101 nobody asked for: 502; 1xx
# skipped; 204, 304 and HEAD answers bodiless); one key's sandboxes take at
# most --e2b-key-sockets WebSockets and a quarter of --max-body-total of
# relayed bodies, whoever opens them (no key is needed).
. "$(dirname "$0")/lib.bash"
printf 'alice sekrit-alice-0123456789\nbob sekrit-bob-0123456789\n' >"$SERVE_TMP/tokens"
run_part() {
	local part=$1
	shift
	start_e2b "strict-$part" --token-file "$SERVE_TMP/tokens" "$@" || return
	PYTHONPATH=$E2B_DIR timeout -k 5 240 python3 "$E2B_DIR/ports_strict.py" "$part" "$E2B_URL" "$URL"
	local rc=$?
	[ $rc -eq 0 ] || fail "ports_strict.py $part" "exited $rc: $(tail -c 600 "$SRV_LOG")"
	stop_e2b "strict-$part"
}
run_part framing
run_part status
run_part keys --max-connections 16 --e2b-max-sockets 4
run_part bodies --max-body 1048576 --max-body-total 8388608
