#!/bin/bash
# tests/e2e/application.sh — the opt-in `application` level (SPEC §1):
# refused unless WARD_ALLOW_APPLICATION=1, never silently; when allowed it
# runs with a scrubbed environment, rlimits, its own session, and its
# timeout kills the process group.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/e2e.inc"
unset WARD_ALLOW_APPLICATION
mk() { echo "$((RANDOM % 500 + 100)).$$$RANDOM"; }
W=$T/w; mkdir -p "$W"; chmod 0777 "$W"

# Refused without the opt-in: 125, a message saying how to opt in, nothing ran.
wr --isolation application --workdir "$W" --shell 'touch ran'
expect_eq "no opt-in: exit 125" 125 "$RC"
expect_contains "no opt-in: message names WARD_ALLOW_APPLICATION" "$ERR" WARD_ALLOW_APPLICATION
check "no opt-in: nothing ran" test ! -e "$W/ran"
OUT=$(WARD_ALLOW_APPLICATION=0 timeout 10 "$WARD" run --isolation application --workdir "$W" --shell 'touch ran' 2>/dev/null </dev/null); rc=$?
expect_eq "WARD_ALLOW_APPLICATION=0 is not an opt-in" 125 "$rc"
check "WARD_ALLOW_APPLICATION=0: nothing ran" test ! -e "$W/ran"

export WARD_ALLOW_APPLICATION=1
wr --isolation application --timeout 10 --json --workdir "$W" --shell 'echo hi; touch ran'
expect_eq "opt-in: runs" 0 "$RC"
expect_eq "opt-in: isolation application" application "$(jg "$OUT" 'd["isolation"]')"
expect_eq "opt-in: stdout" hi "$(jg "$OUT" 'd["stdout"].strip()')"
check "opt-in: command ran" test -e "$W/ran"
# The default stays system even with the opt-in set.
wr --timeout 10 --json -- true
expect_eq "opt-in set: default is still system" system "$(jg "$OUT" 'd["isolation"]')"

# Scrubbed environment: the opt-in variable and host secrets do not reach it.
SECRET_TOKEN=app-$$ wr --isolation application --timeout 10 -- /usr/bin/env
expect_not_contains "application: SECRET_TOKEN scrubbed" "$OUT" "app-$$"
expect_not_contains "application: WARD_ALLOW_APPLICATION scrubbed" "$OUT" WARD_ALLOW_APPLICATION
# Its own session.
wr --isolation application --timeout 10 --shell 'ps -o sid= -p $$; ps -o pid= -p $$'
sid=$(printf '%s\n' "$OUT" | sed -n 1p | tr -d ' '); me=$(printf '%s\n' "$OUT" | sed -n 2p | tr -d ' ')
if [ -n "$sid" ] && [ "$sid" != "$(ps -o sid= -p $$ | tr -d ' ')" ]; then pass "application: own session ($sid)"; else fail "application: own session" "sid=[$sid] ours=$(ps -o sid= -p $$)"; fi
# rlimits apply: --fsize.
wr --isolation application --timeout 10 --fsize 1 --workdir "$W" --shell '(head -c 4194304 /dev/zero >big) 2>/dev/null; stat -c %s big; rm -f big'
if [ -n "$OUT" ] && [ "$OUT" -le 1048576 ] 2>/dev/null; then pass "application: --fsize rlimit ($OUT)"; else fail "application: --fsize rlimit" "size=[$OUT]"; fi
# Confined cwd: the workdir.
wr --isolation application --timeout 10 --workdir "$W" -- pwd
expect_eq "application: cwd is the workdir" "$(cd "$W" && pwd -P)" "$(cd "$OUT" 2>/dev/null && pwd -P)"
# Exit statuses as at system level.
wr --isolation application --timeout 10 --shell 'exit 3'
expect_eq "application: exit 3" 3 "$RC"
wr --isolation application --timeout 10 --shell 'kill -TERM $$'
expect_eq "application: signal -> 143" 143 "$RC"

# Timeout kills the whole process group.
M1=$(mk); M2=$(mk)
t0=$(date +%s%N)
wr --isolation application --timeout 0.5 --json --shell "sleep $M1 & (trap '' TERM; exec sleep $M2) & echo started; sleep 10"
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
expect_eq "application timeout: exit 124" 124 "$RC"
expect_eq "application timeout: timed_out" true "$(jg "$OUT" 'd["timed_out"]')"
expect_eq "application timeout: the command started" started "$(jg "$OUT" 'd["stdout"].strip()')"
if [ "$ms" -lt 5000 ] && [ "$ms" -ge 450 ]; then pass "application timeout: prompt ($ms ms)"; else fail "application timeout: prompt" "$ms ms"; fi
for _ in $(seq 50); do  # up to 5 s for the kernel to finish the kill
	left="$(marker_pids "$M1") $(marker_pids "$M2")"
	[ -z "${left// /}" ] && break
	sleep 0.1
done
if [ -z "${left// /}" ]; then pass "application timeout: process group killed"
else fail "application timeout: process group killed" "left: $left"; for p in $left; do kill -9 "$p"; done; fi
