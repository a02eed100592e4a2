#!/bin/bash
# tests/e2b/hostile.sh — the E2B listener's hostile cases (tests/e2b/hostile.py,
# raw HTTP): tokens and ids of others, paths out of the home, oversize and
# endless bodies, Connect deadlines of 0 and 10^12, 1000 SendInput frames at
# once, abandoned and killed streams.  Bounded: a small --max-body and
# --request-timeout, socket timeouts in the script.
. "$(dirname "$0")/lib.bash"
printf 'alice sekrit-alice-0123456789\nbob sekrit-bob-0123456789\n' >"$SERVE_TMP/tokens"
start_e2b hostile --token-file "$SERVE_TMP/tokens" --max-body 1048576 --request-timeout 4 --egress-allow example.invalid || exit 1
timeout -k 5 240 python3 "$ROOT/tests/e2b/hostile.py" "$E2B_URL" sekrit-alice-0123456789 sekrit-bob-0123456789 1048576
rc=$?
[ $rc -eq 0 ] || fail "hostile.py" "exited $rc: $(tail -c 600 "$SRV_LOG")"
kill -0 "$SRV_PID" 2>/dev/null && pass "e2b hostile: the server lives" || fail "e2b hostile: the server died" "$(tail -c 600 "$SERVE_TMP/hostile.out")"
stop_e2b hostile
