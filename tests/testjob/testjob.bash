# tests/testjob/testjob.bash — helpers for the test-job scripts (sourced;
# not a test script itself: tests/run only runs *.sh).
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
# (not lib.sh's mktmp: called as $(mktmp) its EXIT trap runs in the
# command substitution's subshell and removes the directory at once)
T=$(mktemp -d /tmp/ward-testjob.XXXXXX)
trap 'rm -rf "$T"' EXIT
MARK=wardmark$$x$RANDOM

# mkjob OUT ARG... — write a job document to OUT.  ARGs:
#   src:PATH=@FILE | src:PATH=TEXT   a source file (from FILE or inline)
#   test:PATH=@FILE | test:PATH=TEXT a test file
#   runner=R framework=F timeout=S   the job's fields
#   env:K=V                          an env entry
#   command=JSON                     the junit command, a JSON array
#   raw=JSON                         merge this object into the job last
# Every job also gets a marker file, so that a leftover workdir on the host
# can be found by name (see check_no_leftovers).
mkjob() {
	local out=$1; shift
	/usr/bin/python3 - "$MARK" "$@" >"$out" <<'PY'
import json, sys
mark, args = sys.argv[1], sys.argv[2:]
job = {"source_files": [{"path": mark + ".txt", "content": "marker"}], "test_files": []}
for a in args:
    k, _, v = a.partition("=")
    if k.startswith(("src:", "test:")):
        kind, path = k.split(":", 1)
        content = open(v[1:]).read() if v.startswith("@") else v
        job["source_files" if kind == "src" else "test_files"].append({"path": path, "content": content})
    elif k.startswith("env:"):
        job.setdefault("env", {})[k[4:]] = v
    elif k == "timeout":
        job.setdefault("limits", {})["timeout_s"] = float(v)
    elif k == "command":
        job["command"] = json.loads(v)
    elif k == "raw":
        job.update(json.loads(v))
    else:
        job[k] = v
json.dump(job, sys.stdout)
PY
}

# wtest JOB — run `ward test JOB`; sets R (the report), RC (exit status),
# ERR (ward's stderr) and SECS (wall seconds).  Bounded even if ward hangs.
wtest() {
	local t0=$(date +%s.%N)
	R=$(timeout -k 5 120 "$WARD" test "$1" 2>"$T/stderr" </dev/null)
	RC=$?
	ERR=$(cat "$T/stderr")
	SECS=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
}

# counts — "total passed failed errored skipped pass_rate" of R
counts() {
	jget "$R" '" ".join(str(d[k]) if d[k] is not None else "null" for k in ("total","passed","failed","errored","skipped","pass_rate"))' 2>/dev/null || echo "unparsable"
}

# check_no_leftovers NAME — no file or directory named after this script's
# marker is left in the host's temp directories.
check_no_leftovers() {
	local left
	left=$(find /tmp /var/tmp /dev/shm /run -maxdepth 8 -name "$MARK*" 2>/dev/null | head -3)
	expect_eq "$1: no workdir left on the host" "" "$left"
}

# The pytest path needs python3-pytest in the sandbox's /usr (the host's).
have_pytest() { /usr/bin/python3 -c 'import pytest' 2>/dev/null; }
