#!/bin/bash
# tests/e2b/wake.sh — a stream of a sandbox's process (E2B's commands and
# runCode; the native API's ?follow=1) is woken by its session when the
# process has output or ends (ward_session_notify), not by the server's
# ticker: with WARD_TEST_TICK_S=3600 (a tick an hour, where 0.1 s is the
# server's) every stream below must still end, each within 30 s.  Before,
# each waited for the tick (commands.run('true') took 97 ms, one tick; here
# it would never end).
. "$(dirname "$0")/lib.bash"
node_ready || exit 0
export WARD_TEST_TICK_S=3600
start_alice wake || exit 1
SDK_TIMEOUT=120 sdk_checked wake.mjs
# the native API's follow stream, on the same server
H=(-H "Authorization: Bearer $KEY_ALICE")
sid=$(jg "$(curl -s "${H[@]}" -XPOST "$URL/sessions" -d '{}')" 'd["id"]')
pid=$(jg "$(curl -s "${H[@]}" -XPOST "$URL/sessions/$sid/exec" -d '{"background": true, "command": "sleep 0.3; echo followed"}')" 'd["pid"]')
out=$(curl -s -m 30 "${H[@]}" "$URL/sessions/$sid/processes/$pid/output?follow=1")
case "$out" in
*followed*'"exit_code":0'* | *followed*'"exit_code": 0'*) pass "native follow: the process's output and end, without a tick" ;;
*) fail "native follow: the process's output and end, without a tick" "got [$(tail -c 300 <<<"$out")]" ;;
esac
curl -s "${H[@]}" -XDELETE "$URL/sessions/$sid" >/dev/null
stop_e2b wake
