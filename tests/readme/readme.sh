#!/bin/bash
# tests/readme/readme.sh — every example in README.md runs as pasted, top
# to bottom, in a scratch directory (issue 34: the first hour): the code
# blocks, extracted by extract.py, in one shell, with build/ on PATH as the
# README's first block puts it.  A block passes when none of its commands
# failed (or exited other than its "exits N" says); blocks marked "# not run
# here" are named on stderr, and there may be few of them.  Its server
# (`ward serve ... &`) runs on a port the kernel picked and is killed at
# the end.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/lib.sh"
S=$(mktemp -d /tmp/ward-readme.XXXXXX)
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 "$ROOT/tests/readme/extract.py" "$ROOT/README.md" "$PORT" "$S/try" >"$S/readme.bash" 2>"$S/left-out"
cat "$S/left-out" >&2
left=$(wc -l <"$S/left-out")
# (the builds, the images' downloads, the E2B SDK's, Docker's and the
# code interpreter's blocks: each names the test that runs it)
check "readme: few blocks left out ($left, each with its reason)" test "$left" -le 13
ran=$(grep -c '^__begin ' "$S/readme.bash")
check "readme: the blocks that run ($ran)" test "$ran" -ge 8
cat >"$S/run.bash" <<'EOF2'
__failed=""
__begin() { __n=$1; __first=$2; __failed=""; }
__fail() { [ -n "$__failed" ] || __failed="$1: $2"; }
__end() { if [ -z "$__failed" ]; then echo "PASS: readme: block $__n ($__first)" >&3; else echo "FAIL: readme: block $__n ($__first): $__failed" >&3; fi; }
trap '__fail "$BASH_COMMAND" "exited $?"' ERR
# the examples' servers go however the script ends (a failed block too)
trap 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null' EXIT
cd "$ROOT"
EOF2
cat "$S/readme.bash" >>"$S/run.bash"
echo 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null' >>"$S/run.bash"
# the examples' own output to a file: only the verdicts on stdout
(cd "$ROOT" && ROOT=$ROOT timeout -k 5 600 bash "$S/run.bash" 3>&1 >"$S/stdout" 2>"$S/stderr") </dev/null
rc=$?
[ "$rc" -eq 0 ] || fail "readme: the examples ran to the end" "exit $rc: $(tail -c 600 "$S/stderr")"
rm -rf "$S"
