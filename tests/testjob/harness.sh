#!/bin/bash
# The python harness on its own, outside any sandbox: python3 -S hides
# dist-packages (and so pytest), which exercises the unittest fallback of
# "auto" and the refusal of "pytest" when it is missing.  The report lines
# go to a file on fd 3, as ward's pipe would take them.
. "$(dirname "$0")/../lib.sh"
H=$ROOT/src/testjob/ward_harness.py
D=$(mktemp -d /tmp/ward-harness.XXXXXX)
trap 'rm -rf "$D"' EXIT
cd "$D" || exit 1
cat >test_a.py <<'PY'
import os, unittest
class A(unittest.TestCase):
    def test_ok(self): pass
    def test_bad(self): self.assertTrue(False)
    def test_fd3_is_devnull(self): self.assertEqual(os.readlink("/proc/self/fd/3"), "/dev/null")
PY
events() { /usr/bin/python3 -c 'import json,sys
print(" ".join(json.loads(l).get("outcome") or json.loads(l)["event"] for l in open(sys.argv[1])))' "$1"; }

timeout 30 /usr/bin/python3 -S -s -B -c "$(cat "$H")" auto test_a.py 3>rep1 >/dev/null 2>&1
expect_eq "auto without pytest: unittest" unittest "$(head -1 rep1 | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["framework"])')"
expect_eq "auto without pytest: events" "hello start done start failed start passed start passed end" "$(events rep1)"

timeout 30 /usr/bin/python3 -S -s -B -c "$(cat "$H")" pytest test_a.py 3>rep2 >/dev/null 2>&1
expect_eq "pytest asked, missing: exit 125" 125 "$?"
expect_eq "pytest asked, missing: error event" "hello error end" "$(events rep2)"

timeout 30 /usr/bin/python3 -S -s -B -c "$(cat "$H")" unittest 3>rep3 >/dev/null 2>&1
expect_eq "no test modules: error event" "hello error end" "$(events rep3)"

# without a channel at all the harness still runs the tests (ward then says
# "no report")
timeout 30 /usr/bin/python3 -S -s -B -c "$(cat "$H")" unittest test_a.py 3>&- >/dev/null 2>&1
expect_eq "no channel: runs, exit 1" 1 "$?"
