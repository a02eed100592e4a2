#!/bin/bash
# tests/e2e/unprivileged.sh — ward run by an ordinary user (SPEC §1, §3):
# the system level still runs through a user namespace, the sandbox is that
# user's uid on the host, and limits ward cannot put in a cgroup (no
# delegation here) fall back to rlimits and say so.  Needs root to switch
# to `nobody`; skipped (no checks) otherwise.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
[ "$(id -u)" = 0 ] && command -v runuser >/dev/null || exit 0
T=$(mktemp -d /tmp/ward-test.XXXXXX); trap 'rm -rf "$T"' EXIT
trap 'exit 143' TERM INT  # so that the EXIT trap cleans up on a timeout too
chmod 0755 "$T"
NOBODY=$(id -u nobody)
# wu ARG... — `ward run ARG...` as nobody, bounded; sets OUT, ERR, RC.
wu() { OUT=$(cd "$T" && timeout -k 2 "${WT:-30}" runuser -u nobody -- "$WARD" run "$@" 2>"$T/.err" </dev/null); RC=$?; ERR=$(cat "$T/.err"); }
sleepers() {
	local p a
	for p in /proc/[0-9]*; do
		mapfile -d '' -t a 2>/dev/null <"$p/cmdline" || continue
		[ "${a[0]:-}" ] && [ "${a[0]##*/}" = sleep ] && echo "${a[1]:-} ${p#/proc/}"
	done
}
if ! runuser -u nobody -- test -x "$WARD"; then fail "nobody can run $WARD" "path not reachable by nobody"; exit 0; fi

wu --timeout 10 --json --shell 'id -u; grep -E "^(CapEff|NoNewPrivs)" /proc/self/status | tr -s "\t" " "'
expect_eq "nobody: runs at system level" "0 system" "$RC $(jg "$OUT" 'd["isolation"]')"
expect_eq "nobody: non-root inside, no caps, nnp" "1000 CapEff: 0000000000000000 NoNewPrivs: 1" "$(jg "$OUT" '" ".join(d["stdout"].split("\n")).strip()')"
expect_eq "nobody: user is the caller's uid" "userns-uid-$NOBODY" "$(jg "$OUT" 'd["enforced"]["user"]')"
# Without cgroup delegation the limits fall back to rlimits, and say so.
expect_eq "nobody: memory falls back to rlimit" rlimit "$(jg "$OUT" 'd["enforced"]["memory"]')"
expect_eq "nobody: pids falls back to rlimit" rlimit "$(jg "$OUT" 'd["enforced"]["pids"]')"
expect_eq "nobody: socket buffers charged nowhere, and it says so" none "$(jg "$OUT" 'd["enforced"]["tcp_memory"]')"
# A loopback's TCP buffers are bounded by no rlimit: without a memory cgroup
# to charge them to, --net loopback is refused (tests/e2e/tcp_memory.sh).
wu --timeout 10 --net loopback -- /bin/true
expect_eq "nobody: --net loopback refused without a memory cgroup (exit 125)" 125 "$RC"
expect_contains "nobody: the refusal names the fix" "$ERR" "--net loopback needs a memory cgroup"
# --net allow has a loopback too (the egress proxy's connections): the same rule
wu --timeout 10 --net allow --allow-host pypi.test -- /bin/true
expect_eq "nobody: --net allow refused without a memory cgroup (exit 125)" 125 "$RC"
expect_contains "nobody: ... naming the mode and the fix" "$ERR" "--net allow needs a memory cgroup"

# On the host the sandbox is nobody.
M=4.$$$RANDOM
(cd "$T" && exec timeout -k 2 20 runuser -u nobody -- "$WARD" run --timeout 10 -- sleep "$M") </dev/null >/dev/null 2>&1 &
w=$!
hu=""
for _ in $(seq 50); do
	pid=$(sleepers | awk -v m="$M" '$1 == m {print $2; exit}')
	[ -n "$pid" ] && hu=$(awk '/^Uid:/{print $2" "$3" "$4" "$5}' "/proc/$pid/status") && break
	sleep 0.1
done
expect_eq "nobody: host uid of the sandbox is the caller's" "$NOBODY $NOBODY $NOBODY $NOBODY" "$hu"
[ -n "${pid:-}" ] && kill "$pid" 2>/dev/null
wait "$w" 2>/dev/null

# Limits still hold through rlimits: a capped fork loop and a capped memory bomb.
wu --timeout 20 --pids 16 --ro-bind "$HELPERS:/probe" -- /probe/probe_forks 200
k=$(printf '%s\n' "$OUT" | sed -n 's/^forks=\([0-9]*\).*/\1/p')
if [ -n "$k" ] && [ "$k" -lt 200 ]; then pass "nobody: --pids caps a fork loop ($k)"; else fail "nobody: --pids caps a fork loop" "out=[$OUT] err=[$ERR]"; fi
wu --timeout 20 --memory 64 --ro-bind "$HELPERS:/probe" -- /probe/probe_mem 1024
case "$OUT" in *allocated=1024*|"") fail "nobody: --memory 64 stops a 1 GiB bomb" "rc=$RC out=[$OUT] err=[$ERR]" ;;
*) pass "nobody: --memory 64 stops a 1 GiB bomb (rc=$RC, $OUT)" ;; esac
# Tree kill works without cgroups: a setsid daemon is gone after the command.
M=4.$$$RANDOM
wu --timeout 20 --shell "setsid sh -c 'sleep $M &'; k=0; while [ \$k -lt 200 ] && ! ps -eo args | grep -q '^sleep $M'; do sleep 0.05; k=\$((k + 1)); done; ps -eo args | grep -c '^sleep $M'"
expect_eq "nobody: daemon was running" 1 "$OUT"
for _ in $(seq 50); do  # up to 5 s for the kernel to finish the kill
	left=$(sleepers | awk -v m="$M" '$1 == m {print $2}')
	[ -z "$left" ] && break
	sleep 0.1
done
expect_eq "nobody: daemon gone after the command" "" "$(echo $left)"
for p in $left; do kill -9 "$p"; done
# A timeout too.
t0=$(date +%s%N)
wu --timeout 0.5 -- sleep 10
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
expect_eq "nobody: timeout -> 124" 124 "$RC"
if [ "$ms" -lt 5000 ]; then pass "nobody: timeout prompt ($ms ms)"; else fail "nobody: timeout prompt" "$ms ms"; fi
# A workdir of nobody's: writes come back as nobody's.
W=$T/w; mkdir "$W"; chown nobody "$W"
wu --timeout 10 --workdir "$W" --shell 'echo x >f && echo ok'
expect_eq "nobody: workdir writable" ok "$OUT"
expect_eq "nobody: files come back as nobody's" "$NOBODY" "$(stat -c %u "$W/f" 2>&1)"
# nobody cannot bind what nobody cannot read.
S=$T/secret; mkdir -m 0700 "$S"; echo s >"$S/f"
wu --timeout 10 --ro-bind "$S:/s" -- cat /s/f
if [ "$RC" -ne 0 ] && [ "$OUT" != s ]; then pass "nobody: cannot bind a root-only dir (rc=$RC)"; else fail "nobody: cannot bind a root-only dir" "rc=$RC out=[$OUT]"; fi
