#!/bin/bash
# The python runner: outcomes, counts, honest errors, the environment, and
# both frameworks (unittest always; pytest when python3-pytest is installed).
. "$(dirname "$0")/testjob.bash"

cat >"$T/solution.py" <<'PY'
def add(a, b):
    return a + b
PY

# --- all pass
cat >"$T/test_ok.py" <<'PY'
import unittest
from solution import add
class T(unittest.TestCase):
    def test_one(self): self.assertEqual(add(1, 2), 3)
    def test_two(self): self.assertEqual(add(2, 2), 4)
    def test_three(self): self.assertEqual(add(0, 0), 0)
PY
mkjob "$T/j" src:solution.py=@"$T/solution.py" test:test_ok.py=@"$T/test_ok.py" framework=unittest timeout=20
wtest "$T/j"
expect_eq "all pass: counts" "3 3 0 0 0 100.0" "$(counts)"
expect_eq "all pass: exit 0" 0 "$RC"
expect_eq "all pass: no error" "" "$(jget "$R" 'd["error"]')"
expect_eq "all pass: timed_out false" false "$(jget "$R" 'd["timed_out"]')"
expect_eq "all pass: details" "passed passed passed" "$(jget "$R" '" ".join(t["outcome"] for t in d["details"])')"
expect_eq "all pass: keys as in SPEC" "total passed failed errored skipped pass_rate timed_out exit_code stdout stderr error details" \
	"$(jget "$R" '" ".join(d.keys())')"
expect_eq "all pass: detail keys" "name outcome message duration_ms" "$(jget "$R" '" ".join(d["details"][0].keys())')"

# --- pass, fail, error, skip
cat >"$T/test_mixed.py" <<'PY'
import unittest
from solution import add
class Mixed(unittest.TestCase):
    def test_a_pass(self): self.assertEqual(add(1, 2), 3)
    def test_b_fail(self): self.assertEqual(add(1, 2), 4)
    def test_c_error(self): raise RuntimeError("boom")
    @unittest.skip("not today")
    def test_d_skip(self): pass
PY
mkjob "$T/j" src:solution.py=@"$T/solution.py" test:test_mixed.py=@"$T/test_mixed.py" framework=unittest timeout=20
wtest "$T/j"
expect_eq "mixed: counts" "4 1 1 1 1 25.0" "$(counts)"
expect_eq "mixed: exit 1" 1 "$RC"
expect_eq "mixed: exit_code of the run" 1 "$(jget "$R" 'd["exit_code"]')"
expect_eq "mixed: outcomes by name" "test_mixed.Mixed.test_a_pass=passed test_mixed.Mixed.test_b_fail=failed test_mixed.Mixed.test_c_error=errored test_mixed.Mixed.test_d_skip=skipped" \
	"$(jget "$R" '" ".join(t["name"]+"="+t["outcome"] for t in d["details"])')"
expect_contains "mixed: failure message" "$(jget "$R" 'd["details"][1]["message"]')" "AssertionError: 3 != 4"
expect_contains "mixed: skip reason" "$(jget "$R" 'd["details"][3]["message"]')" "not today"

# --- an import error is an error, not a pass, and other modules still run
mkjob "$T/j" src:solution.py=@"$T/solution.py" test:test_ok.py=@"$T/test_ok.py" \
	test:test_broken.py='import no_such_module_here' framework=unittest timeout=20
wtest "$T/j"
expect_eq "import error: counts" "4 3 0 1 0 75.0" "$(counts)"
expect_contains "import error: named" "$(jget "$R" '[t["message"] for t in d["details"] if t["outcome"]=="errored"][0]')" "No module named 'no_such_module_here'"
expect_eq "import error: exit 1" 1 "$RC"

# --- a syntax error in the solution fails every test that imports it
mkjob "$T/j" src:solution.py='def add(a, b) return' test:test_ok.py=@"$T/test_ok.py" framework=unittest timeout=20
wtest "$T/j"
expect_eq "syntax error: counts" "1 0 0 1 0 0.0" "$(counts)"

