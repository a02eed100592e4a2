# tests/lib.sh — sourced by every end-to-end test script.
#
# A script reports each check as one line, "PASS: name" or "FAIL: name: why";
# tests/run counts them.  Every hostile test must stay bounded even if the
# sandbox does nothing (a cap on forks, memory, disk, time), and may only
# clean up what it made itself (kill by pid, never by name).
set -u
ROOT=${ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
WARD=${WARD:-$ROOT/build/ward}
HELPERS=${HELPERS:-$ROOT/build/helpers}
export WARD ROOT HELPERS

pass() { echo "PASS: $1"; }
fail() { echo "FAIL: $1${2:+: $2}"; }

# check NAME CMD... — passes when CMD exits 0.
check() {
	local name=$1; shift
	if "$@"; then pass "$name"; else fail "$name" "command failed: $*"; fi
}

# expect_eq NAME EXPECTED ACTUAL
expect_eq() {
	if [ "$2" = "$3" ]; then pass "$1"; else fail "$1" "expected [$2], got [$3]"; fi
}

# expect_contains NAME HAYSTACK NEEDLE
expect_contains() {
	case "$2" in *"$3"*) pass "$1" ;; *) fail "$1" "[$3] not in [$(printf %s "$2" | head -c 400)]" ;; esac
}

# expect_not_contains NAME HAYSTACK NEEDLE
expect_not_contains() {
	case "$2" in *"$3"*) fail "$1" "[$3] found in [$(printf %s "$2" | head -c 400)]" ;; *) pass "$1" ;; esac
}

# marker_pids M — host pids of processes running `sleep M` (a marker that
# a test's sandbox starts, to find out whether it outlived the run).
marker_pids() {
	local p a
	for p in /proc/[0-9]*; do
		mapfile -d '' -t a 2>/dev/null <"$p/cmdline" || continue
		[ "${a[0]:-}" ] && [ "${a[0]##*/}" = sleep ] && [ "${a[1]:-}" = "$1" ] && echo "${p#/proc/}"
	done
}

# stop_pids PID... — SIGTERM to each (ours: started by the script), then up
# to 5 s each to end before a SIGKILL.
stop_pids() {
	local p _
	for p in "$@"; do kill -TERM "$p" 2>/dev/null; done
	for p in "$@"; do
		for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$p" 2>/dev/null
	done
}

# jget JSON EXPR — a field of a JSON document, printed by python3 (json.dumps
# for non-strings).  EXPR is python applied to `d`, e.g. 'd["status"]'.
jget() {
	/usr/bin/python3 -c 'import json,sys
d=json.loads(sys.argv[1])
v=eval(sys.argv[2])
print(v if isinstance(v,str) else json.dumps(v))' "$1" "$2"
}

# jg JSON EXPR — like jget, but the JSON goes through stdin (no argv size
# limit), and a one-line note comes back when the output is not JSON.
jg() {
	printf '%s' "$1" | /usr/bin/python3 -c 'import json,sys
try: d=json.load(sys.stdin)
except Exception as e: print("<not JSON: %s>" % str(e)[:80]); sys.exit()
try: v=eval(sys.argv[1])
except Exception as e: print("<%s: %s>" % (type(e).__name__, str(e)[:80])); sys.exit()
print(v if isinstance(v,str) else json.dumps(v))' "$2"
}

# listening_addr LOG PID [TRIES] — the address a `ward serve` started with
# --log LOG says it listens on, once it has (TRIES checks 0.1 s apart,
# default 600); empty when PID died first or it never did.
listening_addr() {
	local log=$1 pid=$2 n=${3:-600} addr="" _
	for _ in $(seq "$n"); do
		addr=$(sed -n 's/.*"event":"listening","message":"\([^ ]*\) .*/\1/p' "$log" 2>/dev/null | head -1)
		[ -n "$addr" ] && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	printf '%s' "$addr"
}
