#!/bin/bash
# ward serve: every status code of SPEC §5, and hostile bodies.
. "$(dirname "$0")/lib.bash"

echo "tok-good" >"$SERVE_TMP/tokens"
WARD_ALLOW_APPLICATION= start_server main --token-file "$SERVE_TMP/tokens" --max-body 65536 --max-concurrent 2 || exit 0
AUTH=(-H 'Authorization: Bearer tok-good')

r=$(http GET /health)
expect_eq "health 200 without a token" 200 "$(code_of "$r")"
expect_eq "health says ok" ok "$(jget "$(body_of "$r")" 'd["status"]')"
expect_eq "health names the isolation" system "$(jget "$(body_of "$r")" 'd["isolation"]')"
check "health has a version" test -n "$(jget "$(body_of "$r")" 'd["version"]')"

r=$(post_exec '{"command":"echo hi"}' "${AUTH[@]}")
expect_eq "exec 200" 200 "$(code_of "$r")"
expect_eq "exec runs" "hi" "$(jget "$(body_of "$r")" 'd["stdout"].strip()')"
r=$(post_exec '{"command":"exit 7"}' "${AUTH[@]}")
expect_eq "exec 200 when the command fails" "200 7" "$(code_of "$r") $(jget "$(body_of "$r")" 'd["exit_code"]')"

r=$(post_exec '{"command":"true"}')
expect_eq "401 without a token" 401 "$(code_of "$r")"
expect_contains "401 answers a JSON error" "$(body_of "$r")" '"error"'
r=$(post_exec '{"command":"true"}' -H 'Authorization: Bearer tok-goo')
expect_eq "401 with a token's prefix" 401 "$(code_of "$r")"
r=$(post_exec '{"command":"true"}' -H 'Authorization: Bearer tok-goodX')
expect_eq "401 with a longer token" 401 "$(code_of "$r")"
r=$(post_exec '{"command":"true"}' -H 'Authorization: Basic dG9rLWdvb2Q=')
expect_eq "401 with another scheme" 401 "$(code_of "$r")"
r=$(http GET /metrics)
expect_eq "401 for metrics without a token" 401 "$(code_of "$r")"
r=$(http GET /metrics "${AUTH[@]}")
expect_eq "metrics 200" 200 "$(code_of "$r")"
expect_contains "metrics counts runs by status and isolation" "$(body_of "$r")" 'ward_runs_total{status="nonzero",isolation="system"} 1'
expect_contains "metrics has a latency histogram" "$(body_of "$r")" 'ward_run_duration_seconds_bucket{le="+Inf"}'
expect_contains "metrics has in-flight" "$(body_of "$r")" 'ward_in_flight 0'
expect_contains "metrics has queued" "$(body_of "$r")" 'ward_queued 0'
expect_contains "metrics has rejected" "$(body_of "$r")" 'ward_rejected_total{reason="busy"} 0'

r=$(http GET /nothing "${AUTH[@]}")
expect_eq "404 unknown path" 404 "$(code_of "$r")"
expect_contains "404 is JSON" "$(body_of "$r")" '"error"'
r=$(http GET /exec "${AUTH[@]}")
expect_eq "405 GET /exec" 405 "$(code_of "$r")"
r=$(http DELETE /health)
expect_eq "405 DELETE /health" 405 "$(code_of "$r")"
hdr=$(curl -s --max-time 10 -o /dev/null -D - -X PUT "${AUTH[@]}" "$URL/exec")
expect_contains "405 says Allow" "$hdr" "Allow: POST"