# --- stdout that claims success changes nothing
cat >"$T/test_liar.py" <<'PY'
import sys, unittest
print("100 passed, 0 failed")
print("OK")
print("Ran 100 tests in 0.001s\n\nOK", file=sys.stderr)
class Liar(unittest.TestCase):
    def test_fails(self):
        print("===== 100 passed in 0.01s =====")
        self.fail("really failed")
PY
mkjob "$T/j" test:test_liar.py=@"$T/test_liar.py" framework=unittest timeout=20
wtest "$T/j"
expect_eq "lying stdout: counts" "1 0 1 0 0 0.0" "$(counts)"
expect_contains "lying stdout: stdout kept for debugging" "$(jget "$R" 'd["stdout"]')" "100 passed, 0 failed"
expect_eq "lying stdout: exit 1" 1 "$RC"

# --- a module with no tests is no pass
mkjob "$T/j" test:test_empty.py='x = 1' framework=unittest timeout=20
wtest "$T/j"
expect_eq "no tests: counts" "0 0 0 0 0 null" "$(counts)"
expect_contains "no tests: error" "$(jget "$R" 'd["error"]')" "no tests ran"
expect_eq "no tests: exit 1" 1 "$RC"

# --- a test that kills the process: no end line, no report
cat >"$T/test_exit.py" <<'PY'
import os, unittest
class Exit(unittest.TestCase):
    def test_a(self): pass
    def test_b_exit(self): os._exit(0)
    def test_c(self): pass
PY
mkjob "$T/j" test:test_exit.py=@"$T/test_exit.py" framework=unittest timeout=20
wtest "$T/j"
expect_eq "os._exit: counts" "0 0 0 0 0 null" "$(counts)"
expect_contains "os._exit: error" "$(jget "$R" 'd["error"]')" "ended early"
expect_eq "os._exit: exit 1" 1 "$RC"

# --- sys.exit inside a test is that test's error
mkjob "$T/j" test:test_sysexit.py='import sys, unittest
class E(unittest.TestCase):
    def test_exit(self): sys.exit(0)
    def test_ok(self): pass' framework=unittest timeout=20
wtest "$T/j"
expect_eq "sys.exit: counts" "2 1 0 1 0 50.0" "$(counts)"

# --- deterministic environment, no network, nothing of the host's
cat >"$T/test_env.py" <<'PY'
import os, socket, unittest
class Env(unittest.TestCase):
    def test_tz(self): self.assertEqual(os.environ.get("TZ"), "UTC")
    def test_hashseed(self): self.assertEqual(os.environ.get("PYTHONHASHSEED"), "0")
    def test_lang(self): self.assertEqual(os.environ.get("LANG"), "C.UTF-8")
    def test_bytecode(self): self.assertEqual(os.environ.get("PYTHONDONTWRITEBYTECODE"), "1")
    def test_no_ward_vars(self): self.assertEqual([k for k in os.environ if k.startswith("WARD")], [])
    def test_no_host_env(self): self.assertNotIn("WARD_TEST_SECRET", os.environ)
    def test_cwd(self): self.assertEqual(os.getcwd(), "/work")
    def test_no_network(self):
        s = socket.socket()
        s.settimeout(2)
        with self.assertRaises(OSError):
            s.connect(("127.0.0.1", 9))
        s.close()
PY
mkjob "$T/j" test:test_env.py=@"$T/test_env.py" framework=unittest timeout=20
WARD_TEST_SECRET=leak wtest "$T/j"
expect_eq "environment: counts" "8 8 0 0 0 100.0" "$(counts)"
[ "$(jget "$R" 'd["passed"]')" = 8 ] || echo "# env details: $(jget "$R" '[(t["name"],t["message"][-200:]) for t in d["details"] if t["outcome"]!="passed"]')"

mkjob "$T/j" test:test_tz.py='import os, unittest
class Env(unittest.TestCase):
    def test_tz(self): self.assertEqual(os.environ.get("TZ"), "Europe/Paris")' env:TZ=Europe/Paris framework=unittest timeout=20
wtest "$T/j"
expect_eq "job env overrides the default" "1 1 0 0 0 100.0" "$(counts)"

