#!/bin/bash
# tests/e2b/file_worker.sh — no call into a sandbox's file worker runs on the E2B
# listener's one I/O thread (tests/e2b/file_worker.py, raw HTTP): a sandbox that SIGSTOPs
# its file workers during an upload and a watch stalls nobody else; keyless peers' bodies
# are never held (their sandbox and token checked at the headers); an upload wakes a paused
# autoResume sandbox (on its pump); one key's WatchDirs on a stalled sandbox hold one of the
# listers at most (another key's watch still sees its events); an upload in flight at SIGTERM
# holds no session (no sessions-left, nothing leaked under ASan).  Bounded: socket timeouts in the script,
# --request-timeout 60, the stopped sandbox killed.
. "$(dirname "$0")/lib.bash"
KA=sekrit-alice-0123456789 KB=sekrit-bob-0123456789
printf 'alice %s\nbob %s\n' "$KA" "$KB" >"$SERVE_TMP/tokens"
py() { timeout -k 5 240 python3 "$ROOT/tests/e2b/file_worker.py" "${E2B_URL#http://}" "$KA" "$KB" "$@"; }
start_e2b file_worker --token-file "$SERVE_TMP/tokens" --session-call-timeout 120 --request-timeout 60 \
	--max-body 1048576 --max-body-total 8388608 --e2b-state "$SERVE_TMP/state" || exit 1
for m in stall body wake fair; do
	py "$m" || fail "file_worker.py $m" "exited $?: $(tail -c 600 "$SRV_LOG")"
done
kill -0 "$SRV_PID" 2>/dev/null && pass "e2b file worker: the server lives" || fail "e2b file worker: the server died" "$(tail -c 600 "$SERVE_TMP/file_worker.out")"
# an upload in flight when the server stops
: >"$SERVE_TMP/open.out"
py open >"$SERVE_TMP/open.out" 2>&1 &
opener=$!
for _ in $(seq 300); do grep -q open "$SERVE_TMP/open.out" && break; sleep 0.1; done
expect_contains "e2b file worker: an upload is in flight at SIGTERM" "$(cat "$SERVE_TMP/open.out")" open
stop_e2b file_worker
wait "$opener"
expect_not_contains "e2b file worker: the upload in flight held no session at the stop (no sessions-left)" \
	"$(cat "$SRV_LOG")" sessions-left
