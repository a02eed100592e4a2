#!/bin/bash
# tests/e2b/pause_threads.sh — paused E2B sandboxes hold no thread of
# ward's (issue 32's speed and memory section; session_freeze.c), with the
# real SDK (tests/e2b/pause_threads.mjs): N sandboxes, each with a
# background process, paused → the server's threads (its own
# /proc/PID/task) are what they were before them; the dialect's own
# threads are the server's, made once (the warm-up makes them); resumed →
# each process goes on.
. "$(dirname "$0")/lib.bash"
node_ready || exit 0
N=4
STATE=$SERVE_TMP/state
start_alice pausethr --e2b-state "$STATE" || exit 1
threads() { ls "/proc/$SRV_PID/task" | wc -l; }
names() { cat /proc/"$SRV_PID"/task/*/comm 2>/dev/null | sort | uniq -c | tr -s ' \n' ' '; }
sdk_checked pause_threads.mjs warm
base=$(threads)
echo "# the server's threads after the warm-up: $base ($(names))"
out=$(KEY=$KEY_ALICE sdk pause_threads.mjs make $N)
echo "$out" | grep -v '^ID '
ids=$(sed -n 's/^ID //p' <<<"$out")
paused=$(threads)
echo "# with $N sandboxes paused: $paused ($(names))"
expect_eq "$N paused sandboxes: the server's threads are back to their count before them" "$base" "$paused"
expect_eq "... no ward-sess thread among them" 0 "$(cat /proc/"$SRV_PID"/task/*/comm | grep -c '^ward-sess' || true)"
# shellcheck disable=SC2086
sdk_checked pause_threads.mjs resume $ids
stop_e2b pausethr
