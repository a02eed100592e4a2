#!/bin/bash
# Hanging tests: the time limit stops the run; tests that finished are
# counted, the one that hung is errored, and the job is never a pass.
. "$(dirname "$0")/testjob.bash"

cat >"$T/test_hang.py" <<'PY'
import time, unittest
class Hang(unittest.TestCase):
    def test_a_ok(self): pass
    def test_b_hangs(self): time.sleep(3600)
    def test_c_never_runs(self): pass
PY
mkjob "$T/j" test:test_hang.py=@"$T/test_hang.py" framework=unittest timeout=3
wtest "$T/j"
expect_eq "sleeping test: timed_out" true "$(jget "$R" 'd["timed_out"]')"
expect_eq "sleeping test: counts" "2 1 0 1 0 50.0" "$(counts)"
expect_eq "sleeping test: the hung test is errored" "test_hang.Hang.test_b_hangs=errored" \
	"$(jget "$R" '" ".join(t["name"]+"="+t["outcome"] for t in d["details"] if t["outcome"]!="passed")')"
expect_eq "sleeping test: exit 1" 1 "$RC"
expect_eq "sleeping test: exit_code 124" 124 "$(jget "$R" 'd["exit_code"]')"
check "sleeping test: bounded by the 3 s limit (${SECS}s)" awk -v s="$SECS" 'BEGIN{exit !(s < 15)}'

# A busy loop that ignores signals it can catch, in a child process too.
cat >"$T/test_spin.py" <<'PY'
import os, signal, subprocess, sys, unittest
class Spin(unittest.TestCase):
    def test_spin(self):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        subprocess.Popen([sys.executable, "-c", "import signal\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nwhile True: pass"])
        while True:
            pass
PY
mkjob "$T/j" test:test_spin.py=@"$T/test_spin.py" framework=unittest timeout=3
wtest "$T/j"
expect_eq "spinning test: timed_out" true "$(jget "$R" 'd["timed_out"]')"
expect_eq "spinning test: counts" "1 0 0 1 0 0.0" "$(counts)"
check "spinning test: bounded (${SECS}s)" awk -v s="$SECS" 'BEGIN{exit !(s < 15)}'

# Hanging at import time: the module's import is what hung.
mkjob "$T/j" test:test_import_hang.py='import time
time.sleep(3600)' framework=unittest timeout=3
wtest "$T/j"
expect_eq "import hang: timed_out" true "$(jget "$R" 'd["timed_out"]')"
expect_eq "import hang: counts" "1 0 0 1 0 0.0" "$(counts)"
expect_eq "import hang: the module is named" "test_import_hang.py" "$(jget "$R" 'd["details"][0]["name"]')"
check "import hang: bounded (${SECS}s)" awk -v s="$SECS" 'BEGIN{exit !(s < 15)}'

# A test that leaves a daemon behind does not keep the job alive.
mkjob "$T/j" test:test_daemon.py='import os, time, unittest
class D(unittest.TestCase):
    def test_fork(self):
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                time.sleep(3600)
            os._exit(0)
        os.wait()' framework=unittest timeout=10
wtest "$T/j"
expect_eq "daemon left behind: counts" "1 1 0 0 0 100.0" "$(counts)"
check "daemon left behind: job ends at once (${SECS}s)" awk -v s="$SECS" 'BEGIN{exit !(s < 8)}'
# The application level writes the files into a host directory: a timeout
# must remove it too (check_no_leftovers below looks for the marker).
mkjob "$T/j" test:test_hang.py=@"$T/test_hang.py" framework=unittest raw='{"isolation":"application","limits":{"timeout_s":2}}'
R=$(WARD_ALLOW_APPLICATION=1 timeout -k 5 60 "$WARD" test "$T/j" 2>/dev/null </dev/null)
expect_eq "application level hang: counts" "2 1 0 1 0 50.0" "$(counts)"
expect_eq "application level hang: timed_out" true "$(jget "$R" 'd["timed_out"]')"
check_no_leftovers hang
