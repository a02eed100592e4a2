#!/bin/bash
# tests/e2b/shares.sh — what one tenant's E2B requests may cost the others,
# and what a sandbox's tokens open (tests/e2b/shares.py, raw HTTP): keyless
# relays to a tenant's silent port and the interpreter's /health count in
# the sandbox owner's --client-concurrency (another key's native /exec
# still runs) and never wait on a busy context; the traffic token never
# opens envd, whatever E2b-Sandbox-Port says; metadata is capped (64 KiB)
# and a list or getInfo answers it whole; a list's answer is in its key's
# share of the answer budget (503 while an unread 64 MiB read holds it);
# under --client-rate
# a pause and a connect that resumes are runs.  Bounded: socket timeouts,
# --request-timeout 10.
. "$(dirname "$0")/lib.bash"
printf 'alice sekrit-alice-0123456789\nbob sekrit-bob-0123456789\n' >"$SERVE_TMP/tokens"
run_part() {
	local part=$1
	shift
	start_e2b "shares-$part" --token-file "$SERVE_TMP/tokens" --request-timeout 10 "$@" || return
	timeout -k 5 240 python3 "$ROOT/tests/e2b/shares.py" "$part" "$E2B_URL" "$URL" sekrit-alice-0123456789 \
		sekrit-bob-0123456789
	local rc=$?
	[ $rc -eq 0 ] || [ $rc -eq 1 ] || fail "shares.py $part" "exited $rc: $(tail -c 600 "$SRV_LOG")"
	stop_e2b "shares-$part"
}
run_part workers --max-concurrent 2 --queue 2 --client-concurrency 1
run_part health --max-concurrent 4 --queue 4 --client-concurrency 1
run_part tokens
run_part metadata
run_part budget --max-output 1024 --max-answer-client 67187456
run_part rate --client-rate 2
