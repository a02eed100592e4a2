#!/bin/bash
# tests/e2e/setup_errors.sh — a failure in the command's last steps before
# execve (its rlimits, above all: a limit above the hard limit ward runs
# under cannot be set from inside the sandbox) is ward's failure, not the
# program's: status "error", exit 125, and an error that names the limit,
# the hard limit and the fix.  A program that itself exits 125 (or cannot be
# found) stays the program's: "nonzero", error empty.  Each case lowers the
# hard limit in a subshell, so it does not depend on the host's.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/e2e.inc"

# setup_err NAME ULIMIT-ARGS -- WARD-RUN-ARGS... — checks status, exit
# code, exit status and that the error contains each of the NEEDLES set
# in the array NEED.
setup_err() {
	local name=$1 ul=$2; shift 2
	[ "$1" = -- ] && shift
	# shellcheck disable=SC2086
	OUT=$( (ulimit $ul && exec timeout -k 2 30 "$WARD" run --json --timeout 10 "$@" -- sh -c 'echo RAN') \
		2>"$T/err" </dev/null)
	RC=$?
	expect_eq "$name: status error, exit 125 (ward's failure, not the program's)" "error 125 125" \
		"$(jg "$OUT" 'd["status"]') $(jg "$OUT" 'd["exit_code"]') $RC"
	local e n
	e=$(jg "$OUT" 'd["error"]')
	for n in "${NEED[@]}"; do expect_contains "$name: the error says [$n]" "$e" "$n"; done
	expect_eq "$name: nothing ran" "" "$(jg "$OUT" 'd["stdout"]')"
	expect_not_contains "$name: the reason is not on the program's stderr" "$(jg "$OUT" 'd["stderr"]')" "setup failed"
}

NEED=("open-files limit" "--nofile" "of 400 " "hard limit of 200" "ulimit -Hn" "raise")
setup_err "--nofile above the hard limit" "-n 200" -- --nofile 400
NEED=("process limit" "--pids" "of 2000 " "hard limit of 1000" "ulimit -Hu")
setup_err "--pids above the hard limit" "-u 1000" -- --pids 2000
NEED=("file-size limit" "--fsize" "of 2 MB" "hard limit of 1 MB" "ulimit -Hf")
setup_err "--fsize above the hard limit" "-f 1024" -- --fsize 2
NEED=("CPU-time limit" "of 10 s" "hard limit of 5 s" "ulimit -Ht")
setup_err "a CPU limit (the timeout) above the hard limit" "-t 5" -- --timeout 10
NEED=("open-files limit" "hard limit of 200")
WARD_ALLOW_APPLICATION=1 setup_err "application level: --nofile above the hard limit" "-n 200" -- \
	--isolation application --nofile 400

# The values from the report: the largest --nofile and --pids, above this
# host's own hard limits (when they are below them).
for opt in nofile:n pids:u; do
	hard=$(ulimit -H"${opt#*:}")
	if [ "$hard" != unlimited ] && [ "$hard" -lt 1048576 ]; then
		NEED=("--${opt%:*}" "of 1048576 " "hard limit of $hard")
		setup_err "--${opt%:*} 1048576 on this host (hard limit $hard)" "-H${opt#*:} $hard" -- "--${opt%:*}" 1048576
	fi
done

# Within the hard limit it runs.
OUT=$( (ulimit -n 200 && exec timeout -k 2 30 "$WARD" run --json --timeout 10 --nofile 200 -- sh -c 'ulimit -n') </dev/null 2>&1)
expect_eq "--nofile at the hard limit runs" "ok 200" "$(jg "$OUT" 'd["status"]') $(jg "$OUT" 'd["stdout"].strip()')"

# The program's own 125 (even one that prints ward's words) and a program
# that is not there stay the program's.
wr --json --timeout 10 -- sh -c 'echo "ward: sandbox setup failed: not really" >&2; exit 125'
expect_eq "a program's own exit 125: nonzero, error empty" "nonzero 125 125 []" \
	"$(jg "$OUT" 'd["status"]') $(jg "$OUT" 'd["exit_code"]') $RC [$(jg "$OUT" 'd["error"]')]"
wr --json --timeout 10 -- /no/such/program
expect_eq "a program that is not there: nonzero 127, error empty" "nonzero 127 []" \
	"$(jg "$OUT" 'd["status"]') $(jg "$OUT" 'd["exit_code"]') [$(jg "$OUT" 'd["error"]')]"
