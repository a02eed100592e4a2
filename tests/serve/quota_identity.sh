#!/bin/bash
# ward serve: quotas count per token (its name) or, without tokens, per
# address; X-Ward-Client only splits that quota, never adds to it (security
# review, finding 7).  A hostile header (long, quotes, control characters,
# many distinct values) grows no table and reaches the log only sanitized.
. "$(dirname "$0")/lib.bash"

# start_run NAME CURL-ARGS... — a background `sleep 3` run; its code lands in $SERVE_TMP/NAME
start_run() {
	local name=$1
	shift
	curl -s --max-time 30 -o /dev/null -w '%{http_code}' "$@" --data-binary '{"command":"sleep 3"}' \
		"$URL/exec" >"$SERVE_TMP/$name" &
	RUN_PIDS="$RUN_PIDS $!"
}
in_flight() { test "$(metric ward_in_flight "${AUTH[@]}")" = "$1"; }
run_code() { curl -s --max-time 30 -o /dev/null -w '%{http_code}' "$@" --data-binary '{"command":"true"}' "$URL/exec"; }

printf 'alice tokA\nbob tokB\n' >"$SERVE_TMP/tokens"
A=(-H 'Authorization: Bearer tokA')
B=(-H 'Authorization: Bearer tokB')

start_server conc --token-file "$SERVE_TMP/tokens" --max-concurrent 4 --client-concurrency 1 || exit 0
AUTH=("${A[@]}")
RUN_PIDS=""
start_run first "${A[@]}" -H 'X-Ward-Client: user-1'
check "alice's first run is in flight" wait_for in_flight 1
code=$(run_code "${A[@]}" -H 'X-Ward-Client: user-2')
expect_eq "client-concurrency 1: alice's second run under another X-Ward-Client gets 429" 429 "$code"
code=$(run_code "${A[@]}")
expect_eq "client-concurrency 1: alice's second run without the header gets 429" 429 "$code"
code=$(run_code "${B[@]}" -H 'X-Ward-Client: user-1')
expect_eq "bob (another token) runs meanwhile" 200 "$code"
wait $RUN_PIDS
expect_eq "alice's first run finished" 200 "$(cat "$SERVE_TMP/first")"
check "the 429 names the client, not the header" grep -q "client 'alice' already has 1 runs" "$SRV_LOG"
check "the log names client/header" grep -q '"client":"alice/user-1"' "$SRV_LOG"
stop_server "$SRV_PID"

# without tokens: the address is the client
start_server anon --max-concurrent 4 --client-concurrency 1 || exit 0
AUTH=()
RUN_PIDS=""
start_run first -H 'X-Ward-Client: one'
check "the first anonymous run is in flight" wait_for in_flight 1
code=$(run_code -H 'X-Ward-Client: two')
expect_eq "no tokens: the same address under another X-Ward-Client gets 429" 429 "$code"
code=$(run_code --interface 127.0.0.2 -H 'X-Ward-Client: one')
expect_eq "no tokens: another address runs" 200 "$code"
wait $RUN_PIDS
expect_eq "the first anonymous run finished" 200 "$(cat "$SERVE_TMP/first")"
check "the log names address/header" grep -q '"client":"127.0.0.1/one"' "$SRV_LOG"
stop_server "$SRV_PID"

# an IPv6 client is its /64 (one host can hold many addresses of it)
if ! ip -6 addr show lo 2>/dev/null | grep -q '::1/128'; then
	pass "IPv6 /64: skipped (no IPv6 loopback here)"
else
	SRV_LOG6=$SERVE_TMP/v6.log
	"$WARD" serve --listen '[::1]:0' --log "$SRV_LOG6" --client-concurrency 1 </dev/null >"$SERVE_TMP/v6.out" 2>&1 &
	V6_PID=$!
	_SERVE_PIDS="$_SERVE_PIDS $V6_PID"
	addr6=$(listening_addr "$SRV_LOG6" "$V6_PID" 200)
	code=$(curl -s -g --max-time 30 -o /dev/null -w '%{http_code}' -H 'X-Ward-Client: six' --data-binary '{"command":"true"}' "http://$addr6/exec")
	expect_eq "an IPv6 client runs" 200 "$code"
	check "an IPv6 client is counted as its /64" grep -q '"client":"::/64/six"' "$SRV_LOG6"
	stop_server "$V6_PID"
fi

# --subclient-concurrency splits a client's quota
start_server sub --token-file "$SERVE_TMP/tokens" --max-concurrent 4 --client-concurrency 2 \
	--subclient-concurrency 1 || exit 0
AUTH=("${A[@]}")
RUN_PIDS=""
start_run u1 "${A[@]}" -H 'X-Ward-Client: u1'
check "alice/u1 is in flight" wait_for in_flight 1
code=$(run_code "${A[@]}" -H 'X-Ward-Client: u1')
expect_eq "subclient-concurrency 1: alice/u1's second run gets 429" 429 "$code"
start_run u2 "${A[@]}" -H 'X-Ward-Client: u2'
check "alice/u2 runs beside alice/u1" wait_for in_flight 2
code=$(run_code "${A[@]}" -H 'X-Ward-Client: u3')
expect_eq "alice/u3 gets 429: alice's own 2 are in use" 429 "$code"
wait $RUN_PIDS
expect_eq "alice/u1 and alice/u2 finished" "200 200" "$(cat "$SERVE_TMP/u1") $(cat "$SERVE_TMP/u2")"
stop_server "$SRV_PID"

# many distinct X-Ward-Client values: at most 64 kept per client
start_server many --token-file "$SERVE_TMP/tokens" --max-concurrent 2 --client-rate 100000 --subclient-rate 1 || exit 0
AUTH=("${A[@]}")
codes=""
for i in $(seq 65); do
	codes="$codes $(run_code "${A[@]}" -H "X-Ward-Client: name-$i")"
done
n200=$(grep -o 200 <<<"$codes" | wc -l)
expect_eq "64 distinct names run, the 65th gets 429 (each holds its rate state)" "64 429" "$n200 ${codes##* }"
check "that 429 says why" grep -q "has 64 X-Ward-Client names" "$SRV_LOG"
code=$(run_code "${A[@]}" -H 'X-Ward-Client: name-1')
expect_eq "subclient-rate 1: name-1's second run this minute gets 429" 429 "$code"
code=$(run_code "${B[@]}" -H 'X-Ward-Client: name-1')
expect_eq "bob is not affected by alice's names" 200 "$code"
# hostile values: long, quotes, backslashes, bytes beyond ASCII, a control character
long=$(printf 'x%.0s' $(seq 300))
code=$(run_code "${B[@]}" -H "X-Ward-Client: \"q\\\\$(printf '\001\303\251')$long")
expect_eq "a hostile header value is accepted" 200 "$code"
check "the log line stays JSON and the name is sanitized and cut to 64 characters" python3 - "$SRV_LOG" <<'PY'
import json, sys
names = [json.loads(l).get("client", "") for l in open(sys.argv[1])]
bad = [n for n in names if n and n.startswith("bob/_q")]
assert bad, names[-3:]
n = bad[-1][len("bob/"):]
assert len(n) == 64 and all(33 <= ord(c) < 127 and c not in '"\\' for c in n), n
PY
m=$(curl -s --max-time 10 "${B[@]}" "$URL/metrics")
expect_not_contains "metrics name no client" "$m" "name-1"
check "server alive" kill -0 "$SRV_PID"
stop_server "$SRV_PID"; rc=$?
expect_eq "clean exit (with the sub-client records freed)" 0 "$rc"
