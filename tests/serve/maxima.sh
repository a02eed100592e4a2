#!/bin/bash
# ward serve: a runner's maxima (SPEC §10).  Every limit a request can set
# has an operator's maximum: above it 400 naming the field and the maximum
# (never clamped), at it the request runs; /health answers the defaults and
# the maxima; /test goes through the same check.  And what the server holds
# for requests is bounded: decoded requests waiting in the queue count
# against --max-body-total, encoded answers against --max-answer-total, and
# an answer that JSON amplifies (\x01 is six bytes on the wire) is encoded
# without a copy of it per step.
. "$(dirname "$0")/lib.bash"

# above FIELD VALUE MAX OPTION [NAMED] — a request asking for VALUE is
# refused with 400 naming limits.FIELD (or limits.NAMED), the maximum MAX
# and OPTION
above() {
	local r
	r=$(post_exec "{\"command\":\"true\",\"limits\":{\"$1\":$2}}")
	expect_eq "$1 $2 (above $3): 400" 400 "$(code_of "$r")"
	expect_contains "$1 $2: the error names the field" "$(body_of "$r")" "\"error\":\"limits.${5:-$1}: "
	expect_contains "$1 $2: the error names the maximum and its option" "$(body_of "$r")" "maximum $3"
	expect_contains "$1 $2: ... and its option" "$(body_of "$r")" "($4)"
}
health_limits() { # EXPR on d["limits"]
	jget "$(body_of "$(http GET /health)")" "$1"
}
vmkb() { awk -v k="$2:" '$1==k{print $2}' "/proc/$1/status"; }

start_server defaults --max-concurrent 2 || exit 0

r=$(http GET /health)
expect_eq "health: still 200 ok with isolation and version" "200 ok system 1" \
	"$(code_of "$r") $(jget "$(body_of "$r")" 'd["status"]') $(jget "$(body_of "$r")" 'd["isolation"]') $(jget "$(body_of "$r")" 'int(bool(d["version"]))')"
expect_eq "health: limits.defaults" "30.0 30.0 512 64 1048576 64 64 256" \
	"$(health_limits '" ".join(str(d["limits"]["defaults"][k]) for k in ("timeout_s","cpu_seconds","memory_mb","pids","max_output_chars","fsize_mb","tmp_size_mb","nofile"))')"
expect_eq "health: limits.maxima (SPEC §10's defaults)" "300.0 300.0 4096 1024 16777216 1024 1024 4096" \
	"$(health_limits '" ".join(str(d["limits"]["maxima"][k]) for k in ("timeout_s","cpu_seconds","memory_mb","pids","max_output_chars","fsize_mb","tmp_size_mb","nofile"))')"

# the finding: any client could ask for any limit
above memory_mb 1048576 "4096 MB" --max-memory
above timeout_s 86400 "300 s" --max-timeout
above tmp_size_mb 1048576 "1024 MB" --max-tmp-size
r=$(post_exec '{"command":"true","limits":{"memory_mb":1048576}}')
expect_eq "the whole message" '{"error":"limits.memory_mb: 1048576 MB is above this runner'"'"'s maximum 4096 MB (--max-memory)"}' "$(body_of "$r")"
above cpu_seconds 300.5 "300 s" --max-cpu
above pids 1025 1024 --max-pids
above max_output_chars 16777217 "16777216 bytes" --max-output
above output_limit 209715200 "16777216 bytes" --max-output max_output_chars
above fsize_mb 1025 "1024 MB" --max-fsize
above nofile 4097 4096 --max-nofile

r=$(post_exec '{"command":"echo at-max","limits":{"timeout_s":300,"cpu_seconds":300,"memory_mb":4096,"pids":1024,"max_output_chars":16777216,"fsize_mb":1024,"tmp_size_mb":1024,"nofile":4096}}')
expect_eq "every limit exactly at its maximum: runs" "200 ok at-max" \
	"$(code_of "$r") $(jget "$(body_of "$r")" 'd["status"]') $(jget "$(body_of "$r")" 'd["stdout"].strip()')"

