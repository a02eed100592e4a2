#!/bin/bash
# tests/serve/framing.sh — strict HTTP framing on every listener of ward
# serve (SPEC §9, docs/security.md): a request whose body framing a
# proxy in front could read otherwise than ward (Content-Length with
# Transfer-Encoding, Content-Length twice, one not a number, a coding but
# chunked, Transfer-Encoding twice, a header line libmicrohttpd misreads)
# is answered 400 (501) in the listener's own shape with Connection: close
# and its connection closed, on the native, Piston, Judge0, E2B and MCP
# listeners (tests/serve/framing.py, raw sockets); the request smuggled
# behind each is never read: no line of the server's log names it, and the
# only runs are the two legitimate ones.
. "$(dirname "$0")/../dialect/dialect.bash"
start_dialects framing --piston 127.0.0.1:0 --judge0 127.0.0.1:0 --e2b 127.0.0.1:0 --mcp 127.0.0.1:0 || exit 1
for l in native piston judge0 e2b mcp; do
	u=$URL
	[ $l = native ] || u=$(dialect_url $l)
	timeout -k 5 300 python3 "$ROOT/tests/serve/framing.py" $l "$u"
	rc=$?
	[ $rc -le 1 ] || fail "framing.py $l" "exited $rc"
done
expect_eq "no smuggled request was ever read (none in the log)" 0 "$(grep -c '/smuggled-' "$SRV_LOG")"
expect_eq "the native listener ran the two legitimate runs alone (no smuggled POST /exec)" 2 \
	"$(grep -c '"method":"POST","path":"/exec","http_status":200' "$SRV_LOG")"
expect_eq "each refusal is logged with its reason" 55 "$(grep -c 'a proxy could read another body' "$SRV_LOG")"
stop_checked framing
