#!/bin/bash
# ward serve's spawner helpers (src/system/spawner.c): small processes, forked
# before the server has threads or tokens, that clone the sandboxes of
# plain requests.  They hold nothing of the server's, a PID 1 they clone is
# still the server's child and holds no copy of its tokens, a helper that
# dies is replaced by the server cloning for itself, and they go with the
# server.
. "$(dirname "$0")/lib.bash"

spawners() { ps -o pid=,comm= --ppid "$1" | awk '$2 == "ward-spawner" {print $1}' | sort -n | tr '\n' ' '; }
inits() { ps -o pid=,comm= --ppid "$1" | awk '$2 == "ward-init" {print $1}' | sort -n | tr '\n' ' '; }
zombies() { ps -o stat= --ppid "$1" | grep -c '^Z'; }
ok_run() { # ok_run LABEL JSON — the run answers 200 with status ok
	local r
	r=$(post_exec "$2")
	expect_eq "$1" "200 ok" "$(code_of "$r") $(jg "$(body_of "$r")" 'd["status"]')"
}
# count_in_memory PID STRING — how many times STRING is in PID's memory
count_in_memory() {
	python3 - "$1" "$2" <<'PY'
import re, sys
pid, needle = sys.argv[1], sys.argv[2].encode()
n = 0
with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
    for line in maps:
        addr, perms = line.split()[:2]
        if not perms.startswith("r") or line.rstrip().endswith("[vvar]"):
            continue
        lo, hi = (int(x, 16) for x in addr.split("-"))
        if hi - lo > 256 << 20:   # a sanitizer's shadow: no heap or stack
            continue
        try:
            mem.seek(lo)
            n += mem.read(hi - lo).count(needle)
        except OSError:
            pass
print(n)
PY
}

"$WARD" --spawner-helper 3</dev/null >/dev/null 2>"$SERVE_TMP/helper.err"
expect_eq "spawner: ward --spawner-helper without ward serve's socket exits 125" 125 $?
expect_contains "spawner: ... saying it is internal" "$(cat "$SERVE_TMP/helper.err")" "internal to ward serve"

"$WARD" serve --spawners 5 --listen 127.0.0.1:0 >/dev/null 2>"$SERVE_TMP/bad.err" </dev/null
expect_eq "spawner: --spawners 5 is refused (125)" 125 $?
expect_contains "spawner: ... naming the range" "$(cat "$SERVE_TMP/bad.err")" "from 0 to 4"

SECRET=ward-spawner-test-$RANDOM$RANDOM$RANDOM
printf 'client-a %s\n' "$SECRET" >"$SERVE_TMP/tokens"
chmod 600 "$SERVE_TMP/tokens"
WARD_TRACE=1 start_server sp --spawners 2 --token-file "$SERVE_TMP/tokens" || exit 0
AUTH=(-H "Authorization: Bearer $SECRET")
sp=$(spawners "$SRV_PID")
expect_eq "spawner: --spawners 2 starts two helpers" 2 "$(wc -w <<<"$sp")"
expect_eq "spawner: /metrics: ward_spawner_helpers 2" 2 "$(metric ward_spawner_helpers "${AUTH[@]}")"

# --- a plain run goes through a helper -----------------------------------------
r=$(post_exec '{"argv": ["sh", "-c", "cat /proc/1/comm; id -u"]}' "${AUTH[@]}")
expect_eq "spawner: a plain run answers 200 ok" "200 ok" "$(code_of "$r") $(jg "$(body_of "$r")" 'd["status"]')"
expect_eq "spawner: ... with ward-init as PID 1, as uid 1000" "ward-init
1000" "$(jg "$(body_of "$r")" 'd["stdout"]' | sed '/^$/d')"
check "spawner: ... cloned by a helper (trace phase 'spawn')" grep -q 'ward-trace: spawn ' "$SERVE_TMP/sp.out"
# The helper ignores SIGTERM and friends, the server's threads block
# signals: the command starts like a fresh process all the same.
SIGS='{"argv": ["sh", "-c", "grep -E \"^(SigBlk|SigIgn|CapBnd)\" /proc/$$/status | tr -d \"\\t\" | tr \"\\n\" \" \""]}'
SIGS_WANT="SigBlk:0000000000000000 SigIgn:0000000000000000 CapBnd:0000000000000000 "
r=$(post_exec "$SIGS" "${AUTH[@]}")
expect_eq "spawner: the command has no signal blocked or ignored (what survives execve), no bounding set" "$SIGS_WANT" "$(jg "$(body_of "$r")" 'd["stdout"]')"

