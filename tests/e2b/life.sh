#!/bin/bash
# tests/e2b/life.sh — a sandbox's life (SPEC §18, issue 32.2) with the real
# SDK (tests/e2b/life.mjs): pause and connect, files-only pauses,
# autoPause / autoResume, kill and setTimeout of paused sandboxes, the
# caps on paused ones, forks (files only, one answer per fork), and a paused sandbox across a runner restart
# (--e2b-state): resumed with its files, without its processes.
. "$(dirname "$0")/lib.bash"
node_ready || exit 0
STATE=$SERVE_TMP/not/yet/state # made, parents too, at the first pause
start_alice life --e2b-state "$STATE" || exit 1
sdk_checked life.mjs pause
sdk_checked life.mjs files
sdk_checked life.mjs auto
sdk_checked life.mjs fork
out=$(KEY=$KEY_ALICE sdk life.mjs kill)
echo "$out" | grep -v '^ID '
id=$(sed -n 's/^ID //p' <<<"$out")
check "e2b life: kill of a paused sandbox removes what it saved" test -n "$id" -a ! -e "$STATE/$id"
stop_e2b life

start_alice caps --e2b-state "$STATE" --e2b-max-paused 1 --e2b-paused-bytes 3000000 || exit 1
sdk_checked life.mjs caps
stop_e2b caps

start_alice forkcap --max-sessions 3 --e2b-state "$STATE" || exit 1
sdk_checked life.mjs forkcap
stop_e2b forkcap

start_alice before --e2b-state "$STATE" || exit 1
out=$(KEY=$KEY_ALICE sdk life.mjs before)
echo "$out" | grep -v '^ID '
id=$(sed -n 's/^ID //p' <<<"$out")
check "e2b life: a paused sandbox's files and record under --e2b-state" \
	test -f "$STATE/$id/record.json" -a -f "$STATE/$id/files/keep/a.txt"
check "e2b life: the state directory is the runner's alone (0700)" \
	test "$(stat -c %a "$STATE/$id")" = 700
stop_e2b before
start_alice after --e2b-state "$STATE" || exit 1
sdk_checked life.mjs after "$id"
check "e2b life: resumed, its saved files are gone from the state directory" test ! -e "$STATE/$id"
stop_e2b after
