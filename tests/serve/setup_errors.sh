#!/bin/bash
# tests/serve/setup_errors.sh — through the server (its spawner helpers, its
# own clones, a pooled sandbox), a limit above the hard limit the server runs
# under is the server's failure: status "error", exit_code 125, an error
# that names the limit and the fix; a program's own exit 125 stays its own.
. "$(dirname "$0")/lib.bash"

# The server (and whatever it starts) runs under a hard limit of 2000 open
# files; nothing else in this script needs more.
ulimit -n 2000 || { fail "serve: lower the open-files limit"; exit 0; }
for mode in "--spawners 1" "--spawners 0" "--pool 1 --spawners 0" "--pool 1 --spawners 1"; do
	# shellcheck disable=SC2086
	start_server "${mode// /_}" $mode || continue
	r=$(post_exec '{"command": "echo RAN", "limits": {"nofile": 4000}}')
	b=$(body_of "$r")
	expect_eq "serve $mode: nofile above the hard limit: error 125" "error 125" "$(jg "$b" 'd["status"]') $(jg "$b" 'd["exit_code"]')"
	expect_contains "serve $mode: ... the error names the limit and the fix" "$(jg "$b" 'd["error"]')" \
		"open-files limit (--nofile, limits.nofile) of 4000 is above the hard limit of 2000"
	r=$(post_exec '{"command": "exit 125"}')
	b=$(body_of "$r")
	expect_eq "serve $mode: a program's own exit 125 stays nonzero, error empty" "nonzero 125 []" \
		"$(jg "$b" 'd["status"]') $(jg "$b" 'd["exit_code"]') [$(jg "$b" 'd["error"]')]"
	stop_server "$SRV_PID"
done