# PID 1 is the server's child (CLONE_PARENT), and a copy of the helper: the
# server's tokens are in the server's memory, not in PID 1's.
post_exec '{"argv": ["sleep", "5"]}' "${AUTH[@]}" >/dev/null &
bg=$!
has_init() { [ -n "$(inits "$SRV_PID")" ]; }
wait_for has_init
init=$(inits "$SRV_PID")
expect_eq "spawner: a running sandbox's PID 1 is the server's child" 1 "$(wc -w <<<"$init")"
in_init=$(count_in_memory "${init%% *}" "$SECRET")
in_srv=$(count_in_memory "$SRV_PID" "$SECRET")
check "spawner: the scan finds the token in the server's memory ($in_srv)" test "${in_srv:-0}" -gt 0
expect_eq "spawner: PID 1's memory holds no copy of the token" 0 "$in_init"
wait "$bg"

# --- a helper that dies --------------------------------------------------------
# Runs never notice (a run that meets it starts over with the server's own
# clone), and within about a second the server replaces it.
victim=${sp%% *}
kill -KILL "$victim"
bad=0
for i in $(seq 6); do
	r=$(post_exec '{"argv": ["true"]}' "${AUTH[@]}")
	[ "$(code_of "$r")" = 200 ] && [ "$(jg "$(body_of "$r")" 'd["status"]')" = ok ] || bad=$((bad + 1))
done
expect_eq "spawner: with a helper killed, every run still answers 200 ok" 0 "$bad"
healed() {
	local now
	now=$(spawners "$SRV_PID")
	[ "$(wc -w <<<"$now")" = 2 ] && ! grep -qw "$victim" <<<"$now" && [ "$(zombies "$SRV_PID")" = 0 ]
}
check "spawner: ... the server replaces it, and reaps it (no zombie)" wait_for healed
check "spawner: ... and logs that" grep -q '"event":"spawner-restarted"' "$SRV_LOG"
expect_eq "spawner: ... /metrics: ward_spawner_helpers 2 again" 2 "$(metric ward_spawner_helpers "${AUTH[@]}")"
n0=$(grep -c 'ward-trace: spawn ' "$SERVE_TMP/sp.out")
ok_auth() { r=$(post_exec '{"argv": ["true"]}' "${AUTH[@]}"); [ "$(code_of "$r") $(jg "$(body_of "$r")" 'd["status"]')" = "200 ok" ]; }
ok_auth && ok_auth
n1=$(grep -c 'ward-trace: spawn ' "$SERVE_TMP/sp.out")
expect_eq "spawner: ... and runs go through the helpers again" 2 "$((n1 - n0))"
stop_server "$SRV_PID"
expect_eq "spawner: SIGTERM still exits 0" 0 $?

# --- what the helpers hold; signals sent to the whole group; the server's death --
start_server sp2 --spawners 2 || exit 0
sp=$(spawners "$SRV_PID")
# (no WARD_TRACE here: with it, a helper keeps the server's stderr for its traces)
# shellcheck disable=SC2086
leak=$(server_fds_held $sp)
nfds=""
for k in $sp; do nfds="$nfds $(ls /proc/"$k"/fd | wc -l)"; done
expect_eq "spawner: a helper holds no socket or file of the server" "" "$leak"
expect_eq "spawner: a helper holds five fds (0-2 on /dev/null, its socket, the host's network namespace)" " 5 5" "$nfds"
hostnet=$(readlink /proc/self/ns/net)
netfds=""
for k in $sp; do netfds="$netfds $(for f in /proc/"$k"/fd/*; do readlink "$f"; done | grep -cxF "$hostnet")"; done
expect_eq "spawner: ... that namespace is the host's (to come back to after a clone into a kept one)" " 1 1" "$netfds"
exes=""
for k in $sp; do exes="$exes $(readlink /proc/"$k"/exe)"; done
want=$(readlink -f "$WARD")
expect_eq "spawner: a helper runs the lean ward binary (few mappings to copy)" " $want $want" "$exes"
for k in $sp; do kill -TERM "$k"; kill -INT "$k"; kill -HUP "$k"; done
sleep 0.3
expect_eq "spawner: helpers ignore SIGTERM, SIGINT and SIGHUP (a drain keeps them)" "$sp" "$(spawners "$SRV_PID")"
ok_run "spawner: ... and still work" '{"argv": ["true"]}'
{ kill -KILL "$SRV_PID"; wait "$SRV_PID"; } 2>/dev/null
gone() { for k in $sp; do kill -0 "$k" 2>/dev/null && return 1; done; return 0; }
check "spawner: SIGKILL of the server takes the helpers with it" wait_for gone

