#!/bin/bash
# tests/e2e/concurrency.sh — sandboxes running at once (SPEC §3): as root,
# each gets its own host uid from the range, none is root; nothing is left
# behind afterwards (cgroups, processes).
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/e2e.inc"
N=8
S=$T/shared; mkdir -p "$S"; chmod 1777 "$S"

# sleepers — "ARG PID" for every `sleep ARG` on the host, in one pass.
sleepers() {
	local p a
	for p in /proc/[0-9]*; do
		mapfile -d '' -t a 2>/dev/null <"$p/cmdline" || continue
		[ "${a[0]:-}" ] && [ "${a[0]##*/}" = sleep ] && echo "${a[1]:-} ${p#/proc/}"
	done
}
# wait_bounded PID SECONDS — wait for our child PID, SIGKILL it after SECONDS.
wait_bounded() {
	local n=$(($2 * 10))
	while kill -0 "$1" 2>/dev/null && [ "$n" -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
	kill -9 "$1" 2>/dev/null
	wait "$1"
}
# leftover_cgroups PID... — cgroup dirs still named after these ward pids
# (ward-PID-...; if the naming changes this check must follow it).
leftover_cgroups() {
	local p
	sleep 0.3
	for p in "$@"; do find /sys/fs/cgroup -maxdepth 5 -type d -name "ward-$p-*" 2>/dev/null; done | tr '\n' ' '
}

# Each sandbox drops a file named after itself in the shared dir, waits (at
# most 10 s) until all N are there — so all N certainly run at once — then
# sleeps 3 s under a unique marker while the host reads its uid.
base=3.$$
wards=""
for i in $(seq $N); do
	"$WARD" run --timeout 20 --bind "$S:/shared" --shell "
		touch /shared/s$i
		k=0; while [ \$(ls /shared | grep -c '^s') -lt $N ] && [ \$k -lt 100 ]; do sleep 0.1; k=\$((k+1)); done
		ls /shared | grep -c '^s'; sleep ${base}0$i" </dev/null >"$T/out$i" 2>"$T/err$i" &
	wards="$wards $!"
done
# Read each sandbox's host uid while all of them are alive.
declare -A huid=()
for _ in $(seq 100); do
	while read -r arg pid; do
		case "$arg" in "${base}0"[1-9]) ;; *) continue ;; esac
		i=${arg#"${base}0"}
		[ -n "${huid[$i]:-}" ] || huid[$i]=$(awk '/^Uid:/{print $3}' "/proc/$pid/status" 2>/dev/null)
	done < <(sleepers)
	[ "${#huid[@]}" -eq "$N" ] && break
	sleep 0.1
done
rcs=""
for p in $wards; do wait_bounded "$p" 40; rcs="$rcs $?"; done
expect_eq "all $N exit 0" "$(printf ' 0%.0s' $(seq $N))" "$rcs"
met=0; for i in $(seq $N); do [ "$(cat "$T/out$i")" = "$N" ] && met=$((met + 1)); done
expect_eq "all $N ran at the same time" "$N" "$met"
expect_eq "host uid of each of the $N seen" "$N" "${#huid[@]}"
uids=$(printf '%s\n' "${huid[@]}")
if [ -n "$uids" ] && ! printf '%s\n' "$uids" | grep -qx 0; then pass "no sandbox runs as host root"
else fail "no sandbox runs as host root" "uids: $(echo $uids)"; fi
if [ "$(id -u)" = 0 ]; then
	expect_eq "$N distinct host uids ($(echo $uids))" "$N" "$(printf '%s\n' "$uids" | sort -u | grep -c .)"
else
	expect_eq "unprivileged: the caller's own uid" "$(id -u)" "$(printf '%s\n' "$uids" | sort -u)"
fi
expect_eq "no cgroup left by the $N runs" "" "$(leftover_cgroups $wards)"
left=$(sleepers | awk -v b="${base}0" 'index($1, b) == 1 {print $2}')
expect_eq "no sandbox process left by the $N runs" "" "$(echo $left)"
for p in $left; do kill -9 "$p"; done

# Sequential runs reuse the range without leaking: 20 quick runs.
wards=""; bad=0
for i in $(seq 20); do
	"$WARD" run --timeout 5 -- true </dev/null >/dev/null 2>&1 &
	p=$!; wards="$wards $p"
	wait_bounded "$p" 15 || bad=$((bad + 1))
done
expect_eq "20 sequential runs succeed" 0 "$bad"
expect_eq "no cgroup left by 20 sequential runs" "" "$(leftover_cgroups $wards)"
