#!/bin/bash
# tests/e2e/bench_cpu.sh — bench/wbench.c's CPU per run is the whole tree's:
# a command that exits before a child it started (as bwrap exits before its
# PID 1) still has that child's CPU counted (the latency phase reaps it as a
# child subreaper), and "own wait4 only" keeps the figure without it.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/e2e.inc"
cc -std=gnu11 -O2 -o "$T/wbench" "$ROOT/bench/wbench.c" -ljansson -lpthread -lm 2>"$T/cc.err" || {
	echo "# bench_cpu: skipped (bench/wbench.c does not build here: $(head -c 200 "$T/cc.err"))"
	exit 0
}
# The orphan burns ~50 ms of CPU after its parent has exited.
burn='(i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done) & exit 0'
"$T/wbench" -n 5 -P 1 -w 0 -s 0.1 -j 1 -b 30 -k 0 -o "$T/r.json" -m "$T/r.md" -d "$T" \
	"orphan=/bin/sh -c '$burn'" >/dev/null 2>&1
cpu=$(jget "$(cat "$T/r.json")" '[c for c in d["commands"] if c["name"] == "orphan"][0]["latency"]["cpu_median_ms"]')
own=$(jget "$(cat "$T/r.json")" '[c for c in d["commands"] if c["name"] == "orphan"][0]["latency"]["cpu_own_wait4_median_ms"]')
check "bench: the orphan's CPU is counted in the tree's ($cpu ms against $own ms)" \
	python3 -c "import sys; sys.exit(0 if float('$cpu') > float('$own') + 10 else 1)"
