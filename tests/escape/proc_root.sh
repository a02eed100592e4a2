#!/bin/bash
# tests/escape/proc_root.sh — reading host files through /proc/PID/root and
# /proc/PID/cwd: the magic links lead wherever that process's root is, so
# one process in the sandbox whose root or cwd is on the host (an init that
# never pivoted, a supervisor visible in the PID namespace) would expose the
# whole host.  A host file with a random token is read through every visible
# /proc/PID/{root,cwd}; the token never comes back.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/escape.inc"
esc_preflight

token="ward-esc-$RANDOM$RANDOM$RANDOM"
echo "$token" >"$T/secret"; chmod 0644 "$T/secret"; chmod 0755 "$T"
rel=${T#/}/secret
wrun -- /helpers/esc_proc root "$rel" "$token"
expect_clean "proc root: helper ran to the end"
expect_blocked "proc root: /proc/1/root does not lead to the host" "read /proc/1/root/$rel"
expect_blocked "proc root: /proc/1/cwd does not lead to the host" "read /proc/1/cwd/$rel"
expect_blocked "proc root: /proc/self/root does not lead to the host" "read /proc/self/root/$rel"
expect_not_contains "proc root: token never read" "$OUT" "$token"
wrun --shell "cat /proc/*/root/$rel /proc/*/cwd/$rel /proc/*/root/proc/*/root/$rel 2>/dev/null; ls /proc/1/root/ 2>&1 | head -3; true"
expect_not_contains "proc root: shell never reads the token" "$OUT" "$token"
