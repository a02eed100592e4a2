#!/bin/bash
# ward serve: huge or pathological JSON within --max-body (default 8 MiB)
# neither crashes nor stalls the server nor costs it hundreds of MiB.
. "$(dirname "$0")/lib.bash"

start_server json || exit 0
hwm() { awk '/VmHWM/{print $2}' /proc/"$SRV_PID"/status; }
h0=$(hwm)

# 2.7 million empty objects in 8 MiB: jansson alone would take ~600 MiB and
# seconds of an I/O thread
python3 -c 'import sys; sys.stdout.write("{\"command\":\"true\",\"x\":[" + "{},"*2700000 + "{}]}")' >"$SERVE_TMP/many.json"
t0=$(date +%s.%N)
r=$(http POST /exec --data-binary @"$SERVE_TMP/many.json")
t1=$(date +%s.%N)
expect_eq "8 MiB of tiny values is refused with 400" 400 "$(code_of "$r")"
expect_contains "the refusal says why" "$(body_of "$r")" "JSON values"
check "refused quickly (< 2 s)" awk -v a="$t0" -v b="$t1" 'BEGIN{exit !(b-a < 2)}'
check "server memory stayed small (< 100 MiB more)" test $(( $(hwm) - h0 )) -lt 102400

# the same number of values inside a string is just a string
python3 -c 'import json; print(json.dumps({"command":"wc -c < big.txt","files":[{"path":"big.txt","content":"{},"*2000000}]}))' >"$SERVE_TMP/string.json"
r=$(http POST /exec --data-binary @"$SERVE_TMP/string.json")
expect_eq "a 6 MB file content runs" "200 6000000" "$(code_of "$r") $(jget "$(body_of "$r")" 'd["stdout"].strip()')"

# escaped quotes and backslashes do not confuse the value count
r=$(post_exec '{"command":"echo \"a,b[c{\" \\\\"}')
expect_eq "strings with quotes, commas and brackets" 200 "$(code_of "$r")"

deep=$(python3 -c 'print("{\"command\":\"true\",\"x\":" + "["*50000 + "]"*50000 + "}")')
r=$(post_exec "$deep")
expect_eq "50000 levels of nesting: 400" 400 "$(code_of "$r")"
python3 -c 'print("{\"command\":\"true\",\"x\":\"" + "\\u00e9"*1000000 + "\"}")' >"$SERVE_TMP/esc.json"
r=$(http POST /exec --data-binary @"$SERVE_TMP/esc.json")
expect_eq "a million \\u escapes: runs" 200 "$(code_of "$r")"
printf '{"command":"true","x":"\xff\xfe"}' >"$SERVE_TMP/bad-utf8.json"
r=$(http POST /exec --data-binary @"$SERVE_TMP/bad-utf8.json")
expect_eq "invalid UTF-8: 400" 400 "$(code_of "$r")"
r=$(http GET /health)
expect_eq "healthy after all that" 200 "$(code_of "$r")"
stop_server "$SRV_PID"; rc=$?
expect_eq "clean exit" 0 "$rc"