r=$(post_exec '{"command": ' "${AUTH[@]}")
expect_eq "400 malformed JSON" 400 "$(code_of "$r")"
expect_contains "400 says malformed" "$(body_of "$r")" "malformed JSON"
r=$(post_exec '[1,2]' "${AUTH[@]}")
expect_eq "400 not an object" 400 "$(code_of "$r")"
r=$(post_exec '{}' "${AUTH[@]}")
expect_eq "400 no command" 400 "$(code_of "$r")"
expect_contains "400 names command" "$(body_of "$r")" "command"
r=$(post_exec '{"argv":["echo",5]}' "${AUTH[@]}")
expect_contains "400 names argv[1]" "$(code_of "$r") $(body_of "$r")" '400 {"error":"argv[1]: must be a string"}'
r=$(post_exec '{"command":"true","limits":{"timeout_s":"5"}}' "${AUTH[@]}")
expect_contains "400 names limits.timeout_s (type)" "$(code_of "$r") $(body_of "$r")" '400 {"error":"limits.timeout_s'
r=$(post_exec '{"command":"true","limits":{"timeout_s":-1}}' "${AUTH[@]}")
expect_contains "400 names limits.timeout_s (value)" "$(code_of "$r") $(body_of "$r")" '400 {"error":"limits.timeout_s'
r=$(post_exec '{"command":"true","limits":{"memory_mb":1.5}}' "${AUTH[@]}")
expect_contains "400 names limits.memory_mb" "$(code_of "$r") $(body_of "$r")" '400 {"error":"limits.memory_mb'
r=$(post_exec '{"command":"true","env":{"A":1}}' "${AUTH[@]}")
expect_contains "400 names env.A" "$(code_of "$r") $(body_of "$r")" '400 {"error":"env.A'
r=$(post_exec '{"command":"true","network":"internet"}' "${AUTH[@]}")
expect_contains "400 names network" "$(code_of "$r") $(body_of "$r")" '400 {"error":"network'
r=$(post_exec '{"command":"true","files":[{"path":"../x","content":""}]}' "${AUTH[@]}")
expect_contains "400 refuses a .. file path" "$(code_of "$r") $(body_of "$r")" '400 {"error":"files'
r=$(post_exec '{"command":"true","files":[{"path":"/etc/x","content":""}]}' "${AUTH[@]}")
expect_eq "400 refuses an absolute file path" 400 "$(code_of "$r")"
r=$(post_exec '{"command":"true","files":[{"path":"x","content":"!!","encoding":"base64"}]}' "${AUTH[@]}")
expect_contains "400 bad base64" "$(code_of "$r") $(body_of "$r")" '400 {"error":"files[0].content'
r=$(post_exec '{"command":"true","argv":["echo","a\u0000b"]}' "${AUTH[@]}")
expect_contains "400 NUL in an argument" "$(code_of "$r") $(body_of "$r")" '400 {"error":"argv[1]'
many=$(python3 -c 'import json; print(json.dumps({"command":"true","files":[{"path":"f%d" % i} for i in range(1001)]}))')
r=$(post_exec "$many" "${AUTH[@]}")
expect_contains "400 more than 1000 files" "$(code_of "$r") $(body_of "$r")" '400 {"error":"files'
r=$(post_exec '{"command":"echo one","command":"echo two"}' "${AUTH[@]}")
expect_eq "400 duplicate keys" 400 "$(code_of "$r")"
r=$(post_exec '{"command":"echo ok","some_future_field":{"x":[1,2]},"stdin":null}' "${AUTH[@]}")
expect_eq "unknown fields ignored, null is absent" "200 ok" "$(code_of "$r") $(jget "$(body_of "$r")" 'd["stdout"].strip()')"
r=$(post_exec '{"command":"true","isolation":"application"}' "${AUTH[@]}")
expect_contains "400 application isolation without the operator's opt-in" "$(code_of "$r") $(body_of "$r")" '400 {"error":"isolation'
r=$(post_exec '{"command":"x","workdir":"/tmp"}' "${AUTH[@]}")
expect_contains "400 workdir without --allow-root" "$(code_of "$r") $(body_of "$r")" '400 {"error":"workdir'

# 100000 nested arrays: jansson's depth limit answers 400, the server lives on
deep=$(python3 -c 'print("["*30000 + "]"*30000)')
r=$(post_exec "$deep" "${AUTH[@]}")
expect_eq "deep nesting is 400" 400 "$(code_of "$r")"
expect_contains "deep nesting says depth" "$(body_of "$r")" "depth"

# 413: over --max-body (64 KiB here), by Content-Length and chunked
python3 -c 'import json; print(json.dumps({"command":"true","x":"a"*70000}))' >"$SERVE_TMP/big.json"
r=$(http POST /exec "${AUTH[@]}" --data-binary @"$SERVE_TMP/big.json")
expect_eq "413 body over --max-body" 413 "$(code_of "$r")"
code=$(curl -s --max-time 20 -o /dev/null -w '%{http_code}' "${AUTH[@]}" -H 'Transfer-Encoding: chunked' --data-binary @"$SERVE_TMP/big.json" "$URL/exec")
case "$code" in 413|000) pass "chunked body over --max-body is refused" ;; *) fail "chunked body over --max-body is refused" "got $code" ;; esac
r=$(http POST /exec --data-binary @"$SERVE_TMP/big.json" -H 'Authorization: Bearer nope')
expect_eq "401 before 413 (no body read for strangers)" 401 "$(code_of "$r")"
python3 -c 'import json; print(json.dumps({"command":"true","x":"a"*60000}))' >"$SERVE_TMP/fits.json"
r=$(http POST /exec "${AUTH[@]}" --data-binary @"$SERVE_TMP/fits.json")
expect_eq "a body just under --max-body runs" 200 "$(code_of "$r")"

