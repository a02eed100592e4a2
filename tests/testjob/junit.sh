#!/bin/bash
# The junit runner: the job's command leaves JUnit XML at $WARD_REPORT;
# ward reads it after the run.  Hostile XML is refused, not expanded.
. "$(dirname "$0")/testjob.bash"

cat >"$T/report.xml" <<'XML'
<?xml version="1.0" encoding="UTF-8"?>
<testsuites>
  <testsuite name="CalcTest" tests="40" failures="0" errors="0" skipped="0">
    <testcase classname="CalcTest" name="adds" time="0.012"/>
    <testcase classname="CalcTest" name="divides"><failure message="expected 2 but was 3" type="AssertionError">at CalcTest.divides(CalcTest.java:12)</failure></testcase>
    <testcase classname="CalcTest" name="later"><skipped message="not yet"/></testcase>
    <testcase classname="CalcTest" name="crashes"><error message="NullPointerException" type="java.lang.NullPointerException"/></testcase>
  </testsuite>
</testsuites>
XML
cp_report='["/bin/sh", "-c", "echo Tests run: 40, Failures: 0; cp report.xml \"$WARD_REPORT\"; exit 1"]'
mkjob "$T/j" runner=junit src:report.xml=@"$T/report.xml" command="$cp_report" timeout=20
wtest "$T/j"
expect_eq "junit: counts from testcases" "4 1 1 1 1 25.0" "$(counts)"
expect_eq "junit: names" "CalcTest.adds CalcTest.divides CalcTest.later CalcTest.crashes" "$(jget "$R" '" ".join(t["name"] for t in d["details"])')"
expect_eq "junit: outcomes" "passed failed skipped errored" "$(jget "$R" '" ".join(t["outcome"] for t in d["details"])')"
expect_contains "junit: failure message" "$(jget "$R" 'd["details"][1]["message"]')" "expected 2 but was 3"
expect_eq "junit: duration" 12 "$(jget "$R" 'd["details"][0]["duration_ms"]')"
expect_eq "junit: exit_code of the command" 1 "$(jget "$R" 'd["exit_code"]')"
expect_contains "junit: stdout kept" "$(jget "$R" 'd["stdout"]')" "Tests run: 40"
expect_eq "junit: exit 1" 1 "$RC"

mkjob "$T/j" runner=junit command='["/bin/sh", "-c", "printf %s \"<testsuite><testcase name=\\\"a\\\"/><testcase name=\\\"b\\\"/></testsuite>\" >\"$WARD_REPORT\""]' timeout=20
wtest "$T/j"
expect_eq "junit all pass: counts" "2 2 0 0 0 100.0" "$(counts)"
expect_eq "junit all pass: exit 0" 0 "$RC"

# billion laughs: refused at the DOCTYPE, quickly
/usr/bin/python3 - >"$T/lol.xml" <<'PY'
print('<?xml version="1.0"?>\n<!DOCTYPE lolz [\n<!ENTITY lol "lol">')
for i in range(1, 10):
    prev = "lol" if i == 1 else "lol%d" % (i - 1)
    print('<!ENTITY lol%d "%s">' % (i, ("&%s;" % prev) * 10))
print(']>\n<testsuite><testcase name="&lol9;"/></testsuite>')
PY
mkjob "$T/j" runner=junit src:lol.xml=@"$T/lol.xml" command='["/bin/sh", "-c", "cp lol.xml \"$WARD_REPORT\""]' timeout=20
wtest "$T/j"
expect_eq "billion laughs: refused" "0 0 0 0 0 null" "$(counts)"
expect_contains "billion laughs: error names the DOCTYPE" "$(jget "$R" 'd["error"]')" "DOCTYPE"
check "billion laughs: quick (${SECS}s)" awk -v s="$SECS" 'BEGIN{exit !(s < 10)}'
expect_eq "billion laughs: exit 1" 1 "$RC"

# an external entity (XXE) is refused the same way
mkjob "$T/j" runner=junit command='["/bin/sh", "-c", "echo \"<!DOCTYPE t [<!ENTITY x SYSTEM \\\"file:///etc/passwd\\\">]><testsuite><testcase name=\\\"&x;\\\"/></testsuite>\" >\"$WARD_REPORT\""]' timeout=20
wtest "$T/j"
expect_contains "XXE: refused" "$(jget "$R" 'd["error"]')" "DOCTYPE"
expect_not_contains "XXE: nothing read" "$R" "root:x:0"

# no report at all
mkjob "$T/j" runner=junit command='["/bin/sh", "-c", "echo 100 passed, 0 failed; echo OK"]' timeout=20
wtest "$T/j"
expect_eq "no report: counts" "0 0 0 0 0 null" "$(counts)"
expect_contains "no report: error" "$(jget "$R" 'd["error"]')" "no report"
expect_eq "no report: exit 1" 1 "$RC"

# an empty report, a report that is not XML, a report that is not JUnit
for c in ': >"$WARD_REPORT"' 'echo 100 passed, 0 failed >"$WARD_REPORT"' 'echo "<html><testcase name=\"a\"/></html>" >"$WARD_REPORT"' \
	'echo "<testsuite tests=\"5\"><testcase name=\"a\">" >"$WARD_REPORT"'; do
	mkjob "$T/j" runner=junit command="$(/usr/bin/python3 -c 'import json,sys; print(json.dumps(["/bin/sh","-c",sys.argv[1]]))' "$c")" timeout=20
	wtest "$T/j"
	expect_eq "bad report ($c): no counts" "0 0 0 0 0 null" "$(counts)"
	check "bad report ($c): error set" [ -n "$(jget "$R" 'd["error"]')" ]
done

# the command cannot write to fd 3 itself
mkjob "$T/j" runner=junit command='["/bin/sh", "-c", "echo \"<testsuite><testcase name=\\\"forged\\\"/></testsuite>\" >&3"]' timeout=20
wtest "$T/j"
expect_eq "command writing fd 3: no counts" "0 0 0 0 0 null" "$(counts)"

# the command was not found
mkjob "$T/j" runner=junit command='["no-such-test-runner", "--all"]' timeout=20
wtest "$T/j"
expect_eq "missing command: counts" "0 0 0 0 0 null" "$(counts)"
expect_eq "missing command: exit_code 127" 127 "$(jget "$R" 'd["exit_code"]')"

# a symlink at $WARD_REPORT is not followed out of the sandbox's tmp
mkjob "$T/j" runner=junit command='["/bin/sh", "-c", "ln -s /etc/passwd \"$WARD_REPORT\""]' timeout=20
wtest "$T/j"
expect_eq "symlinked report: no counts" "0 0 0 0 0 null" "$(counts)"

# a command that hangs
mkjob "$T/j" runner=junit command='["/bin/sh", "-c", "sleep 3600"]' timeout=2
wtest "$T/j"
expect_eq "junit hang: timed_out" true "$(jget "$R" 'd["timed_out"]')"
expect_eq "junit hang: counts" "0 0 0 0 0 null" "$(counts)"
check "junit hang: bounded (${SECS}s)" awk -v s="$SECS" 'BEGIN{exit !(s < 12)}'
check_no_leftovers junit
