#!/bin/bash
# tests/e2e/cli_options.sh — `ward run` options and bad input (SPEC §2).
# Bad input: exit 125, one line on stderr naming the problem, and nothing
# run — each refused command would have left a marker file behind.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/e2e.inc"

# A directory any sandbox uid can write, bound at /mark: a command that
# runs leaves /mark/ran behind.
M=$T/mark; mkdir -p "$M"; chmod 1777 "$M"
W=$T/work; mkdir -p "$W"; chmod 1777 "$W"

# Control: the marker mechanism works, so its absence below means something.
rm -f "$M/ran"
wr --timeout 10 --bind "$M:/mark" --shell 'touch /mark/ran'
expect_eq "control: marker command exits 0" 0 "$RC"
check "control: marker command leaves /mark/ran" test -e "$M/ran"

# refused NAME WORD ARG... — ward run ARG... must exit 125 with one stderr
# line containing WORD (case-insensitive), and must not run the command.
refused() {
	local name=$1 word=$2; shift 2
	rm -f "$M/ran" "$W/ran"
	wr "$@"
	expect_eq "$name: exit 125" 125 "$RC"
	local lines
	lines=$(printf '%s\n' "$ERR" | grep -c .)
	expect_eq "$name: one line on stderr" 1 "$lines"
	if printf '%s' "$ERR" | grep -qi -- "$word"; then pass "$name: message names $word"
	else fail "$name: message names $word" "stderr: $(printf %s "$ERR" | head -c 300)"; fi
	if [ -e "$M/ran" ] || [ -e "$W/ran" ]; then fail "$name: nothing ran" "the command ran"
	else pass "$name: nothing ran"; fi
	expect_eq "$name: nothing on stdout" "" "$OUT"
}
MK=(--bind "$M:/mark")
RUN=(--shell 'touch /mark/ran')

refused "unknown option"   frobnicate --frobnicate "${MK[@]}" "${RUN[@]}"
refused "timeout abc"      timeout    --timeout abc "${MK[@]}" "${RUN[@]}"
refused "timeout 0"        timeout    --timeout 0 "${MK[@]}" "${RUN[@]}"
refused "timeout -1"       timeout    --timeout -1 "${MK[@]}" "${RUN[@]}"
refused "timeout 5x"       timeout    --timeout 5x "${MK[@]}" "${RUN[@]}"
refused "timeout nan"      timeout    --timeout nan "${MK[@]}" "${RUN[@]}"
refused "timeout inf"      timeout    --timeout inf "${MK[@]}" "${RUN[@]}"
refused "timeout empty"    timeout    --timeout '' "${MK[@]}" "${RUN[@]}"
refused "timeout missing value" timeout "${MK[@]}" "${RUN[@]}" --timeout
refused "memory -5"        memory     --memory -5 "${MK[@]}" "${RUN[@]}"
refused "memory 0"         memory     --memory 0 "${MK[@]}" "${RUN[@]}"
refused "memory huge"      memory     --memory 99999999999999999999999 "${MK[@]}" "${RUN[@]}"
refused "pids abc"         pids       --pids abc "${MK[@]}" "${RUN[@]}"
refused "pids 0"           pids       --pids 0 "${MK[@]}" "${RUN[@]}"
refused "cpu -1"           cpu        --cpu -1 "${MK[@]}" "${RUN[@]}"
refused "fsize x"          fsize      --fsize x "${MK[@]}" "${RUN[@]}"
refused "tmp-size -1"      tmp-size   --tmp-size -1 "${MK[@]}" "${RUN[@]}"
refused "output-limit abc" output     --output-limit abc "${MK[@]}" "${RUN[@]}"
refused "net bogus"        net        --net bogus "${MK[@]}" "${RUN[@]}"
refused "isolation bogus"  isolation  --isolation bogus "${MK[@]}" "${RUN[@]}"
refused "isolation off"    isolation  --isolation off "${MK[@]}" "${RUN[@]}"
refused "missing workdir"  nonexistent-dir-$$ --workdir "$T/nonexistent-dir-$$" "${MK[@]}" "${RUN[@]}"
refused "workdir is a file" workdir   --workdir /etc/hostname "${MK[@]}" "${RUN[@]}"
refused "missing bind source" nonexistent-src-$$ --bind "$T/nonexistent-src-$$:/x" --workdir "$W" --shell 'touch /work/ran'
refused "relative bind target" relative/path   --bind "$M:relative/path" --workdir "$W" --shell 'touch /work/ran'
refused "missing rootfs"   nonexistent-root-$$ --rootfs "$T/nonexistent-root-$$" "${MK[@]}" "${RUN[@]}"
refused "missing stdin file" nonexistent-in-$$ --stdin "$T/nonexistent-in-$$" "${MK[@]}" "${RUN[@]}"
refused "env without ="    env        --env NOEQUALS "${MK[@]}" "${RUN[@]}"
refused "env with empty name" env     --env =value "${MK[@]}" "${RUN[@]}"
refused "no command"       command    --timeout 5 "${MK[@]}"
refused "both --shell and argv" shell --workdir "$W" --shell 'touch /work/ran' -- /bin/touch /work/ran