# /test: 501 until test jobs exist, then a report
r=$(http POST /test "${AUTH[@]}" --data-binary '{"source_files":[],"test_files":[],"runner":"python"}')
case "$(code_of "$r")" in
501) expect_contains "POST /test 501 is JSON" "$(body_of "$r")" '"error"' ;;
200|400) pass "POST /test answers" ;;
*) fail "POST /test answers" "got $r" ;;
esac

r=$(http GET /health)
expect_eq "still healthy after all that" 200 "$(code_of "$r")"
check "the server process is alive" kill -0 "$SRV_PID"
stop_server "$SRV_PID"; rc=$?
expect_eq "SIGTERM exits 0" 0 "$rc"
check "one JSON log line per request" python3 -c '
import json,sys
n=0
for l in open(sys.argv[1]):
    d=json.loads(l)
    if "event" in d: continue
    for k in ("time","client","method","path","http_status","wall_ms","sandbox_status"): assert k in d, (k,d)
    n+=1
assert n>=30, n' "$SRV_LOG"

# 503: a server whose isolation level cannot be had answers 503, never runs
WARD_ALLOW_APPLICATION= start_server unhealthy --isolation application || exit 0
r=$(http GET /health)
expect_eq "503 health when the backend cannot run" 503 "$(code_of "$r")"
expect_contains "503 health says why" "$(body_of "$r")" '"error"'
r=$(post_exec '{"command":"true"}')
expect_eq "503 exec when the backend cannot run" 503 "$(code_of "$r")"
stop_server "$SRV_PID"

# with the operator's opt-in, a request may ask for the application level
mkdir -p "$SERVE_TMP/approot/wd"
WARD_ALLOW_APPLICATION=1 start_server app --allow-root "$SERVE_TMP/approot" || exit 0
r=$(post_exec '{"command":"echo app","isolation":"application"}')
expect_eq "application level when the operator allows it" "200 application app" \
	"$(code_of "$r") $(jget "$(body_of "$r")" 'd["isolation"]') $(jget "$(body_of "$r")" 'd["stdout"].strip()')"
# ...with a workdir under --allow-root (as root the server once handed it a
# held descriptor's /proc/self/fd path, which the application level's child
# could not enter)
r=$(post_exec "{\"command\":\"echo made >f; pwd\",\"isolation\":\"application\",\"workdir\":\"$SERVE_TMP/approot/wd\"}")
expect_eq "application level with a workdir runs in it" "200 ok $SERVE_TMP/approot/wd made" \
	"$(code_of "$r") $(jget "$(body_of "$r")" 'd["status"]') $(jget "$(body_of "$r")" 'd["stdout"].strip()') $(cat "$SERVE_TMP/approot/wd/f" 2>&1)"
r=$(post_exec '{"command":"echo sys"}')
expect_eq "the default stays system" "system" "$(jget "$(body_of "$r")" 'd["isolation"]')"
stop_server "$SRV_PID"

# ward serve's own refusals: exit 125 with a message, nothing listening
for args in "--bogus" "--listen nope" "--max-concurrent 0" "--queue -1" "--token-file /nonexistent/t" "--allow-root /nonexistent/r" "--isolation off" "extra"; do
	out=$(timeout 10 "$WARD" serve $args 2>&1); rc=$?
	expect_eq "ward serve $args exits 125" 125 "$rc"
	expect_contains "ward serve $args says why" "$out" "ward serve:"
done
start_server taken || exit 0
out=$(timeout 10 "$WARD" serve --listen "127.0.0.1:$PORT" 2>&1); rc=$?
expect_eq "an address in use exits 125" 125 "$rc"
expect_contains "an address in use says so" "$out" "in use"
stop_server "$SRV_PID"
: >"$SERVE_TMP/empty"
out=$(timeout 10 "$WARD" serve --token-file "$SERVE_TMP/empty" 2>&1); rc=$?
expect_eq "an empty token file exits 125" "125" "$rc"
