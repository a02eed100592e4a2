#!/bin/bash
# ward serve: egress through an allow-list (SPEC §13).  network {"allow": [...]}
# on /exec, /test and sessions, within the operator's --egress-allow ceiling
# (beyond it: 400); pinned names reach local upstreams on 127.0.0.1; the
# runner's own port is unreachable from inside; pooled sandboxes are not
# used for it; /metrics and the log count the connections.
. "$(dirname "$0")/lib.bash"
. "$ROOT/tests/egress.bash"

egress_fixture_served "$SERVE_TMP/fx" || exit 0
H=$EG_HTTP S=$EG_HTTPS

# exec_json BODY — POST /exec; CODE and J (the body, in a file)
J=$SERVE_TMP/last.json
exec_json() {
	local r
	r=$(post_exec "$1")
	CODE=$(code_of "$r")
	body_of "$r" >"$J"
}
jq_() { egress_json "$J" "$1"; }

# --- a runner without --egress-allow offers none
start_server plain --max-concurrent 2 || exit 0
exec_json '{"command":"true","network":{"allow":["pypi.test"]}}'
expect_eq "no ceiling: a request with network.allow is refused with 400" 400 "$CODE"
expect_contains "... naming the pattern and the option that offers egress" "$(cat "$J")" "'pypi.test' asks for egress"
expect_contains "... (--egress-allow)" "$(cat "$J")" "--egress-allow"
exec_json '{"command":"true","network":"allow"}'
expect_eq "network \"allow\" as a string (no list) is refused with 400" 400 "$CODE"
expect_eq "/health of a runner without a ceiling: egress.allow is empty" "[]" \
	"$(jget "$(body_of "$(http GET /health)")" 'd["egress"]["allow"]')"
stop_server "$SRV_PID"

# --- a runner with a ceiling and pins (and a pool, which allow never takes)
start_server egress --max-concurrent 4 --pool 1 --max-egress-bytes 100000000 \
	--egress-allow "pypi.test:$H" --egress-allow "tls.test:$S" --egress-allow "*.files.test:$H" \
	--egress-resolve pypi.test:127.0.0.1 --egress-resolve tls.test:127.0.0.1 \
	--egress-resolve a.files.test:127.0.0.1 || exit 0
hits0=$(metric 'ward_pool_takes_total{result="hit"}')
expect_eq "/health lists the egress ceiling" "pypi.test:$H tls.test:$S *.files.test:$H" \
	"$(jget "$(body_of "$(http GET /health)")" '" ".join(d["egress"]["allow"])')"

exec_json "{\"command\":\"curl -sSk https://tls.test:$S/hi.txt; curl -sS http://pypi.test:$H/hi.txt; curl -s -o /dev/null -w '%{http_code}' http://evil.test:$H/\",\"network\":{\"allow\":[\"tls.test:$S\",\"pypi.test:$H\"]}}"
expect_eq "/exec with network.allow: 200" 200 "$CODE"
expect_eq "... TLS over CONNECT and plain http through the proxy, an unlisted name 403" "hello hello 403" \
	"$(jq_ '" ".join(r["stdout"].split())')"
expect_eq "... the result lists each connection: host, port, allowed, bytes" \
	"tls.test:$S:True pypi.test:$H:True evil.test:$H:False" \
	"$(jq_ '" ".join("%s:%d:%s" % (e["host"], e["port"], e["allowed"]) for e in r["egress"])')"
expect_eq "... with bytes both ways on the allowed ones, none on the refused" True \
	"$(jq_ 'all(e["bytes_in"] > 0 and e["bytes_out"] > 0 for e in r["egress"][:2]) and r["egress"][2]["bytes_in"] == 0 and r["egress_truncated"] is False')"
expect_eq "... and usage.proxy_cpu_ms, the proxy's CPU (ward's, outside the sandbox's cgroup)" True \
	"$(jq_ 'type(r["usage"]["proxy_cpu_ms"]) is int and 0 <= r["usage"]["proxy_cpu_ms"] < 5000')"
expect_eq "a request with network allow does not take a pooled sandbox" "$hits0" "$(metric 'ward_pool_takes_total{result="hit"}')"

exec_json "{\"command\":\"python3 -m pip install --no-deps --disable-pip-version-check --no-cache-dir --trusted-host pypi.test --target /work/t --index-url http://pypi.test:$H/simple/ wardpkg >/dev/null 2>&1; PYTHONPATH=/work/t python3 -c 'import wardpkg; print(wardpkg.VALUE)'\",\"network\":{\"allow\":[\"pypi.test:$H\"]},\"limits\":{\"timeout_s\":120,\"memory_mb\":1024}}"
expect_eq "/exec: pip install through the proxy from a pinned simple index" 42 "$(jq_ 'r["stdout"].strip()')"

exec_json "{\"command\":\"curl -sS http://a.files.test:$H/hi.txt\",\"network\":{\"allow\":[\"a.files.test:$H\"]}}"
expect_eq "a name under a '*.' ceiling entry may be asked for, and is reached" "200 hello" "$CODE $(jq_ 'r["stdout"].strip()')"

# --- beyond the ceiling: 400 naming the pattern
for want in "evil.test" "pypi.test" "pypi.test:1" "*.test:$H" "files.test:$H" "127.0.0.1:$PORT"; do
	exec_json "{\"command\":\"true\",\"network\":{\"allow\":[\"pypi.test:$H\",\"$want\"]}}"
	expect_eq "asking for '$want' beyond the ceiling: 400" 400 "$CODE"
	expect_contains "... the error names '$want' and --egress-allow" "$(jq_ 'r["error"]')" "'$want' is outside this runner's egress ceiling (--egress-allow)"
