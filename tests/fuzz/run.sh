#!/bin/bash
# tests/fuzz/run.sh — every libFuzzer target (tests/fuzz/fuzz_NAME.c, built
# as build/fuzz_NAME by `make fuzz-bin`), each on its seed corpus
# (tests/fuzz/corpus/NAME/, read only: what a run finds goes to a temporary
# copy) and its dictionary (tests/fuzz/dict/NAME.dict: the format's words,
# that a mutation seldom spells) for a bounded time, one "PASS: fuzz NAME" or "FAIL: fuzz NAME" line
# each.  A crash, a leak, an abort (a target's own check) or a hang fails the
# target and prints the reproducer (its path under build/fuzz-crashes/, its
# bytes in base64, and how to rerun it); keep it as a seed in the corpus
# once fixed.
#
# Time: FUZZ_SECONDS per target; by default a minute for all of them
# together (at least 3 s each), as `make check` runs it; `make fuzz` runs
# FUZZ_SECONDS=300.  FUZZ_TARGETS="request egress" runs only those.
# A target that is not built fails (build them: make fuzz-bin).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" # the targets read languages.json from the tree's top
. tests/lib.sh

names=()
if [ -n "${FUZZ_TARGETS:-}" ]; then
	read -r -a names <<<"$FUZZ_TARGETS"
else
	for src in tests/fuzz/fuzz_*.c; do
		n=${src##*/fuzz_}
		names+=("${n%.c}")
	done
fi
[ ${#names[@]} -gt 0 ] || { fail "fuzz: no targets" "none in tests/fuzz/"; exit 0; }
secs=${FUZZ_SECONDS:-$((60 / ${#names[@]}))}
[ "$secs" -ge 3 ] || secs=3

work=$(mktemp -d /tmp/ward-fuzz-run.XXXXXX)
trap 'rm -rf "$work"' EXIT
crashes=$ROOT/build/fuzz-crashes
mkdir -p "$crashes"

for n in "${names[@]}"; do
	bin=build/fuzz_$n
	if [ ! -x "$bin" ]; then
		fail "fuzz $n" "$bin is not built: make fuzz-bin"
		continue
	fi
	seeds=tests/fuzz/corpus/$n
	mkdir -p "$work/$n/corpus" "$work/$n/art"
	args=(-max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=65536
		-artifact_prefix="$work/$n/art/" -print_final_stats=1 "$work/$n/corpus")
	[ -f tests/fuzz/dict/$n.dict ] && args+=(-dict="tests/fuzz/dict/$n.dict")
	[ -d "$seeds" ] && args+=("$seeds")
	# a target's own hang (-timeout) is a failure too; the outer timeout
	# only bounds a target that stops answering altogether
	timeout -k 5 $((secs + 60)) "$bin" "${args[@]}" >"$work/$n/log" 2>&1
	rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$n/log" | tail -1)
	if [ "$rc" -eq 0 ]; then
		pass "fuzz $n (${execs:-?} inputs in ${secs}s, $(ls "$work/$n/corpus" | wc -l) new)"
		continue
	fi
	fail "fuzz $n" "exit $rc after ${execs:-?} inputs"
	grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error|    #[0-9] )' "$work/$n/log" | head -25 | sed 's/^/  /'
	for a in "$work/$n/art"/*; do
		[ -e "$a" ] || continue
		keep=$crashes/$n-${a##*/}
		cp "$a" "$keep"
		echo "  reproducer: $keep ($(stat -c %s "$a") bytes): $bin $keep"
		echo "  base64: $(head -c 4096 "$a" | base64 -w0)"
	done
done
