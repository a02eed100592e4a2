#!/bin/bash
# tests/e2b/maxima.sh — E2B within the runner's maxima (issue 30.3), with
# the real SDK (tests/e2b/shared.mjs): under --max-timeout 5 --max-cpu 2 a
# command without a deadline, or one beyond it, ends at --max-timeout, one
# that spins ends at --max-cpu (CPU time: whatever the load), and a runCode
# that spins ends with an error, its kernel alive; under --e2b-cpu 1 the
# sandbox's commands together have 1 s of CPU; under --client-rate 1 a
# create, a command and a runCode are runs of the key's (files are not);
# under --client-concurrency 1 a native /exec of the key holds its one run
# and its E2B command meanwhile is refused (issue 30.4: one request life).
. "$(dirname "$0")/lib.bash"
node_ready || exit 0
start_alice maxima --max-timeout 5 --max-cpu 2 || exit 1
sdk_checked shared.mjs maxima
stop_e2b maxima
start_alice cpu --e2b-cpu 1 || exit 1
sdk_checked shared.mjs cpu
stop_e2b cpu
start_alice rate --client-rate 1 || exit 1
sdk_checked shared.mjs rate
stop_e2b rate
start_alice conc --client-concurrency 1 || exit 1
NATIVE_URL=$URL sdk_checked shared.mjs conc
stop_e2b conc