# --- files in subdirectories; helper modules next to the tests
mkjob "$T/j" src:pkg/__init__.py= src:pkg/calc.py='def mul(a, b): return a * b' \
	test:tests/helpers.py='TWO = 2' \
	test:tests/test_calc.py='import unittest
from pkg.calc import mul
from helpers import TWO
class C(unittest.TestCase):
    def test_mul(self): self.assertEqual(mul(TWO, 3), 6)' framework=unittest timeout=20
wtest "$T/j"
expect_eq "subdirectories: counts" "1 1 0 0 0 100.0" "$(counts)"

# --- a job's json.py / unittest.py / random.py cannot break the harness
mkjob "$T/j" src:json.py='raise SystemExit("shadowed json")' src:random.py='raise SystemExit("shadowed random")' \
	src:unittest.py='raise SystemExit("shadowed unittest")' test:test_ok.py=@"$T/test_ok.py" \
	src:solution.py=@"$T/solution.py" framework=unittest timeout=20
wtest "$T/j"
expect_eq "shadowing modules: counts" "3 3 0 0 0 100.0" "$(counts)"

# --- pytest
if have_pytest; then
	mkjob "$T/j" src:solution.py=@"$T/solution.py" test:test_mixed.py=@"$T/test_mixed.py" timeout=30
	wtest "$T/j"
	expect_eq "pytest (auto): counts" "4 1 2 0 1 25.0" "$(counts)"
	expect_eq "pytest (auto): node ids" "test_mixed.py::Mixed::test_a_pass" "$(jget "$R" 'd["details"][0]["name"]')"
	cat >"$T/test_py.py" <<'PY'
import pytest
from solution import add
def test_pass(): assert add(1, 2) == 3
def test_fail(): assert add(1, 2) == 4
@pytest.fixture
def broken(): raise RuntimeError("fixture broke")
def test_error(broken): pass
@pytest.mark.skip(reason="later")
def test_skip(): pass
@pytest.mark.parametrize("a", [1, 2, 3])
def test_param(a): assert a < 3
PY
	mkjob "$T/j" src:solution.py=@"$T/solution.py" test:test_py.py=@"$T/test_py.py" \
		test:test_broken.py='import no_such_module_here' framework=pytest timeout=30
	wtest "$T/j"
	expect_eq "pytest: counts (collection error errored)" "8 3 2 2 1 37.5" "$(counts)"
	expect_contains "pytest: fixture error is errored" "$(jget "$R" '[t["outcome"] for t in d["details"] if t["name"].endswith("test_error")]')" "errored"
	expect_eq "pytest: exit 1" 1 "$RC"
	mkjob "$T/j" src:solution.py=@"$T/solution.py" test:test_liar.py=@"$T/test_liar.py" framework=pytest timeout=30
	wtest "$T/j"
	expect_eq "pytest: lying stdout" "1 0 1 0 0 0.0" "$(counts)"
	mkjob "$T/j" test:test_none.py='x = 1' framework=pytest timeout=30
	wtest "$T/j"
	expect_eq "pytest: no tests is no pass" "0 0 0 0 0 null" "$(counts)"
	expect_contains "pytest: no tests error" "$(jget "$R" 'd["error"]')" "no tests"
else
	echo "# pytest is not installed (python3-pytest): the pytest path is not tested here"
fi
# --- the application level: only when the operator opts in
mkjob "$T/j" src:solution.py=@"$T/solution.py" test:test_mixed.py=@"$T/test_mixed.py" framework=unittest \
	raw='{"isolation": "application", "limits": {"timeout_s": 20}}'
wtest "$T/j"
expect_eq "application level refused by default: exit 125" 125 "$RC"
expect_eq "application level refused by default: no counts" "0 0 0 0 0 null" "$(counts)"
R=$(WARD_ALLOW_APPLICATION=1 timeout -k 5 60 "$WARD" test "$T/j" 2>/dev/null </dev/null)
expect_eq "application level when allowed: counts" "4 1 1 1 1 25.0" "$(counts)"
check_no_leftovers python
