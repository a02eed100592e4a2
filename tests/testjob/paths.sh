#!/bin/bash
# Refused jobs: every bad path form (and too many / too large files, bad
# JSON) fails the whole job before anything is written or run: exit 125,
# error set, total 0.
. "$(dirname "$0")/testjob.bash"

T_OK='import unittest
class A(unittest.TestCase):
    def test_a(self): pass'

refused() { # NAME EXPECTED-IN-ERROR JOBFILE
	wtest "$3"
	expect_eq "$1: exit 125" 125 "$RC"
	expect_eq "$1: no counts" "0 0 0 0 0 null" "$(counts)"
	expect_contains "$1: error says why" "$(jget "$R" 'd["error"]' 2>/dev/null)" "$2"
	expect_eq "$1: nothing ran" "" "$(jget "$R" 'd["stdout"]+d["stderr"]' 2>/dev/null)"
}

# path forms, each in source_files and test_files
i=0
while IFS='|' read -r name json why; do
	for list in source_files test_files; do
		i=$((i + 1))
		if [ $list = source_files ]; then
			printf '{"source_files":[{"path":%s,"content":"x = 1"}],"test_files":[{"path":"test_ok.py"}]}' "$json" >"$T/j$i"
		else
			printf '{"test_files":[{"path":"test_ok.py"},{"path":%s,"content":"x = 1"}]}' "$json" >"$T/j$i"
		fi
		refused "$name in $list" "$why" "$T/j$i"
	done
done <<'EOF2'
empty path|""|empty
absolute path|"/etc/cron.d/evil"|absolute
dotdot|"../escape.py"|".."
dotdot in the middle|"a/../../escape.py"|".."
dot component|"./a.py"|"."
empty component|"a//b.py"|empty component
trailing slash|"a/"|empty component
NUL in the path|"a.py\u0000/../../etc/passwd"|NUL
non-string path|42|path
EOF2

long=$(/usr/bin/python3 -c 'print("/".join(["d" * 200] * 25))')
printf '{"test_files":[{"path":"test_ok.py"},{"path":"%s"}]}' "$long" >"$T/jlong"
refused "path over PATH_MAX" "PATH_MAX" "$T/jlong"

mkjob "$T/j" src:a=x src:a/b.py=y test:test_ok.py="$T_OK"
refused "file then a path through it" "directory" "$T/j"
mkjob "$T/j" src:a/b.py=y src:a=x test:test_ok.py="$T_OK"
refused "directory then a file of its name" "directory" "$T/j"
mkjob "$T/j" src:a.py=x src:a.py=y test:test_ok.py="$T_OK"
refused "duplicate path" "twice" "$T/j"
mkjob "$T/j" src:test_ok.py=x test:test_ok.py="$T_OK"
refused "duplicate across source and test files" "twice" "$T/j"

/usr/bin/python3 -c 'import json; print(json.dumps({"test_files": [{"path": "t%d.py" % i} for i in range(1001)]}))' >"$T/jmany"
refused "1001 files" "at most 1000" "$T/jmany"
/usr/bin/python3 -c 'import json; print(json.dumps({"test_files": [{"path": "test_%d.py" % i, "content": "#" * (6 << 20)} for i in range(3)]}))' >"$T/jbig"
refused "18 MiB of files" "larger than" "$T/jbig"

printf '{"test_files":[{"path":"test_ok.py"' >"$T/jbad"
refused "malformed JSON" "malformed JSON" "$T/jbad"
printf '{"runner":"mocha","test_files":[{"path":"t.py"}]}' >"$T/jbad"
refused "unknown runner" "runner" "$T/jbad"
printf '{"runner":"junit"}' >"$T/jbad"
refused "junit without a command" "command" "$T/jbad"
printf '{"test_files":[{"path":"test_ok.py"}],"limits":{"timeout_s":-1}}' >"$T/jbad"
refused "bad limits" "timeout" "$T/jbad"

# the job from stdin works like a file
mkjob "$T/j" test:test_ok.py="$T_OK" framework=unittest timeout=20
R=$(timeout -k 5 60 "$WARD" test - <"$T/j" 2>/dev/null); RC=$?
expect_eq "job from stdin: counts" "1 1 0 0 0 100.0" "$(counts)"
expect_eq "job from stdin: exit 0" 0 "$RC"

timeout 10 "$WARD" test >/dev/null 2>&1
expect_eq "no job: exit 125" 125 "$?"
timeout 10 "$WARD" test "$T/does-not-exist" >/dev/null 2>&1
expect_eq "missing job file: exit 125" 125 "$?"
check_no_leftovers paths
