#!/bin/bash
# POST /judge and GET /languages (SPEC §15) through a real runner: the
# maxima (SPEC §10) refused with 400 naming the limit, paths refused, CE,
# output as bytes, streaming, parallel within --max-concurrent, and two
# jobs from two clients at once sharing nothing.
. "$(dirname "$0")/judge.bash"

start_server http --max-concurrent 2 --max-body 200000000 --max-body-total 400000000 || exit 0
T=$SERVE_TMP
langs=$(curl -s "$URL/languages")
expect_contains "languages: C is listed" "$langs" '"id":"c"'
expect_not_contains "languages: only enabled ones" "$langs" '"enabled"'
all=$(curl -s "$URL/languages?all=1")
expect_contains "languages: ?all=1 says which are enabled" "$all" '"enabled":true'

P=$JDIR/programs
for bad in ../x /etc/x; do
	printf '{"language":"c","files":[{"path":"%s","content":"int main(){}"}],"tests":[{}]}' "$bad" >"$T/p.json"
	post_judge "$T/p.json"
	expect_eq "paths: a source named $bad is refused" 400 "$CODE"
	expect_contains "paths: ... naming the field" "$ANS" "files[0].path"
done
/usr/bin/python3 -c 'import json; print(json.dumps({"language":"python","files":[{"content":"print(1)"}],"tests":[{"stdin":""}]*1001}))' >"$T/many.json"
post_judge "$T/many.json"
expect_eq "maxima: 1001 tests against 1000: 400" 400 "$CODE"
expect_contains "maxima: ... naming the limit" "$ANS" "1001 tests; this runner's maximum is 1000 a job (--max-tests)"
/usr/bin/python3 -c 'import json; print(json.dumps({"language":"python","files":[{"content":"print(1)"}],"tests":[{"expected_stdout":"a"*(64*1024*1024+1)}]}))' >"$T/big.json"
post_judge "$T/big.json"
expect_eq "maxima: 64 MiB + 1 of expected output: 400" 400 "$CODE"
expect_contains "maxima: ... naming the limit" "$ANS" "(--max-test-bytes)"
rm -f "$T/big.json" "$T/many.json"
job python "$P/main.py" '[{"stdin":"1 2"}]' '{"parallel": 65}' >"$T/par.json"
post_judge "$T/par.json"
expect_eq "maxima: parallel over --max-parallel: 400" 400 "$CODE"
expect_contains "maxima: ... naming the limit" "$ANS" "--max-parallel"
job python "$P/main.py" '[{"stdin":"1 2"}]' '{"run": {"limits": {"memory_mb": 999999}}}' >"$T/mem.json"
post_judge "$T/mem.json"
expect_contains "maxima: a limit above the runner's: 400 naming it" "$CODE $ANS" "400"
expect_contains "maxima: ... run.limits.memory_mb" "$ANS" "run.limits.memory_mb"
printf '{"language":"cobol","files":[{"content":"x"}],"tests":[{}]}' >"$T/cobol.json"
post_judge "$T/cobol.json"
expect_eq "an unknown language: 400" 400 "$CODE"

# CE: the compiler's message, no test
printf 'int main(void) { return x; }\n' >"$T/ce.c"
job c "$T/ce.c" '[{"stdin":"1 2","expected_stdout":"3"}]' >"$T/ce.json"
post_judge "$T/ce.json"
expect_eq "CE: the verdict" CE "$(jg "$ANS" 'd["verdict"]')"
expect_contains "CE: the compiler's message" "$(jg "$ANS" 'd["compile"]["stderr"]')" "error"
expect_eq "CE: no test ran" "[]" "$(jg "$ANS" 'd["tests"]')"

