#!/bin/bash
# tests/e2e/freshness.sh — a run never observes its predecessor (issue 6):
# run N leaves behind everything it can, run N+1 looks for all of it.  Here
# every `ward run` is built from scratch; tests/serve/pool.sh runs the same
# two scripts (tests/fresh/) through sandboxes built ahead (ward serve --pool).
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

LEAVE=$(cat "$ROOT/tests/fresh/leave.py")
LOOK=$(cat "$ROOT/tests/fresh/look.py")
out=$("$WARD" run --json --net loopback --timeout 20 -- /usr/bin/python3 -c "$LEAVE" 2>&1)
expect_contains "fresh: run N left its traces" "$(jget "$out" 'd["stdout"]')" "left True True tcp"
peak=$(jget "$out" 'd["usage"]["max_rss_kb"]')
if [ "${peak:-0}" -ge 60000 ]; then pass "fresh: run N had a 64 MiB peak"; else fail "fresh: run N had a 64 MiB peak" "max_rss_kb=$peak"; fi

out=$("$WARD" run --json --net loopback --timeout 20 -- /usr/bin/python3 -c "$LOOK" 2>&1)
expect_eq "fresh: run N+1 sees nothing of run N" "seen:" "$(jget "$out" 'd["stdout"]' | tr -d '\n')"
peak2=$(jget "$out" 'd["usage"]["max_rss_kb"]')
if [ "${peak2:-0}" -lt 60000 ]; then pass "fresh: run N+1's memory peak is its own"; else fail "fresh: run N+1's memory peak is its own" "max_rss_kb=$peak2"; fi

# And nothing of either is left on the host.
left=$(marker_pids 97.31)
expect_eq "fresh: no background process left on the host" "" "$left"
