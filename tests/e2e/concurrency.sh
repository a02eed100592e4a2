#!/bin/bash
# tests/e2e/concurrency.sh — sandboxes running at once (SPEC §3): as root,
# each gets its own host uid from the range, none is root; nothing is left
# behind afterwards (cgroups, lock files, processes).
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
# (Not T=$(mktmp): its EXIT trap fires as the $(...) subshell exits.)
T=$(mktemp -d /tmp/ward-test.XXXXXX); trap 'rm -rf "$T"' EXIT
chmod 0755 "$T"  # binds below it must be reachable by the sandbox uid
N=8
S=$T/shared; mkdir -p "$S"; chmod 1777 "$S"

# ward_state — ward's footprint on the host: cgroup dirs and files named
# *ward* in the usual state places (test dirs excluded).  Others may run
# ward on this host at the same time: an entry that names the pid of a
# live process (ward-PID-...) is theirs, not a leak.
ward_state() {
	{
		find /sys/fs/cgroup -maxdepth 5 -type d \( -iname '*ward*' -o -path '*/ward/*' \) 2>/dev/null
		find /run /var/run /var/lib /var/lock /dev/shm /tmp -maxdepth 3 -iname '*ward*' \
			-not -path '/tmp/ward-test.*' -not -path '/tmp/ward-probe.*' 2>/dev/null
	} | sort | while read -r e; do
		pid=$(printf '%s' "${e##*/}" | sed -n 's/^ward-\([0-9][0-9]*\)-.*/\1/p')
		[ -n "$pid" ] && [ -d "/proc/$pid" ] && continue
		echo "$e"
	done
}
before=$(ward_state)

marker_pids() {
	local p a
	for p in /proc/[0-9]*; do
		mapfile -d '' -t a 2>/dev/null <"$p/cmdline" || continue
		[ "${a[0]:-}" ] && [ "${a[0]##*/}" = sleep ] && [ "${a[1]:-}" = "$1" ] && echo "${p#/proc/}"
	done
}
# Each sandbox drops a file named after itself in the shared dir, waits (at
# most 10 s) until all N are there — so all N certainly run at once — then
# sleeps ~1.5 s under a unique marker while the host reads its uid.
base=1.5$$
for i in $(seq $N); do
	timeout -k 2 30 "$WARD" run --timeout 20 --bind "$S:/shared" --shell "
		touch /shared/s$i
		k=0; while [ \$(ls /shared | grep -c '^s') -lt $N ] && [ \$k -lt 100 ]; do sleep 0.1; k=\$((k+1)); done
		ls /shared | grep -c '^s'; sleep ${base}0$i" </dev/null >"$T/out$i" 2>"$T/err$i" &
	pids="${pids:-} $!"
done
# Read each sandbox's host uid while all of them are alive.
declare -A huid
for _ in $(seq 80); do
	for i in $(seq $N); do
		[ -n "${huid[$i]:-}" ] && continue
		p=$(marker_pids "${base}0$i" | head -1)
		[ -n "$p" ] && huid[$i]=$(awk '/^Uid:/{print $3}' "/proc/$p/status" 2>/dev/null)
	done
	[ "${#huid[@]}" -eq "$N" ] && break
	sleep 0.1
done
rcs=""
for p in $pids; do wait "$p"; rcs="$rcs $?"; done
expect_eq "all $N exit 0" "$(printf ' 0%.0s' $(seq $N))" "$rcs"
met=0; for i in $(seq $N); do [ "$(cat "$T/out$i")" = "$N" ] && met=$((met + 1)); done
expect_eq "all $N ran at the same time" "$N" "$met"
expect_eq "host uid of each of the $N seen" "$N" "${#huid[@]}"
uids=$(printf '%s\n' "${huid[@]}")
expect_eq "no sandbox runs as host root" 0 "$(printf '%s\n' "$uids" | grep -cx 0)"
if [ "$(id -u)" = 0 ]; then
	expect_eq "$N distinct host uids ($(echo $uids))" "$N" "$(printf '%s\n' "$uids" | sort -u | grep -c .)"
else
	expect_eq "unprivileged: the caller's own uid" "$(id -u)" "$(printf '%s\n' "$uids" | sort -u)"
fi

# Nothing left behind.
sleep 0.5
after=$(ward_state)
expect_eq "no leftover cgroups or lock files" "" "$(comm -13 <(printf '%s\n' "$before") <(printf '%s\n' "$after") | grep .)"

# Sequential runs reuse the range without leaking: 20 quick runs, then the
# state is unchanged too.
for i in $(seq 20); do timeout 10 "$WARD" run --timeout 5 -- true </dev/null >/dev/null 2>&1 || echo "run $i failed" >>"$T/seq"; done
check "20 sequential runs succeed" test ! -e "$T/seq"
after=$(ward_state)
expect_eq "no leftovers after 20 runs" "" "$(comm -13 <(printf '%s\n' "$before") <(printf '%s\n' "$after") | grep .)"