# bytes: stdin in base64, output not UTF-8 comes back base64
printf 'import sys\nsys.stdout.buffer.write(bytes([255, 0, 1]) + sys.stdin.buffer.read())\n' >"$T/bin.py"
job python "$T/bin.py" '[{"stdin":"/w==","stdin_encoding":"base64","expected_stdout":"/wAB/w==","expected_stdout_encoding":"base64"}]' '{"compare":"exact"}' >"$T/bin.json"
post_judge "$T/bin.json"
expect_eq "bytes: base64 in, compared as bytes" AC "$(jg "$ANS" 'd["tests"][0]["verdict"]')"
expect_eq "bytes: stdout not UTF-8 comes base64" "/wAB/w== base64" "$(jg "$ANS" 'd["tests"][0]["stdout"]+" "+d["tests"][0]["stdout_encoding"]')"

# three tests, one failing, streamed: a test event each, then the result
job python "$P/main.py" '[{"id":"1","stdin":"1 2","expected_stdout":"3\n"},{"id":"2","stdin":"2 2","expected_stdout":"5\n"},{"id":"3","stdin":"5 5","expected_stdout":"10\n"}]' >"$T/three.json"
stream=$(curl -s -N -m 60 -H 'Accept: application/x-ndjson' --data-binary @"$T/three.json" "$URL/judge")
expect_eq "stream: three test events and the result" 4 "$(printf '%s\n' "$stream" | grep -c .)"
expect_eq "stream: test events first" 3 "$(printf '%s\n' "$stream" | grep -c '^{"test":')"
last=$(printf '%s\n' "$stream" | tail -1)
expect_eq "stream: the result last" "WA 2 2" "$(jg "$last" 'd["result"]["verdict"]+" "+str(d["result"]["summary"]["passed"])+" "+d["result"]["summary"]["first_failed"]')"

# parallel within --max-concurrent 2: four tests of 1 s each take ~2 s
printf 'import time\ntime.sleep(1)\nprint(input())\n' >"$T/slow.py"
job python "$T/slow.py" '[{"stdin":"a","expected_stdout":"a"},{"stdin":"b","expected_stdout":"b"},{"stdin":"c","expected_stdout":"c"},{"stdin":"d","expected_stdout":"d"}]' '{"parallel": 8}' >"$T/slow.json"
start=$(date +%s.%N)
post_judge "$T/slow.json"
took=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
expect_eq "parallel: the job passes" AC "$(jg "$ANS" 'd["verdict"]')"
expect_eq "parallel: clamped to --max-concurrent" 2 "$(jg "$ANS" 'd["summary"]["parallel"]')"
check "parallel: four 1 s tests two at a time take under 3.5 s (${took} s)" awk -v t="$took" 'BEGIN{exit !(t < 3.5)}'

# two jobs at once from two clients, sharing nothing
printf 'import os\nopen("/work/mine","a").write(input())\nls = sorted(os.listdir("/work"))\nprint("X" if ls == ["mine", "share.py"] else ls, open("/work/mine").read())\n' >"$T/share.py"
job python "$T/share.py" '[{"stdin":"A","expected_stdout":"X A\n"},{"stdin":"A","expected_stdout":"X A\n"}]' >"$T/a.json"
job python "$T/share.py" '[{"stdin":"B","expected_stdout":"X B\n"},{"stdin":"B","expected_stdout":"X B\n"}]' >"$T/b.json"
curl -s -m 60 -H 'X-Ward-Client: one' --data-binary @"$T/a.json" "$URL/judge" >"$T/a.out" &
pa=$!
curl -s -m 60 -H 'X-Ward-Client: two' --data-binary @"$T/b.json" "$URL/judge" >"$T/b.out" &
pb=$!
wait $pa $pb
expect_eq "two clients: the first job sees only its own files" "AC 2" "$(jg "$(cat "$T/a.out")" 'd["verdict"]+" "+str(d["summary"]["passed"])')"
expect_eq "two clients: the second too" "AC 2" "$(jg "$(cat "$T/b.out")" 'd["verdict"]+" "+str(d["summary"]["passed"])')"
h=$(curl -s "$URL/health")
expect_contains "the runner is healthy after" "$h" '"status":"ok"'