# ward with no arguments at all, and an unknown subcommand.
timeout 10 "$WARD" run </dev/null >/dev/null 2>&1; expect_eq "bare 'ward run' exits 125" 125 $?
timeout 10 "$WARD" frobnicate </dev/null >/dev/null 2>"$T/e"; rc=$?
if [ "$rc" -ne 0 ] && [ -s "$T/e" ]; then pass "unknown subcommand fails with a message"
else fail "unknown subcommand fails with a message" "rc=$rc stderr=$(head -c 200 "$T/e")"; fi

# The child's own exit status comes through.
wr --timeout 10 --shell 'exit 3'
expect_eq "shell exit 3 -> 3" 3 "$RC"
wr --timeout 10 --shell 'exit 0'
expect_eq "shell exit 0 -> 0" 0 "$RC"
wr --timeout 10 --shell 'exit 255'
expect_eq "shell exit 255 -> 255" 255 "$RC"
wr --timeout 10 -- /bin/false
expect_eq "argv /bin/false -> 1" 1 "$RC"
wr --timeout 10 -- /bin/echo 'a b' '$HOME' ';' 'c'
expect_eq "argv is not passed through a shell" 'a b $HOME ; c' "$OUT"
wr --timeout 10 -- echo found-by-path
expect_eq "argv program found through PATH" found-by-path "$OUT"

# A program that does not exist inside: 127 and a message.
wr --timeout 10 -- /nonexistent/program-$$
expect_eq "missing program -> 127" 127 "$RC"
expect_contains "missing program: stderr names it" "$ERR" "program-$$"
wr --timeout 10 -- no-such-program-$$
expect_eq "missing program on PATH -> 127" 127 "$RC"
expect_contains "missing program on PATH: stderr names it" "$ERR" "no-such-program-$$"

# A signal: 128+N.
wr --timeout 10 --shell 'kill -TERM $$'
expect_eq "kill -TERM \$\$ -> 143" 143 "$RC"
wr --timeout 10 --shell 'kill -KILL $$'
expect_eq "kill -KILL \$\$ -> 137" 137 "$RC"
wr --timeout 10 --json --shell 'kill -TERM $$'
expect_eq "signal --json exit 143" 143 "$RC"
expect_eq "signal --json status" signal "$(jg "$OUT" 'd["status"]')"
expect_eq "signal --json signal 15" 15 "$(jg "$OUT" 'd["signal"]')"
expect_eq "signal --json exit_code 143" 143 "$(jg "$OUT" 'd["exit_code"]')"
wr --timeout 10 --json --shell 'kill -KILL $$'
expect_eq "SIGKILL (not OOM) --json status signal" signal "$(jg "$OUT" 'd["status"]')"
expect_eq "SIGKILL (not OOM) --json oom_killed false" false "$(jg "$OUT" 'd["oom_killed"]')"

# Standard input: /dev/null by default, a file with --stdin, ward's own with -.
OUT=$(echo host-stdin | timeout 10 "$WARD" run --timeout 5 --shell 'cat; echo end' 2>/dev/null)
expect_eq "stdin defaults to /dev/null" end "$OUT"
printf 'from-file\n' >"$T/in"
wr --timeout 5 --stdin "$T/in" --shell 'cat'
expect_eq "--stdin FILE" from-file "$OUT"
OUT=$(echo from-pipe | timeout 10 "$WARD" run --timeout 5 --stdin - --shell 'cat' 2>/dev/null)
expect_eq "--stdin - reads ward's stdin" from-pipe "$OUT"

# A child that never reads a large stdin does not hang ward.
t0=$(date +%s%N)
head -c 50000000 /dev/zero | timeout -k 2 20 "$WARD" run --timeout 10 --stdin - -- true >/dev/null 2>&1
rc=${PIPESTATUS[1]}; ms=$(( ($(date +%s%N) - t0) / 1000000 ))
if [ "$rc" = 0 ] && [ "$ms" -lt 5000 ]; then pass "--stdin - unread by the child: ward returns ($ms ms)"
else fail "--stdin - unread by the child: ward returns" "rc=$rc after $ms ms"; fi
# ... and a child that reads it all gets every byte.
n=$(head -c 5000000 /dev/zero | timeout -k 2 20 "$WARD" run --timeout 10 --stdin - -- wc -c 2>/dev/null)
expect_eq "--stdin - delivers every byte" 5000000 "$n"

# Fractional timeout is accepted.
wr --timeout 2.5 --shell 'echo ok'
expect_eq "--timeout 2.5 accepted" "0 ok" "$RC $OUT"
