#!/bin/bash
# tests/e2e/trace.sh — WARD_TRACE=1: a line per start-up phase on stderr,
# "ward-trace: PHASE MICROSECONDS cpu=MICROSECONDS", from ward, PID 1
# ("init:") and the command before its exec ("cmd:"); each process's CPU
# never goes back (bench/wbench.c takes its differences).
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/e2e.inc"
err=$(WARD_TRACE=1 timeout 30 "$WARD" run -- /bin/true 2>&1 >/dev/null </dev/null)
lines=$(grep -c '^ward-trace: ' <<<"$err")
well=$(grep -cE '^ward-trace: [a-z:-]+ [0-9]+ cpu=[0-9]+$' <<<"$err")
check "trace: phases are printed" test "$lines" -ge 10
expect_eq "trace: every line has the phase, its time and its process's CPU" "$lines" "$well"
for who in init: cmd: ; do
	check "trace: $who phases carry their CPU" grep -qE "^ward-trace: $who[a-z-]+ [0-9]+ cpu=[0-9]+$" <<<"$err"
done
mono=$(awk '{split($4, c, "="); p = $2 ~ /^init:/ ? 1 : $2 ~ /^cmd:/ ? 2 : 0;
	if (c[2] + 0 < last[p]) bad = bad " " $2; last[p] = c[2] + 0} END {print bad}' <<<"$err")
expect_eq "trace: each process's CPU never decreases" "" "$mono"