# /test: the same maxima
post_test() { http POST /test -H 'Content-Type: application/json' --data-binary "$1"; }
JUNIT='"runner":"junit","command":["/bin/sh","-c","printf %s \"<testsuite><testcase name=\\\"a\\\"/></testsuite>\" >\"$WARD_REPORT\""]'
r=$(post_test "{$JUNIT,\"limits\":{\"memory_mb\":1048576}}")
expect_eq "/test: memory_mb above the maximum: 400" 400 "$(code_of "$r")"
expect_contains "/test: the error names the field and the maximum" "$(jget "$(body_of "$r")" 'd["error"]')" \
	"limits.memory_mb: 1048576 MB is above this runner's maximum 4096 MB (--max-memory)"
r=$(post_test "{$JUNIT,\"limits\":{\"tmp_size_mb\":1048576}}")
expect_contains "/test: tmp_size_mb of 1 TiB refused" "$(code_of "$r") $(jget "$(body_of "$r")" 'd["error"]')" "400 job refused: limits.tmp_size_mb"
r=$(post_test "{$JUNIT,\"limits\":{\"memory_mb\":4096,\"timeout_s\":300}}")
expect_eq "/test: at the maximum it runs" "200 1 1" \
	"$(code_of "$r") $(jget "$(body_of "$r")" 'd["total"]') $(jget "$(body_of "$r")" 'd["passed"]')"

# The amplification on the server: 16 MiB of \x01 is a 96 MiB answer,
# encoded once into one buffer of its size (jansson's copies and doubling
# buffer took ~2.7 of it more).  Only this request runs: the server's peak
# is its baseline, the kept output and the answer.
N=$((16 << 20))
hwm0=$(vmkb "$SRV_PID" VmHWM)
curl -s --max-time 120 -o "$SERVE_TMP/amp.json" -w '%{http_code}' --data-binary \
	"{\"command\":\"head -c $N /dev/zero | tr '\\\\0' '\\\\1'\",\"limits\":{\"max_output_chars\":$N,\"timeout_s\":60}}" \
	"$URL/exec" >"$SERVE_TMP/amp.code"
hwm1=$(vmkb "$SRV_PID" VmHWM)
expect_eq "16 MiB of 0x01: 200, whole and valid JSON" "200 ok $N True False" \
	"$(cat "$SERVE_TMP/amp.code") $(/usr/bin/python3 -c 'import json,sys
d=json.load(open(sys.argv[1])); s=d["stdout"]
print(d["status"], len(s), s==chr(1)*len(s), d["stdout_truncated"])' "$SERVE_TMP/amp.json" 2>&1)"
grown=$(( (hwm1 - hwm0) / 1024 ))
if [ "${WARD_ASAN:-0}" = 1 ]; then : # ASan's quarantine keeps what was freed resident
elif [ "$grown" -lt 192 ]; then pass "16 MiB of 0x01: the server's peak grew by less than 2x the 96 MiB answer (${grown} MiB)"
else fail "16 MiB of 0x01: the server's peak grew by less than 2x the 96 MiB answer" "VmHWM grew ${grown} MiB"; fi
stop_server "$SRV_PID"

# An operator's maxima
start_server custom --max-memory 1024 --max-timeout 60 --max-cpu 40 --max-pids 128 --max-output 2097152 \
	--max-fsize 100 --max-tmp-size 200 --max-nofile 512 || exit 0
expect_eq "custom: /health answers the maxima in force" "60.0 40.0 1024 128 2097152 100 200 512" \
	"$(health_limits '" ".join(str(d["limits"]["maxima"][k]) for k in ("timeout_s","cpu_seconds","memory_mb","pids","max_output_chars","fsize_mb","tmp_size_mb","nofile"))')"
above memory_mb 1025 "1024 MB" --max-memory
above timeout_s 60.5 "60 s" --max-timeout
above cpu_seconds 41 "40 s" --max-cpu
above pids 129 128 --max-pids
above max_output_chars 2097153 "2097152 bytes" --max-output
above fsize_mb 101 "100 MB" --max-fsize
above tmp_size_mb 201 "200 MB" --max-tmp-size
above nofile 513 512 --max-nofile
r=$(post_exec '{"command":"true","limits":{"timeout_s":50}}')
expect_eq "custom: a timeout above --max-cpu without cpu_seconds: 400 naming cpu_seconds" \
	"400 limits.cpu_seconds --max-cpu" \
	"$(code_of "$r") $(jget "$(body_of "$r")" 'd["error"].split(":")[0]') $(jget "$(body_of "$r")" '"--max-cpu" if "(--max-cpu)" in d["error"] else d["error"]')"