done
exec_json "{\"command\":\"true\",\"network\":{\"allow\":[\"pypi.test:$H\"]},\"limits\":{\"egress_bytes\":100000001}}"
expect_eq "limits.egress_bytes above --max-egress-bytes: 400 naming it" "400 True" \
	"$CODE $(jq_ '"limits.egress_bytes" in r["error"] and "--max-egress-bytes" in r["error"]')"

# --- the runner's own port is unreachable from inside, directly or through the proxy
exec_json "{\"argv\":[\"python3\",\"-c\",\"import socket,errno\\ntry:\\n  socket.create_connection(('127.0.0.1',$PORT),3); print('connected')\\nexcept OSError as e: print(errno.errorcode.get(e.errno,'err'))\"],\"network\":{\"allow\":[\"pypi.test:$H\"]}}"
expect_eq "the ward server's own port from inside a sandbox with egress: refused (no route)" ECONNREFUSED "$(jq_ 'r["stdout"].strip()')"
exec_json "{\"command\":\"curl -s -o /dev/null -w '%{http_code}' --noproxy '' -x http://127.0.0.1:3128 http://127.0.0.1:$PORT/health\",\"network\":{\"allow\":[\"pypi.test:$H\"]}}"
expect_eq "... and through the proxy (not listed): 403" 403 "$(jq_ 'r["stdout"].strip()')"

# --- /test with network allow, and beyond the ceiling
# (the job's body written by python: no shell quoting in JSON in shell)
test_job() { # ALLOW — a junit job whose test passes when it reaches pypi.test
	/usr/bin/python3 -c 'import json,sys; print(json.dumps({"runner": "junit", "command": ["/bin/sh", "-c",
  "curl -sf http://pypi.test:%s/hi.txt >/dev/null && printf %%s \"<testsuite><testcase name=\x27a\x27/></testsuite>\" >\"$WARD_REPORT\"" % sys.argv[1]],
  "network": {"allow": [sys.argv[2]]}}))' "$H" "$1"
}
r=$(http POST /test -H 'Content-Type: application/json' --data-binary "$(test_job "pypi.test:$H")")
expect_eq "/test with network.allow: its test reaches the listed name and passes" "200 1" \
	"$(code_of "$r") $(jget "$(body_of "$r")" 'd["passed"]')"
r=$(http POST /test -H 'Content-Type: application/json' --data-binary "$(test_job evil.test)")
expect_eq "/test asking beyond the ceiling: 400" 400 "$(code_of "$r")"

# --- sessions: each exec's result lists the connections made while it ran
r=$(http POST /sessions -H 'Content-Type: application/json' --data-binary "{\"network\":{\"allow\":[\"pypi.test:$H\"]}}")
expect_eq "a session with network.allow: 201" 201 "$(code_of "$r")"
sid=$(jget "$(body_of "$r")" 'd["id"]')
sexec() {
	local r
	r=$(http POST "/sessions/$sid/exec" -H 'Content-Type: application/json' --data-binary "$1")
	CODE=$(code_of "$r")
	body_of "$r" >"$J"
}
sexec "{\"command\":\"curl -sS http://pypi.test:$H/hi.txt\"}"
expect_eq "session exec 1: reaches the listed name through the session's proxy" "200 hello" "$CODE $(jq_ 'r["stdout"].strip()')"
expect_eq "... its result lists its one connection" "pypi.test:True" "$(jq_ '" ".join("%s:%s" % (e["host"], e["allowed"]) for e in r["egress"])')"
expect_eq "... and the proxy's CPU while it ran (usage.proxy_cpu_ms)" True "$(jq_ '0 <= r["usage"]["proxy_cpu_ms"] < 5000')"
sexec "{\"command\":\"curl -s -o /dev/null -w '%{http_code}' http://evil.test:$H/\"}"
expect_eq "session exec 2: an unlisted name 403, and only its own connection listed" "403 evil.test:False" \
	"$(jq_ 'r["stdout"].strip()') $(jq_ '" ".join("%s:%s" % (e["host"], e["allowed"]) for e in r["egress"])')"
r=$(http GET "/sessions/$sid")
expect_eq "GET /sessions/{id}: the session's egress counts" "2 1 1" \
	"$(jget "$(body_of "$r")" '"%d %d %d" % (d["egress"]["tried"], d["egress"]["allowed"], d["egress"]["refused"])')"
r=$(http POST /sessions -H 'Content-Type: application/json' --data-binary '{"network":{"allow":["evil.test"]}}')
expect_eq "a session asking beyond the ceiling: 400" 400 "$(code_of "$r")"
http DELETE "/sessions/$sid" >/dev/null

# --- /metrics and the log
allowed=$(metric 'ward_egress_connections_total{result="allowed"}')
refused=$(metric 'ward_egress_connections_total{result="refused"}')
if [ "${allowed:-0}" -ge 6 ] && [ "${refused:-0}" -ge 3 ]; then pass "/metrics counts allowed ($allowed) and refused ($refused) connections"
else fail "/metrics counts allowed and refused connections" "allowed=$allowed refused=$refused"; fi
expect_contains "the log has a line per connection: host, port, allowed, bytes" "$(cat "$SRV_LOG")" \
	"host=tls.test port=$S allowed bytes_out="
expect_contains "... and refused ones with the reason" "$(cat "$SRV_LOG")" "host=evil.test port=$H refused: not in the allow-list"
