#!/bin/bash
# Forged reports: a test that writes fake results everywhere it can think of
# changes no count.  Counts come only from the harness's numbered lines on
# the report channel.
. "$(dirname "$0")/testjob.bash"

cat >"$T/test_forge.py" <<'PY'
import glob, json, os, sys, unittest

FAKE_JSON = json.dumps({"total": 100, "passed": 100, "failed": 0, "errored": 0, "skipped": 0,
                        "pass_rate": 100.0, "error": "", "details": []})
FAKE_LINES = "".join(json.dumps(dict(l, seq=i)) + "\n" for i, l in enumerate([
    {"event": "hello", "version": 1, "framework": "unittest"},
    {"event": "test", "name": "fake", "outcome": "passed", "message": "", "duration_ms": 0},
    {"event": "end", "exit": 0}]))
FAKE_XML = '<testsuite><testcase name="fake1"/><testcase name="fake2"/></testsuite>'

class Forge(unittest.TestCase):
    def test_a_forge_everything(self):
        print("100 passed, 0 failed")
        print("OK")
        targets = ["_result.json", "result.json", "report.json", "junit.xml", ".ward-report",
                   "/tmp/_result.json", "/tmp/report.json", "/tmp/junit.xml", "/tmp/.ward-report/junit.xml",
                   "/work/_result.json", "/dev/shm/report.json"]
        for k in ("WARD_REPORT", "WARD_RESULT", "REPORT"):
            if os.environ.get(k):
                targets.append(os.environ[k])
        for t in targets:
            try:
                os.makedirs(os.path.dirname(t) or ".", exist_ok=True)
                with open(t, "w") as f:
                    f.write(FAKE_XML if t.endswith(".xml") else FAKE_JSON)
            except OSError:
                pass
        # fd 3 was the report channel when the harness started
        for data in (FAKE_LINES, FAKE_JSON):
            try:
                os.write(3, data.encode())
            except OSError:
                pass
        # replacing the harness's tools after the fact
        os.write = lambda fd, data: len(data)
        json.dumps = lambda *a, **k: FAKE_JSON

    def test_b_really_fails(self):
        self.assertEqual(1, 2)

    def test_c_really_passes(self):
        pass
PY
mkjob "$T/j" test:test_forge.py=@"$T/test_forge.py" framework=unittest timeout=20
wtest "$T/j"
expect_eq "forged files, fd 3, patched os.write: counts unchanged" "3 2 1 0 0 66.7" "$(counts)"
expect_eq "forged: no error" "" "$(jget "$R" 'd["error"]')"
expect_eq "forged: exit 1" 1 "$RC"

# A child process inherits neither fd 3 nor the hidden channel.
cat >"$T/test_child.py" <<'PY'
import os, subprocess, unittest
class Child(unittest.TestCase):
    def test_child_fds(self):
        # a shell started by the test has only 0, 1 and 2
        out = subprocess.run(["/bin/sh", "-c", "ls /proc/$$/fd"], capture_output=True, text=True, close_fds=False).stdout.split()
        self.assertEqual(sorted(out), ["0", "1", "2"])
        r = subprocess.run(["/bin/sh", "-c", "echo x >&3"], close_fds=False, stderr=subprocess.DEVNULL)
        self.assertNotEqual(r.returncode, 0)
PY
mkjob "$T/j" test:test_child.py=@"$T/test_child.py" framework=unittest timeout=20
wtest "$T/j"
expect_eq "child process cannot write fd 3" "1 1 0 0 0 100.0" "$(counts)"

# The documented limit: code in the test process can find the hidden
# channel through /proc/self/fd.  Lines it writes there break the harness's
# sequence, so the report is refused (error, total 0): never a forged pass.
cat >"$T/test_procfd.py" <<'PY'
import json, os, unittest
class ProcFd(unittest.TestCase):
    def test_a_inject(self):
        for fd in os.listdir("/proc/self/fd"):
            fd = int(fd)
            if fd <= 3:
                continue
            try:
                if os.readlink("/proc/self/fd/%d" % fd).startswith("pipe:"):
                    for seq in range(0, 40):
                        os.write(fd, (json.dumps({"seq": seq, "event": "test", "name": "forged%d" % seq,
                                                  "outcome": "passed"}) + "\n").encode())
            except OSError:
                pass
    def test_b_fails(self):
        self.fail("real failure")
PY
mkjob "$T/j" test:test_procfd.py=@"$T/test_procfd.py" framework=unittest timeout=20
wtest "$T/j"
p=$(jget "$R" 'd["passed"]')
e=$(jget "$R" 'd["error"]')
if [ "$p" -le 1 ] && { [ -n "$e" ] || [ "$(counts)" = "2 1 1 0 0 50.0" ]; }; then
	pass "injection through /proc/self/fd: no forged pass ($(counts); error: ${e:0:80})"
else
	fail "injection through /proc/self/fd" "counts $(counts), error [$e]"
fi
[ "$RC" -ne 0 ] && pass "injection: exit not 0" || fail "injection: exit not 0" "exit $RC"
check_no_leftovers forge
