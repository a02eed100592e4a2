#!/bin/bash
# tests/e2e/stalled_reader.sh — without --json, ward's stdout streams live;
# a reader that stops reading must not stop ward's supervision: the timeout
# and the CPU limit still land on time, ward itself returns soon after the
# run's deadline, and what the reader did not take is dropped (and said on
# stderr), never waited for.  A reader that is only late (within the run's
# time) still gets every byte; the caller's file description is left
# blocking.  Each stalled reader here reads nothing until ward has
# returned (at most 40 s): ward returning at all proves it never waited
# for it, whatever the host's load (no wall-clock threshold).
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/e2e.inc"

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
# stalled READER: reads nothing until $1 (ward's exit line) exists, at most
# 40 s; notes in $1.woke whether it came first
stalled() {
	local i
	for ((i = 0; i < 400; i++)); do [ -s "$1" ] && break; sleep 0.1; done
	[ -s "$1" ] && echo first >"$1.woke" || echo never >"$1.woke"
	cat >/dev/null
}
mkdir -p "$T/w1" "$T/w2" && chmod 0777 "$T/w1" "$T/w2"

# 1. --timeout 2: 50 MB of output from a background writer, while the
# program goes on to write a file 4 s in.  ward's exit (timestamped as it
# happens, not when the pipeline ends) must come within the timeout and a
# few seconds, and the program must not get to write its file (the old loop
# blocked on the reader: the kill waited for it, and the file was written).
t0=$(now_ms)
{ timeout -k 2 40 "$WARD" run --timeout 2 --workdir "$T/w1" \
	--shell 'yes | head -c 50000000 & sleep 4; date +%s%N >/work/late; wait' </dev/null 2>"$T/err1"
  echo "$? $(now_ms)" >"$T/exit1"; } | stalled "$T/exit1" &
p1=$!

# 2. --cpu 1 (timeout 30): the same output, then a CPU spin that beats a
# file: its last beat is when the CPU limit killed it.
t0b=$(now_ms)
{ timeout -k 2 40 "$WARD" run --timeout 30 --cpu 1 --workdir "$T/w2" \
	--shell 'yes | head -c 50000000; while :; do date +%s%N >>/work/beat; done' </dev/null 2>/dev/null
  echo "$? $(now_ms)" >"$T/exit2"; } | stalled "$T/exit2" &
p2=$!
wait "$p1" "$p2"

read -r rc1 t1 <"$T/exit1"
ms=$((t1 - t0))
expect_eq "stalled reader: ward returns before its reader reads a byte ($ms ms)" first "$(cat "$T/exit1.woke")"
expect_eq "stalled reader: a timeout (124)" 124 "$rc1"
if [ -e "$T/w1/late" ]; then
	fail "stalled reader: the program is killed at its timeout" "it wrote its file $(( $(cat "$T/w1/late") / 1000000 - t0 )) ms in (timeout 2 s)"
else
	pass "stalled reader: the program is killed at its timeout (before its file, 4 s in)"
fi
expect_contains "stalled reader: stderr says stdout was dropped" "$(cat "$T/err1")" \
	"bytes of stdout dropped: the reader of ward's output did not keep up"

read -r rc2 _ <"$T/exit2"
expect_eq "stalled reader: the CPU limit still ends the run (124)" 124 "$rc2"
expect_eq "stalled reader: the CPU limit landed, and ward returned, before its reader read a byte" first \
	"$(cat "$T/exit2.woke")"
last=$(grep -E '^[0-9]{19}$' "$T/w2/beat" 2>/dev/null | tail -1)
if [ -n "$last" ]; then pass "stalled reader: the CPU-bound program ran (last beat at $(( last / 1000000 - t0b )) ms)"
else fail "stalled reader: the CPU-bound program ran" "no beat file"; fi

# 3. A reader that is only late, well within the run's time, gets everything.
n=$(timeout -k 2 40 "$WARD" run --timeout 30 --shell 'yes | head -c 600000' </dev/null 2>/dev/null | (sleep 2; wc -c))
expect_eq "late reader within the run's time: every byte arrives" 600000 "$n"

# 4. The caller's file description stays blocking (O_NONBLOCK on a shared
# pipe or terminal would reach every process sharing it).
timeout -k 2 20 "$WARD" run --timeout 10 --shell 'yes | head -c 2000000; sleep 3' </dev/null \
	> >(sleep 2; cat >/dev/null) 2>/dev/null &
wpid=$!
sleep 1
# (timeout(1)'s stdout is ward's: the same description)
flags=$(awk '/^flags:/{print $2}' "/proc/$wpid/fdinfo/1" 2>/dev/null)
if [ -n "$flags" ] && [ $(( 8#$flags & 04000 )) -eq 0 ]; then pass "ward's stdout description is left blocking (flags $flags)"
else fail "ward's stdout description is left blocking" "flags [$flags]"; fi
wait "$wpid"