r=$(post_exec '{"command":"echo ok","limits":{"timeout_s":60,"cpu_seconds":40,"memory_mb":1024,"pids":128,"max_output_chars":2097152,"fsize_mb":100,"tmp_size_mb":200,"nofile":512}}')
expect_eq "custom: at every maximum it runs" "200 ok" "$(code_of "$r") $(jget "$(body_of "$r")" 'd["status"]')"
stop_server "$SRV_PID"

# A maximum below what a request that names no limits gets lowers that
# default to it (a stricter runner is the operator's choice): /health says
# so, such a request runs under it, and one that names more is refused.
start_server strict --max-timeout 2 --max-memory 256 --max-cpu 1 || exit 0
h=$(body_of "$(http GET /health)")
expect_eq "strict runner: /health's defaults are lowered to the maxima" "2.0 256 1.0" \
	"$(jget "$h" 'd["limits"]["defaults"]["timeout_s"]') $(jget "$h" 'd["limits"]["defaults"]["memory_mb"]') $(jget "$h" 'd["limits"]["defaults"]["cpu_seconds"]')"
r=$(post_exec '{"command":"sleep 10"}')
expect_eq "strict runner: a request that names no timeout runs under the lowered one (2 s)" "200 timeout" \
	"$(code_of "$r") $(jget "$(body_of "$r")" 'd["status"]')"
r=$(post_exec '{"command":"true","limits":{"timeout_s":30,"cpu_seconds":1}}')
expect_eq "strict runner: a request that names more than the maximum is still refused" 400 "$(code_of "$r")"
stop_server "$SRV_PID"

# Start-up: a maximum beyond ward's own bounds, or an answer budget that
# cannot hold the largest answer, is refused.
refuse_start() { # NAME WANT ARGS...
	local name=$1 want=$2 out rc
	shift 2
	out=$(timeout 20 "$WARD" serve --listen 127.0.0.1:0 "$@" 2>&1 </dev/null)
	rc=$?
	expect_eq "start-up: $name: exit 125" 125 "$rc"
	expect_contains "start-up: $name: says so" "$out" "$want"
}
refuse_start "--max-tmp-size beyond ward's own bound" "--max-tmp-size '2000000': give a whole number from 1 to 1048576" --max-tmp-size 2000000
refuse_start "--max-output too large for --max-answer-total" "--max-answer-total 1073741824 cannot hold" --max-output 100000000

# Decoded requests waiting in the queue count against --max-body-total.
# One slot, held by a run that waits for a file; then requests of ~1.9 MiB
# each (stdin), one after another: each body fits, but what the queue holds
# may not exceed 8 MiB, so after a few the rest are refused (503), and the
# server's memory stays bounded.
HOLD=$SERVE_TMP/hold
mkdir -p "$HOLD"
chmod 0777 "$HOLD"
start_server flood --max-concurrent 1 --queue 100 --max-body $((2 << 20)) --max-body-total $((8 << 20)) \
	--allow-root "$HOLD" || exit 0
curl -s --max-time 120 -o /dev/null -w '%{http_code}' --data-binary \
	"{\"command\":\"while [ ! -e /work/go ]; do sleep 0.1; done\",\"workdir\":\"$HOLD\",\"limits\":{\"timeout_s\":100}}" \
	"$URL/exec" >"$SERVE_TMP/hold.code" &
HOLD_PID=$!
wait_for metric_is ward_in_flight = 1 || fail "flood: the holding run started"
/usr/bin/python3 -c 'import json; print(json.dumps({"command": "true", "stdin": "s" * (1900 << 10)}))' >"$SERVE_TMP/big.json"
rss0=$(vmkb "$SRV_PID" VmRSS)
FLOOD=24 queued=0 refused=0 pids=""
for i in $(seq "$FLOOD"); do
	curl -s --max-time 120 -o /dev/null -w '%{http_code}\n' --data-binary @"$SERVE_TMP/big.json" "$URL/exec" \
		>"$SERVE_TMP/flood.$i" &
	pids="$pids $!"
	# queued (the queue grew) or answered (refused): then the next
	wait_for eval "[ -s '$SERVE_TMP/flood.$i' ] || metric_is ward_queued -gt $queued"
	if [ -s "$SERVE_TMP/flood.$i" ]; then refused=$((refused + 1))
	elif metric_is ward_queued -gt $queued; then queued=$((queued + 1))
	else fail "flood: request $i was neither queued nor answered within 10 s"; fi
