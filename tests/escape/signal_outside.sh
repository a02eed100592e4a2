#!/bin/bash
# tests/escape/signal_outside.sh — signalling processes outside.  A host
# `sleep` is started; inside, kill(its pid, SIGKILL), kill(pid, 0) and
# kill(-1, SIGKILL) (everything the sandbox may signal) are tried.  The PID
# namespace gives the host pid no meaning inside, and Landlock (ABI >= 6)
# scopes signals to the sandbox; the host process survives.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/escape.inc"
esc_preflight

sleep 120 &
victim=$!
ESC_PIDS="$ESC_PIDS $victim"
wrun -- /helpers/esc_proc kill "$victim"
expect_clean "signal: helper ran to the end"
expect_blocked "signal: kill(host pid, SIGKILL) fails" "kill(host pid, SIGKILL)" ESRCH
expect_blocked "signal: kill(host pid, 0) fails" "kill(host pid, 0)" ESRCH
check "signal: the host process survived" kill -0 "$victim"
wrun --shell "kill -9 $victim; kill -9 -1; echo done"
check "signal: the host process survived a shell's kill -9 -1" kill -0 "$victim"
kill "$victim" 2>/dev/null