# --- the server at its fd limit ---------------------------------------------------
# Each soft limit from just above the fds it holds: a build runs out of fds
# at every step in turn (uid lock, pipes, the pidfd coming back from the
# helper).  Each run answers an error; nothing crashes, leaks or is left a
# zombie, and the helpers stay.
if command -v prlimit >/dev/null; then
	start_server sp-fds --spawners 2 --max-concurrent 1 || exit 0
	ok_run "spawner: (fd limit) a run first" '{"argv": ["true"]}'
	sp=$(spawners "$SRV_PID")
	n=$(ls /proc/"$SRV_PID"/fd | wc -l)
	nk=$(fd_count "$SRV_PID")
	hard=$(prlimit --pid "$SRV_PID" --nofile -o HARD --noheadings | tr -d ' ')
	odd=""
	for k in $(seq 1 24); do
		prlimit --pid "$SRV_PID" --nofile=$((n + k)):"$hard" || break
		r=$(post_exec '{"argv": ["true"]}')
		st=$(jg "$(body_of "$r")" 'd["status"]')
		case "$(code_of "$r") $st" in "200 ok" | "200 error") ;; *) odd="$odd $k:$(code_of "$r"):$st" ;; esac
	done
	prlimit --pid "$SRV_PID" --nofile=1024:"$hard"
	expect_eq "spawner: at each fd limit the server answers (ok or an error), never fails" "" "$odd"
	expect_eq "spawner: ... its helpers survive" "$sp" "$(spawners "$SRV_PID")"
	expect_eq "spawner: ... no zombie" 0 "$(zombies "$SRV_PID")"
	expect_eq "spawner: ... no fd leaked" "$nk" "$(fd_count "$SRV_PID")"
	ok_run "spawner: ... and under the limit again, runs work" '{"argv": ["true"]}'
	stop_server "$SRV_PID"
fi

# --- every helper dead, and no way to replace them -----------------------------
# ward-net started directly has no lean ward to exec: its helpers are plain
# forks, which a threaded server must not make again.  Runs then clone in
# the server itself.
WARD_NET=$(dirname "$WARD")/ward-net
if [ -x "$WARD_NET" ]; then
	WARD=$WARD_NET WARD_TRACE=1 start_server sp-net --spawners 1 || exit 0
	sp=$(spawners "$SRV_PID")
	expect_eq "spawner: ward-net started directly forks one helper (--spawners 1)" 1 "$(wc -w <<<"$sp")"
	kill -KILL "$sp"
	n0=$(grep -c 'ward-trace: clone ' "$SERVE_TMP/sp-net.out")
	b0=$(metric 'ward_cgroup_parked_total{event="born"}')
	p0=$(metric 'ward_cgroup_parked_total{event="parked"}')
	ok_run "spawner: with every helper dead, a run still answers 200 ok" '{"argv": ["true"]}'
	ok_run "spawner: ... and the next" '{"argv": ["true"]}'
	n1=$(grep -c 'ward-trace: clone ' "$SERVE_TMP/sp-net.out")
	b1=$(metric 'ward_cgroup_parked_total{event="born"}')
	p1=$(metric 'ward_cgroup_parked_total{event="parked"}')
	# (on cgroup v1 a process the helper parked in a kept cgroup before it
	# died may clone one; no new one is parked without a helper)
	expect_eq "spawner: ... the server clones them itself (trace phase 'clone'), or one the dead helper parked" \
		2 "$((n1 - n0 + ${b1:-0} - ${b0:-0}))"
	expect_eq "spawner: ... and no process is parked without a helper" "${p0:-0}" "${p1:-0}"
	# the main loop reaps it (once a second): wait for that, then look
	reaped() { [ "$(zombies "$SRV_PID")" = 0 ]; }
	wait_for reaped
	expect_eq "spawner: ... is not replaced, and reaped (no zombie)" "0 0" "$(wc -w <<<"$(spawners "$SRV_PID")") $(zombies "$SRV_PID")"
	expect_eq "spawner: ... /metrics: ward_spawner_helpers 0" 0 "$(metric ward_spawner_helpers)"
	stop_server "$SRV_PID"
fi

# --- --spawners 0 ---------------------------------------------------------------
WARD_TRACE=1 start_server sp0 --spawners 0 || exit 0
expect_eq "spawner: --spawners 0 starts none" "" "$(spawners "$SRV_PID")"
ok_run "spawner: ... and runs work" '{"argv": ["true"]}'
r=$(post_exec "$SIGS")
expect_eq "spawner: ... the command still starts with signals and bounding set clean" "$SIGS_WANT" "$(jg "$(body_of "$r")" 'd["stdout"]')"
check "spawner: ... the server clones (trace phase 'clone')" grep -q 'ward-trace: clone ' "$SERVE_TMP/sp0.out"
stop_server "$SRV_PID"
