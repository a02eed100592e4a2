#!/bin/bash
# ward run --remote URL: the same result and exit status as a local run;
# a runner that is down or refuses gives exit 125 and a clear error, never
# a silent local run.
. "$(dirname "$0")/lib.bash"

echo "remote-token" >"$SERVE_TMP/token"
start_server remote --token-file "$SERVE_TMP/token" || exit 0
R=(--remote "$URL" --token-file "$SERVE_TMP/token")

# same --json result, field by field (usage and uid differ by nature)
fields='[d[k] for k in ("status","exit_code","signal","timed_out","oom_killed","stdout","stderr","stdout_truncated","stdout_bytes","stderr_bytes","error","isolation")]'
for cmd in 'echo out; echo err >&2; exit 3' 'echo ok' 'kill -9 $$' 'head -c 5000 /dev/zero | tr "\0" x'; do
	l=$(timeout 60 "$WARD" run --json --output-limit 1000 --shell "$cmd"); lrc=$?
	r=$(timeout 60 "$WARD" run "${R[@]}" --json --output-limit 1000 --shell "$cmd"); rrc=$?
	expect_eq "remote = local result: $cmd" "$(jget "$l" "$fields")" "$(jget "$r" "$fields")"
	expect_eq "remote = local exit status: $cmd" "$lrc" "$rrc"
done
r=$(timeout 60 "$WARD" run "${R[@]}" --json -- echo '$HOME;id'); rc=$?
expect_eq "remote argv runs without a shell" '$HOME;id' "$(jget "$r" 'd["stdout"].strip()')"
expect_eq "remote reports the runner's isolation" system "$(jget "$r" 'd["isolation"]')"
check "remote reports the runner's enforcement" test "$(jget "$r" 'd["enforced"]["seccomp"]')" = seccomp

r=$(timeout 60 "$WARD" run "${R[@]}" --timeout 0.5 -- sleep 10); rc=$?
expect_eq "remote timeout exits 124" 124 "$rc"

out=$(timeout 60 "$WARD" run "${R[@]}" --shell 'echo to-out; echo to-err >&2; exit 4' 2>"$SERVE_TMP/err"); rc=$?
expect_eq "remote streaming: stdout" to-out "$out"
expect_eq "remote streaming: stderr" to-err "$(cat "$SERVE_TMP/err")"
expect_eq "remote streaming: exit status" 4 "$rc"

out=$(printf 'line1\nline2\n' | timeout 60 "$WARD" run "${R[@]}" --stdin - -- wc -l); rc=$?
expect_eq "remote --stdin - feeds the command" 2 "$(echo $out)"
out=$(timeout 60 "$WARD" run "${R[@]}" --env GREETING=hello --shell 'echo $GREETING')
expect_eq "remote --env" hello "$out"

out=$(WARD_RUNNER_URL=$URL WARD_RUNNER_TOKEN=remote-token timeout 60 "$WARD" run -- echo via-env); rc=$?
expect_eq "WARD_RUNNER_URL and WARD_RUNNER_TOKEN" "via-env 0" "$out $rc"

out=$(timeout 60 "$WARD" run --remote "$URL" -- echo x 2>"$SERVE_TMP/err"); rc=$?
expect_eq "remote without a token exits 125" "125" "$rc"
expect_contains "remote without a token says 401" "$(cat "$SERVE_TMP/err")" "401"
expect_eq "remote without a token printed nothing" "" "$out"

r=$(timeout 60 "$WARD" run "${R[@]}" --json --timeout 0 -- true 2>/dev/null); rc=$?
expect_eq "a request the runner refuses (400) exits 125" 125 "$rc"
stop_server "$SRV_PID"

# the runner is down: 125 and a clear error, nothing run locally
out=$(timeout 60 "$WARD" run --remote "$URL" --shell 'echo ran-locally' 2>"$SERVE_TMP/err"); rc=$?
expect_eq "runner down exits 125" 125 "$rc"
expect_eq "runner down: nothing ran" "" "$out"
expect_contains "runner down: the error says so" "$(cat "$SERVE_TMP/err")" "not reachable"
r=$(timeout 60 "$WARD" run --remote "$URL" --json -- true 2>/dev/null); rc=$?
expect_eq "runner down --json: status error, exit 125" "error 125" "$(jget "$r" 'd["status"]') $rc"
out=$(timeout 60 "$WARD" run --remote "http://127.0.0.1:1" -- true 2>&1); rc=$?
expect_eq "runner on a closed port exits 125" 125 "$rc"

# A strict runner (maxima below ward's own defaults): a client sends only the
# limits its user gave, so a plain `ward run --remote` and `ward session`
# work there (they used to send every default and got 400 for timeout_s 30);
# a limit the user gives above the runner's maximum is still refused.
start_server strict --max-timeout 10 --max-memory 128 --max-collect-files 16 --max-output 100000 || exit 0
out=$(timeout 60 "$WARD" run --remote "$URL" -- echo strict-ok 2>&1); rc=$?
expect_eq "strict runner: ward run --remote with no limits runs" "strict-ok 0" "$out $rc"
out=$(timeout 60 "$WARD" run --remote "$URL" --collect 'x' -- echo collect-ok 2>&1); rc=$?
expect_eq "strict runner: --collect with the default caps runs" "collect-ok 0" "$out $rc"
out=$(timeout 60 "$WARD" run --remote "$URL" --timeout 20 -- true 2>&1); rc=$?
expect_eq "strict runner: --timeout above its maximum is refused" 125 "$rc"
expect_contains "strict runner: ... naming the maximum" "$out" "maximum 10 s"
sid=$(timeout 60 "$WARD" session new --remote "$URL" 2>&1)
out=$(timeout 60 "$WARD" session exec --remote "$URL" "$sid" -- sh -c 'echo in-session; exit 4' 2>&1); rc=$?
expect_eq "strict runner: ward session new and exec with no limits" "in-session 4" "$out $rc"
timeout 60 "$WARD" session rm --remote "$URL" "$sid" >/dev/null 2>&1
