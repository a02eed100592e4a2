#!/bin/bash
# tests/e2e/env_fds.sh — nothing of the host's environment or file
# descriptors reaches the child (SPEC §2 --env, §3).
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/e2e.inc"

# ---- environment
export SECRET_TOKEN=s3cr3t-$$-token WARD_LEAK_PROBE=leak-$$ AWS_SECRET_ACCESS_KEY=aws-$$
wr --timeout 10 -- /usr/bin/env
expect_eq "env: runs" 0 "$RC"
expect_not_contains "env: SECRET_TOKEN not passed" "$OUT" "s3cr3t-$$"
expect_not_contains "env: AWS_SECRET_ACCESS_KEY not passed" "$OUT" "aws-$$"
expect_not_contains "env: other host variables not passed" "$OUT" "leak-$$"
expect_eq "env: exactly PATH LANG HOME TMPDIR" "HOME LANG PATH TMPDIR" "$(printf '%s\n' "$OUT" | cut -d= -f1 | sort | tr '\n' ' ' | sed 's/ $//')"
expect_eq "env: LANG=C.UTF-8" C.UTF-8 "$(printf '%s\n' "$OUT" | sed -n 's/^LANG=//p')"
expect_eq "env: HOME=/work" /work "$(printf '%s\n' "$OUT" | sed -n 's/^HOME=//p')"
expect_eq "env: TMPDIR=/tmp" /tmp "$(printf '%s\n' "$OUT" | sed -n 's/^TMPDIR=//p')"
p=$(printf '%s\n' "$OUT" | sed -n 's/^PATH=//p')
expect_contains "env: PATH has /usr/bin" ":$p:" ":/usr/bin:"
# A changed host PATH does not change it.
OUT2=$(PATH=/evil/bin:$PATH timeout 10 "$WARD" run --timeout 5 -- /usr/bin/printenv PATH 2>/dev/null </dev/null)
expect_eq "env: host PATH does not leak in" "$p" "$OUT2"
OUT2=$(LD_PRELOAD= LD_LIBRARY_PATH=/evil timeout 10 "$WARD" run --timeout 5 -- /usr/bin/env 2>/dev/null </dev/null)
expect_not_contains "env: LD_LIBRARY_PATH not passed" "$OUT2" LD_LIBRARY_PATH
unset SECRET_TOKEN WARD_LEAK_PROBE AWS_SECRET_ACCESS_KEY

wr --timeout 10 --env FOO=bar --env 'X=a=b c' --env EMPTY= -- /usr/bin/env
expect_eq "env: --env adds exactly those" "EMPTY FOO HOME LANG PATH TMPDIR X" "$(printf '%s\n' "$OUT" | cut -d= -f1 | sort | tr '\n' ' ' | sed 's/ $//')"
expect_contains "env: --env FOO=bar" "$OUT" "FOO=bar"
expect_contains "env: --env value keeps = and spaces" "$OUT" "X=a=b c"
wr --timeout 10 --env HOME=/tmp --env LANG=C -- /usr/bin/env
expect_contains "env: --env may override HOME" "$OUT" "HOME=/tmp"
expect_eq "env: an override does not duplicate the variable" 1 "$(printf '%s\n' "$OUT" | grep -c '^HOME=')"
# The shell sees the same environment.
wr --timeout 10 --env FOO=bar --shell 'echo "$FOO:$HOME:$TMPDIR:$LANG:${SECRET_TOKEN:-unset}"'
expect_eq "env: seen by --shell" "bar:/work:/tmp:C.UTF-8:unset" "$OUT"

