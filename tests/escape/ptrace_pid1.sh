#!/bin/bash
# tests/escape/ptrace_pid1.sh — ptrace stays allowed (debuggers work) but
# reaches only the sandbox's own processes: PID 1 is ward's init, which
# holds the sandbox together and is non-dumpable, so PTRACE_ATTACH/SEIZE,
# process_vm_readv, /proc/1/mem and /proc/1/environ all fail; a process can
# still trace its own child; and the run still ends normally (PID 1 intact).
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/escape.inc"
esc_preflight

wrun -- /helpers/esc_proc ptrace1
expect_clean "ptrace: helper ran to the end, run ended normally"
expect_blocked "ptrace: PTRACE_ATTACH 1 fails" "ptrace(PTRACE_ATTACH, 1)" EPERM
expect_blocked "ptrace: PTRACE_SEIZE 1 fails" "ptrace(PTRACE_SEIZE, 1)" EPERM
expect_blocked "ptrace: process_vm_readv(1) fails" "process_vm_readv(1)" EPERM
expect_blocked "ptrace: /proc/1/mem closed" "open(/proc/1/mem)"
expect_blocked "ptrace: /proc/1/environ closed" "open(/proc/1/environ)"
wrun -- /helpers/esc_proc ptrace-child
expect_eq "ptrace: tracing one's own child works" "ok OK ptrace-child" "$ST ${OUT%$'\n'}"
