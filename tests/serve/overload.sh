#!/bin/bash
# ward serve: overload answers 429 with Retry-After and never crashes;
# per-client quotas (concurrency, runs per minute) keyed by token or by
# address (X-Ward-Client never adds to them: tests/serve/quota_identity.sh).
. "$(dirname "$0")/lib.bash"

# burst CLIENT_HEADER N CMD — N concurrent POST /exec; prints the codes, sorted
burst() {
	local hdr=$1 n=$2 cmd=$3 i
	shift 3
	for i in $(seq "$n"); do
		curl -s --max-time 60 -o /dev/null -D "$SERVE_TMP/h.$i" -w '%{http_code}\n' -H "$hdr" "$@" \
			--data-binary "{\"command\":\"$cmd\"}" "$URL/exec" >"$SERVE_TMP/c.$i" &
	done
	wait # in $(burst ...), a subshell: the server is not its child
	cat "$SERVE_TMP"/c.* | sort | tr '\n' ' '
	rm -f "$SERVE_TMP"/c.*
}

# A run that waits for the test's go (a file in a bound directory, at most
# 30 s): the runs admitted are still there when the last request arrives,
# however slowly the requests are started.
GATE=$SERVE_TMP/gate
mkdir -p "$GATE"
chmod 0755 "$SERVE_TMP" "$GATE"
GATED='{"command":"k=0; while [ ! -e /gate/go ] && [ $k -lt 600 ]; do sleep 0.05; k=$((k+1)); done","mounts":[{"host_path":"'"$GATE"'","sandbox_path":"/gate"}]}'
# answered N — N of the background requests have their code
answered() { [ "$(cat "$SERVE_TMP"/c.* 2>/dev/null | grep -c .)" -ge "$1" ]; }

start_server busy --max-concurrent 1 --queue 1 --allow-root "$GATE" || exit 0
rm -f "$GATE/go"
for i in $(seq 8); do
	curl -s --max-time 60 -o /dev/null -D "$SERVE_TMP/h.$i" -w '%{http_code}\n' -H "X-Ward-Client: a" \
		--data-binary "$GATED" "$URL/exec" >"$SERVE_TMP/c.$i" &
	pids="${pids:-} $!"
done
# the two admitted (1 slot + 1 queued) wait at the gate: six answers are 429s
check "overload: six answered while two wait" wait_for answered 6
touch "$GATE/go"
wait $pids
codes=$(cat "$SERVE_TMP"/c.* | sort | tr '\n' ' ')
rm -f "$SERVE_TMP"/c.*
n200=$(grep -o 200 <<<"$codes" | wc -l)
n429=$(grep -o 429 <<<"$codes" | wc -l)
expect_eq "overload: 2 run (1 slot + 1 queued), 6 get 429" "2 6" "$n200 $n429"
check "429 carries Retry-After" grep -qi '^Retry-After: [0-9]' $(grep -l ' 429' "$SERVE_TMP"/h.*)
r=$(http GET /metrics)
expect_contains "metrics count the rejected" "$(body_of "$r")" 'ward_rejected_total{reason="busy"} 6'
r=$(http GET /health)
expect_eq "healthy after overload" 200 "$(code_of "$r")"
# a second, bigger wave: the server survives it and recovers fully
codes=$(burst "X-Ward-Client: a" 40 "true")
check "40 at once: no failure other than 429" test -z "$(tr ' ' '\n' <<<"$codes" | grep -v -e '^200$' -e '^429$' -e '^$')"
r=$(post_exec '{"command":"echo back"}')
expect_eq "runs again after the wave" "200 back" "$(code_of "$r") $(jget "$(body_of "$r")" 'd["stdout"].strip()')"
check "server alive" kill -0 "$SRV_PID"
stop_server "$SRV_PID"

# per-client concurrency, keyed by the address (no tokens)
start_server conc --max-concurrent 4 --queue 8 --client-concurrency 1 --allow-root "$GATE" || exit 0
rm -f "$GATE/go"
pids=""
for i in 1 2; do
	curl -s --max-time 60 -o /dev/null -w '%{http_code}\n' -H "X-Ward-Client: same" --data-binary "$GATED" "$URL/exec" >"$SERVE_TMP/c.$i" &
	pids="$pids $!"
done
# the other client's run (another address) is admitted while the first one of this one waits
curl -s --max-time 60 -o /dev/null -w '%{http_code}\n' --interface 127.0.0.2 --data-binary '{"command":"true"}' "$URL/exec" >"$SERVE_TMP/other"
check "client concurrency: the second run of the same client is answered while the first waits" wait_for answered 1
touch "$GATE/go"
wait $pids # (never a bare wait: the server is a child of this shell too)
expect_eq "client concurrency 1: second run of the same client gets 429" "200 429" "$(sort "$SERVE_TMP"/c.* | tr '\n' ' ' | sed 's/ $//')"
expect_eq "another client (address 127.0.0.2) is not affected" 200 "$(cat "$SERVE_TMP/other")"
rm -f "$SERVE_TMP"/c.*
r=$(http GET /metrics)
expect_contains "metrics count client_concurrency" "$(body_of "$r")" 'ward_rejected_total{reason="client_concurrency"} 1'
stop_server "$SRV_PID"

# per-client rate, keyed by token
printf 'alice tokA\nbob tokB\n' >"$SERVE_TMP/tokens"
start_server rate --client-rate 3 --token-file "$SERVE_TMP/tokens" || exit 0
codes=""
for i in 1 2 3 4; do
	codes="$codes $(curl -s --max-time 30 -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer tokA' --data-binary '{"command":"true"}' "$URL/exec")"
done
expect_eq "client rate 3/min: the 4th run of alice gets 429" " 200 200 200 429" "$codes"
hdr=$(curl -s --max-time 30 -o /dev/null -D - -H 'Authorization: Bearer tokA' --data-binary '{"command":"true"}' "$URL/exec")
check "rate 429 says when to retry" grep -qiE '^Retry-After: ([1-9]|[1-2][0-9])' <<<"$hdr"
code=$(curl -s --max-time 30 -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer tokB' --data-binary '{"command":"true"}' "$URL/exec")
expect_eq "bob (another token) still runs" 200 "$code"
code=$(curl -s --max-time 30 -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer tokA' -H 'X-Ward-Client: alice-user-2' --data-binary '{"command":"true"}' "$URL/exec")
expect_eq "alice's own user (X-Ward-Client) does not add to alice's quota" 429 "$code"
check "the log names the client" grep -q '"client":"alice"' "$SRV_LOG"
stop_server "$SRV_PID"