# ---- file descriptors: only 0, 1 and 2.
echo fd-secret >"$T/secret"
exec 7<"$T/secret" 9>"$T/fd9" 5<>"$T/fd5"
wr --timeout 10 -- ls /proc/self/fd
expect_eq "fds: only 0 1 2 (and ls's own 3)" "0 1 2 3" "$(echo $OUT)"
wr --timeout 10 --json -- ls /proc/self/fd
expect_eq "fds --json: only 0 1 2 (and ls's own 3)" "0 1 2 3" "$(jg "$OUT" '" ".join(d["stdout"].split())')"
wr --timeout 10 --shell 'cat <&7 2>/dev/null; echo x >&9 2>/dev/null; echo end'
expect_eq "fds: inherited fd 7 not readable" end "$OUT"
check "fds: inherited fd 9 not writable" test ! -s "$T/fd9"
# No fd of any process in the sandbox points at host files (the init too).
wr --timeout 10 --shell 'for p in /proc/[0-9]*; do ls -l $p/fd 2>/dev/null; done | grep -c -e secret -e fd9 -e fd5'
expect_eq "fds: no sandbox process holds a host fd" 0 "$OUT"
exec 7<&- 9>&- 5>&-
# The terminal/stdin of ward is not passed either (stdin is /dev/null).
wr --timeout 10 --shell 'readlink /proc/self/fd/0'
expect_eq "fds: stdin is /dev/null" /dev/null "$OUT"

# ---- ward's own command line (a server's options, host paths) does not show
# through PID 1's /proc/1/cmdline
wr --timeout 10 --env CMDLINE_PROBE=p-$$ --shell 'tr "\0" " " </proc/1/cmdline'
expect_eq "cmdline: PID 1 runs" 0 "$RC"
expect_not_contains "cmdline: /proc/1/cmdline hides ward's options" "$OUT" "CMDLINE_PROBE"
expect_contains "cmdline: /proc/1/cmdline says ward-init" "$OUT" "ward-init"

# ---- the command starts with a fresh signal state: nothing ignored (ward
# itself ignores SIGPIPE) and nothing blocked
wr --timeout 10 --shell 'grep -E "^Sig(Ign|Blk)" /proc/self/status | tr -s "\t" " "'
expect_contains "signals: nothing ignored" "$OUT" "SigIgn: 0000000000000000"
expect_contains "signals: nothing blocked" "$OUT" "SigBlk: 0000000000000000"

# ---- the same umask (022) whatever the caller's
OUT=$(umask 077; timeout 20 "$WARD" run --timeout 10 --shell 'umask' </dev/null 2>&1)
expect_eq "umask: 0022 inside though the caller's is 077" "0022" "$OUT"

# ---- PID 1 (a copy of ward) keeps none of ward's fds: not an inherited
# file, not ward's stdio; only its pipes (and /dev/null) — seen from the host
M=3.$$$RANDOM
exec 7</etc/hostname
"$WARD" run --timeout 20 -- sleep "$M" </dev/null >/dev/null 2>&1 &
wpid=$!
exec 7<&-
pid1=""
# ward's child is the sandbox's PID 1; once the command runs, PID 1 is past
# its setup and in its wait for the command (up to 10 s for both)
for _ in $(seq 1 200); do
	pid1=$(cat /proc/$wpid/task/*/children 2>/dev/null | tr ' ' '\n' | grep . | head -1)
	[ -n "$pid1" ] && [ -n "$(marker_pids "$M")" ] && break
	sleep 0.05
done
fds=$(ls -l /proc/$pid1/fd 2>/dev/null | awk 'NR>1 {print $NF}' | sort -u | tr '\n' ' ')
kill "$wpid" 2>/dev/null; wait "$wpid" 2>/dev/null
expect_not_contains "pid1 fds: no inherited host file ($fds)" "$fds" "/etc/hostname"
case "$fds" in
*/dev/pts*|*/dev/tty*) fail "pid1 fds: no terminal of ward's" "$fds" ;;
*) pass "pid1 fds: no terminal of ward's" ;;
esac
# (PID 1 opens /dev/null before pivot_root; once the host's root is
# detached, the kernel names that open file "/null")
if [ -n "$fds" ] && ! printf '%s\n' $fds | grep -qv -e '^pipe:' -e '^/dev/null$' -e '^/null$' -e '^socket:'; then
	pass "pid1 fds: only pipes, its control socket and /dev/null ($fds)"
else fail "pid1 fds: only pipes, its control socket and /dev/null" "[$fds]"; fi