done
rss1=$(vmkb "$SRV_PID" VmRSS)
held=$(metric ward_body_bytes)
expect_eq "flood: what waits is bounded by --max-body-total (at most 4 requests of 1.9 MiB in 8 MiB)" 1 \
	"$([ "$queued" -ge 1 ] && [ "$queued" -le 4 ] && echo 1 || echo "queued=$queued refused=$refused")"
expect_eq "flood: the others are refused with 503" "$((FLOOD - queued))" \
	"$(cat "$SERVE_TMP"/flood.* | grep -cx 503)"
check "flood: ward_body_bytes stays within --max-body-total ($held)" test "$held" -le $((8 << 20))
grown=$(( (rss1 - rss0) / 1024 ))
if [ "${WARD_ASAN:-0}" = 1 ]; then : # as above
elif [ "$grown" -lt 24 ]; then pass "flood: the server's memory grew by less than 24 MiB (${grown} MiB; 24 queued would be 45)"
else fail "flood: the server's memory grew by less than 24 MiB" "VmRSS grew ${grown} MiB"; fi
r=$(curl -s --max-time 10 -d @"$SERVE_TMP/big.json" "$URL/exec")
expect_contains "flood: the 503 says what to do" "$r" "retry later"
touch "$HOLD/go"
wait $HOLD_PID $pids
expect_eq "flood: the holding run and the queued ones ran" "200 $queued" \
	"$(cat "$SERVE_TMP/hold.code") $(cat "$SERVE_TMP"/flood.* | grep -cx 200)"
check "flood: nothing is held afterwards" wait_for metric_is ward_body_bytes = 0
stop_server "$SRV_PID"

# Encoded answers count against --max-answer-total until their client has
# taken them.  Answers of 48 MiB (4 MiB of \x01 on each stream) to clients
# that read at 1 KiB/s: two are held (96 MiB), a third does not fit in
# 120 MiB and is refused (503) instead of held; once the slow clients are
# gone the budget is free again.
start_server answers --max-concurrent 2 --max-output $((4 << 20)) --max-answer-total $((120 << 20)) \
	--max-answer-client $((120 << 20)) \
	--request-timeout 300 || exit 0
M=$((4 << 20))
AMP="{\"command\":\"head -c $M /dev/zero | tr '\\\\0' '\\\\1'; head -c $M /dev/zero | tr '\\\\0' '\\\\1' >&2\",\"limits\":{\"max_output_chars\":$M}}"
slow=""
for i in 1 2; do
	curl -s --max-time 300 --limit-rate 1K -o /dev/null --data-binary "$AMP" "$URL/exec" &
	slow="$slow $!"
	wait_for metric_is ward_answer_bytes -ge $(( i * (48 << 20) )) || fail "answers: slow client $i holds its answer"
done
held=$(metric ward_answer_bytes)
check "answers: two 48 MiB answers are held ($held bytes)" test "$held" -ge $((96 << 20))
r=$(curl -s --max-time 60 -w '\n%{http_code}' --data-binary "$AMP" "$URL/exec")
expect_eq "answers: a third does not fit: 503" 503 "${r##*$'\n'}"
expect_contains "answers: the 503 names --max-answer-total" "${r%$'\n'*}" "does not fit in --max-answer-total"
check "answers: the held answers stay within --max-answer-total" test "$(metric ward_answer_bytes)" -le $((120 << 20))
kill $slow 2>/dev/null
wait $slow 2>/dev/null
check "answers: released when the clients go" wait_for metric_is ward_answer_bytes = 0
r=$(curl -s --max-time 60 -o "$SERVE_TMP/a.json" -w '%{http_code}' --data-binary "$AMP" "$URL/exec")
expect_eq "answers: then it fits again" "200 $M" \
	"$r $(/usr/bin/python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["stderr"]))' "$SERVE_TMP/a.json" 2>&1)"
stop_server "$SRV_PID"
