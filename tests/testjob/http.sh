#!/bin/bash
# POST /test on a real `ward serve`: the same reports as `ward test`, 400
# for a refused job, and jobs running at once do not mix their reports.
. "$(dirname "$0")/../serve/lib.bash"

counts() { # BODY
	jget "$1" '" ".join(str(d[k]) if d[k] is not None else "null" for k in ("total","passed","failed","errored","skipped","pass_rate"))' 2>/dev/null || echo unparsable
}
job() { # PASSING FAILING — a python job with that many passing and failing tests
	/usr/bin/python3 -c 'import json, sys
p, f = int(sys.argv[1]), int(sys.argv[2])
src = "import unittest\nclass T(unittest.TestCase):\n"
src += "".join("    def test_p%d(self): pass\n" % i for i in range(p))
src += "".join("    def test_f%d(self): self.fail()\n" % i for i in range(f))
print(json.dumps({"test_files": [{"path": "test_n.py", "content": src}], "framework": "unittest",
                  "limits": {"timeout_s": 30}}))' "$1" "$2"
}
post_test() { http POST /test -H 'Content-Type: application/json' --data-binary "$1"; }

start_server testjob --max-concurrent 4 || exit 0

a=$(post_test "$(job 3 1)")
expect_eq "POST /test: 200" 200 "$(code_of "$a")"
expect_eq "POST /test: counts" "4 3 1 0 0 75.0" "$(counts "$(body_of "$a")")"

a=$(post_test '{"test_files":[{"path":"../x.py","content":""}]}')
expect_eq "POST /test bad path: 400" 400 "$(code_of "$a")"
expect_contains "POST /test bad path: error" "$(jget "$(body_of "$a")" 'd["error"]')" ".."
expect_eq "POST /test bad path: no counts" "0 0 0 0 0 null" "$(counts "$(body_of "$a")")"

a=$(post_test '{"test_files":')
expect_eq "POST /test malformed: 400" 400 "$(code_of "$a")"

a=$(post_test '{"runner":"junit","command":["/bin/sh","-c","printf %s \"<!DOCTYPE a [<!ENTITY b \\\"c\\\">]><testsuite><testcase name=\\\"&b;\\\"/></testsuite>\" >\"$WARD_REPORT\""]}')
expect_eq "POST /test junit DOCTYPE: 200" 200 "$(code_of "$a")"
expect_contains "POST /test junit DOCTYPE: refused" "$(jget "$(body_of "$a")" 'd["error"]')" "DOCTYPE"

# four jobs at once, each with its own counts
pids=""
for i in 1 2 3 4; do
	post_test "$(job "$i" "$((5 - i))")" >"$SERVE_TMP/c$i" &
	pids="$pids $!"
done
wait $pids # not a bare wait: the server is a background job too
for i in 1 2 3 4; do
	a=$(cat "$SERVE_TMP/c$i")
	expect_eq "concurrent job $i: counts" "5 $i $((5 - i)) 0 0 $(awk -v p="$i" 'BEGIN{printf "%.1f", p*20}')" "$(counts "$(body_of "$a")")"
done
stop_server "$SRV_PID"
