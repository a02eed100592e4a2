#!/bin/bash
# bench/scale.sh — how start-up throughput scales with parallel callers, in one
# run on one machine: bare fork+exec, `unshare`, bwrap and `ward run -- /bin/true`
# at 1, 2, 4, 8 and 16 callers; then, when `ward serve` has --pool, POST /exec
# at as many keep-alive clients, with and without the pool, and for each server
# the latency of one client with occasional requests (the "sparse" run), with
# the per-sandbox memory of the full, idle pool.
#
#   bench/scale.sh [OUTDIR]    results into OUTDIR, else $OUT, else bench/out/scale
#
# Made to run once on a bare machine (no compiler, no packages, no network): when
# .devbench/ is there (bench/pack-device.sh makes it) every binary comes from it —
# ward and ward-net, the driver bench/wbench.c, the HTTP load generator
# bench/httpload.c and bwrap — with .devbench/lib for their libraries, set only on
# the commands that need it.  Without .devbench/ it uses build/ward, bwrap from
# PATH, and builds the two drivers into build/bench/.
#
# Knobs (environment): SECS (3: throughput time per command and caller count),
# CALLERS ("1 2 4 8 16", at most 8 counts), RUNS (200 latency runs per pass),
# PASSES (2), WARMUP (10), BUDGET (40 s for the latency phase; runs are cut to
# fit), TRACE_RUNS (20), SERVE (auto: the serve part runs when `ward serve --help`
# mentions --pool; 1: run it also without --pool, the no-pool server only; 0:
# never), SERVE_SECS (SECS), CLIENTS (CALLERS), POOL (32), SERVE_MAXC (16),
# SPARSE_N (150 requests in the sparse run; 0: no sparse run), SPARSE_MS (20 ms
# pause after each answer there), SPARSE_SECS (9: its upper bound), SCALE_LIMIT
# (280 s for the whole run: every step is under a timeout, and one that does
# not fit in what is left is skipped), WARD and BWRAP (the binaries).
#
# Latency: the median at 1 caller comes from wbench's latency phase (interleaved,
# spawn to reap); under load the driver counts runs, not samples, so the table
# gives the mean latency there, callers ÷ runs/s (Little's law).  For POST /exec
# httpload times every request, so p50/p99 are measured at every client count.
# The sparse run (1 client, SPARSE_MS between an answer and the next request,
# SPARSE_N requests after 0.5 s of warm-up) is the latency a POST /exec client
# with occasional requests sees — with --pool, the pool refills between them;
# its p50 is set against bare fork+exec's median from the latency phase.
# Pool memory: once the --pool server has POOL sandboxes ready and is idle, the
# mean Pss and Private_Dirty (smaps_rollup) of its children, the pooled PID 1s,
# and the server's own RSS.
#
# Writes 6 files into OUTDIR: scale.md (the tables, also printed at the end),
# scale.log (everything printed), host.txt (kernel, cores, cgroups, ward doctor),
# wbench.json and wbench.md (the driver's own results, samples included) and
# serve.json.  A command that fails its probe is a "skipped" row, never an abort.
set -u
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin${PATH:+:$PATH}
export LC_ALL=C
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 2

case "${1:-}" in
-h | --help) sed -n '2,/^set -u/{/^#/p}' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
OUTDIR=${1:-${OUT:-bench/out/scale}}
mkdir -p "$OUTDIR" && OUTDIR=$(cd "$OUTDIR" && pwd) || { echo "scale.sh: cannot use $OUTDIR" >&2; exit 2; }

SECS=${SECS:-3}
CALLERS=${CALLERS:-1 2 4 8 16}
RUNS=${RUNS:-200}
PASSES=${PASSES:-2}
WARMUP=${WARMUP:-10}
BUDGET=${BUDGET:-40}
TRACE_RUNS=${TRACE_RUNS:-20}
SERVE=${SERVE:-auto}
SERVE_SECS=${SERVE_SECS:-$SECS}
CLIENTS=${CLIENTS:-$CALLERS}
POOL=${POOL:-32}
SERVE_MAXC=${SERVE_MAXC:-16}
SCALE_LIMIT=${SCALE_LIMIT:-280}
SPARSE_N=${SPARSE_N:-150}
SPARSE_MS=${SPARSE_MS:-20}
SPARSE_SECS=${SPARSE_SECS:-9}
SERVE_WARM=0.5 # s of each serve cell not counted

say() { printf '%s\n' "$*"; }
section() { printf '\n== %s\n' "$*"; }
# Seconds left of SCALE_LIMIT; fit N prints min(N, what is left - 5), or fails
# when under 5 s would be left.
left() { echo $((SCALE_LIMIT - SECONDS)); }
fit() {
	local l=$(($(left) - 5))
	[ "$l" -ge 5 ] || return 1
	echo $(($1 < l ? $1 : l))
}

main() {
	TMP=$(mktemp -d /tmp/ward-scale.XXXXXX) || { say "scale.sh: mktemp failed"; return 2; }
	SRV=""
	trap cleanup EXIT
	trap 'exit 130' INT TERM HUP
	say "bench/scale.sh: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), results in $OUTDIR"
	say "SECS=$SECS CALLERS='$CALLERS' RUNS=$RUNS PASSES=$PASSES BUDGET=$BUDGET SERVE=$SERVE" \
		"SERVE_SECS=$SERVE_SECS CLIENTS='$CLIENTS' POOL=$POOL SPARSE_N=$SPARSE_N SPARSE_MS=$SPARSE_MS" \
		"SCALE_LIMIT=$SCALE_LIMIT"
	binaries || return 2
	host_info 2>&1 | tee "$OUTDIR/host.txt"
	: >"$OUTDIR/scale.md"
	startup
	serve
	pooltrace
	section "summary (also in scale.md)"
	cat "$OUTDIR/scale.md"
	say "bench/scale.sh: done in ${SECONDS}s; files: $(cd "$OUTDIR" && ls | tr '\n' ' ')"
	return 0
}

cleanup() {
	stop_server
	rm -rf "$TMP"
}

# --- where one pooled request's time goes (bench/pooltrace.py) ---------------------
pooltrace() {
	section "pooltrace: one pooled POST /exec, step by step"
	if ! "$WARD" serve --help 2>/dev/null | grep -q -- --pool; then
		say "pooltrace: skipped (this ward serve has no --pool)"
		return
	fi
	local t
	t=$(fit 60) || { say "pooltrace: skipped, no time left"; return; }
	if WARD=$WARD WARD_LD_LIBRARY_PATH=$LIBS timeout -k 5 "$t" python3 "$ROOT/bench/pooltrace.py" 200 20 \
		>"$TMP/pooltrace.md" 2>&1; then
		cat "$TMP/pooltrace.md"
		{
			printf '\n## Where one pooled POST /exec spends its time\n\n'
			cat "$TMP/pooltrace.md"
		} >>"$OUTDIR/scale.md"
	else
		say "pooltrace: failed: $(tail -3 "$TMP/pooltrace.md")"
	fi
}

# --- the binaries -----------------------------------------------------------------
binaries() {
	DEV=$ROOT/.devbench
	LIBS=""
	if [ -d "$DEV/bin" ]; then
		WARD=${WARD:-$DEV/bin/ward}
		BWRAP=${BWRAP:-$DEV/bin/bwrap}
		WBENCH=$DEV/bin/wbench
		HTTPLOAD=$DEV/bin/httpload
		LIBS=$DEV/lib
		# Big libraries travel gzipped; unpacked here, for this run only.
		for z in "$DEV"/lib/*.gz; do
			[ -e "$z" ] || continue
			mkdir -p "$TMP/lib"
			local to
			to=$TMP/lib/$(basename "$z" .gz)
			gzip -dc "$z" >"$to" 2>/dev/null ||
				python3 -c 'import gzip,shutil,sys; shutil.copyfileobj(gzip.open(sys.argv[1]), open(sys.argv[2], "wb"))' "$z" "$to" ||
				say "scale.sh: cannot unpack $z (ward serve will not start)"
		done
		[ -d "$TMP/lib" ] && LIBS=$LIBS:$TMP/lib
		say "binaries: .devbench ($(sed -n 's/^source: //p' "$DEV/MANIFEST" 2>/dev/null))"
	else
		WARD=${WARD:-build/ward}
		BWRAP=${BWRAP:-$(command -v bwrap)}
		WBENCH=build/bench/wbench
		HTTPLOAD=build/bench/httpload
		mkdir -p build/bench
		local cflags="-std=gnu11 -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wno-unused-parameter -O2 -g"
		# shellcheck disable=SC2086
		${CC:-cc} $cflags -o "$WBENCH" bench/wbench.c -ljansson -lpthread -lm ||
			{ say "scale.sh: cannot build bench/wbench.c (no .devbench/ either)"; return 1; }
		# shellcheck disable=SC2086
		${CC:-cc} $cflags -o "$HTTPLOAD" bench/httpload.c -lpthread -lm ||
			{ say "scale.sh: cannot build bench/httpload.c"; HTTPLOAD=""; }
		say "binaries: build/ and this host's (no .devbench/)"
	fi
	case "$WARD" in /*) ;; *) WARD=$ROOT/$WARD ;; esac
	[ -n "$BWRAP" ] && case "$BWRAP" in /*) ;; *) BWRAP=$ROOT/$BWRAP ;; esac
	[ -x "$WBENCH" ] || { say "scale.sh: no driver at $WBENCH"; return 1; }
	say "ward: $WARD; bwrap: ${BWRAP:-none}; LD_LIBRARY_PATH for ward serve and bwrap: ${LIBS:-none}"
	return 0
}

# Run with the pack's libraries (ward serve -> ward-net, bwrap); nothing else gets them.
withlibs() {
	if [ -n "$LIBS" ]; then
		LD_LIBRARY_PATH=$LIBS "$@"
	else
		"$@"
	fi
}

# --- what the machine is --------------------------------------------------------------
host_info() {
	section host
	uname -a
	say "nproc: $(nproc); online: $(cat /sys/devices/system/cpu/online 2>/dev/null)"
	say "cpu: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1)$(grep -qw hypervisor /proc/cpuinfo && echo ' (under a hypervisor)')"
	say "memory: $(awk '/^MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)"
	say "os: $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME"); glibc $(ldd --version 2>/dev/null | sed -n '1s/.* //p')"
	say "load average: $(cat /proc/loadavg)"
	say "user: $(id)"
	section cgroup
	say "/sys/fs/cgroup: $(stat -fc %T /sys/fs/cgroup 2>/dev/null)"
	say "/proc/self/cgroup: $(tr '\n' ' ' </proc/self/cgroup)"
	local cg=/sys/fs/cgroup
	if [ -f "$cg/cgroup.controllers" ]; then
		say "root controllers: $(cat "$cg/cgroup.controllers")"
		say "root subtree_control: $(cat "$cg/cgroup.subtree_control" 2>/dev/null)"
		local own
		own=$cg$(sed -n 's/^0:://p' /proc/self/cgroup)
		say "own cgroup: $own"
		local f
		for f in cgroup.controllers cgroup.subtree_control cgroup.type cpu.max memory.max pids.max; do
			[ -r "$own/$f" ] && say "  $f: $(cat "$own/$f" 2>&1)"
		done
	fi
	grep cgroup /proc/self/mounts
	section limits
	local k
	for k in kernel/pid_max kernel/threads-max user/max_user_namespaces user/max_mnt_namespaces \
		kernel/unprivileged_userns_clone kernel/apparmor_restrict_unprivileged_userns \
		kernel/seccomp/actions_avail fs/nr_open; do
		[ -r "/proc/sys/$k" ] && say "$k: $(cat "/proc/sys/$k")"
	done
	say "ulimit -u $(ulimit -u), -n $(ulimit -n)"
	say "landlock: $(grep -o 'landlock[^ ]*' /sys/kernel/security/lsm 2>/dev/null || echo '?'); lsm: $(cat /sys/kernel/security/lsm 2>/dev/null)"
	section binaries
	say "ward: $(timeout 10 "$WARD" --version 2>&1 | head -n1), $(stat -c %s "$WARD" 2>/dev/null) bytes"
	say "bwrap: $(withlibs timeout 10 "${BWRAP:-bwrap}" --version 2>&1 | head -n1)"
	say "unshare: $(unshare --version 2>&1 | head -n1)"
	[ -r "$ROOT/.devbench/MANIFEST" ] && sed 's/^/  /' "$ROOT/.devbench/MANIFEST"
	section "ward doctor"
	timeout -k 2 30 "$WARD" doctor 2>&1
	say "(exit $?)"
}

# --- part 1: process start-up -------------------------------------------------------------
startup() {
	section "start-up: wbench (latency, then throughput at callers $CALLERS)"
	local bw q_libs=""
	[ -n "$LIBS" ] && q_libs=$(printf %q "$LIBS")
	# bwrap gets the same view of the host that ward gives (as in bench/run):
	# /usr read-only, /bin, /lib*, /sbin as they are here.
	if [ -n "$BWRAP" ]; then
		bw=$(printf %q "$BWRAP")
		case "$BWRAP" in
		"$ROOT"/.devbench/*) [ -n "$q_libs" ] && bw="LD_LIBRARY_PATH=$q_libs $bw --unsetenv LD_LIBRARY_PATH" ;;
		esac
	else
		bw=bwrap # not there: its probe fails and the row says so
	fi
	bw+=" --unshare-all --die-with-parent --ro-bind /usr /usr"
	local d
	for d in bin lib lib32 lib64 libx32 sbin; do
		if [ -L "/$d" ]; then
			bw+=" --symlink $(readlink "/$d") /$d"
		elif [ -d "/$d" ]; then
			bw+=" --ro-bind /$d /$d"
		fi
	done
	bw+=" --proc /proc --dev /dev --tmpfs /tmp /bin/true"
	local w
	w=$(printf %q "$WARD")
	local cmds=(
		"bare=/bin/true"
		"unshare=unshare -Urmpfin --mount-proc /bin/true"
		"bwrap=$bw"
		"ward=$w run -- /bin/true"
	)
	local variants=(-L "ward-load-only=$w --version")
	if grep -qaF WARD_BENCH_NO_SECCOMP "$WARD"; then
		variants+=(-L "ward-no-seccomp=WARD_BENCH_NO_SECCOMP=1 $w run -- /bin/true")
	fi
	if grep -qaF WARD_BENCH_NO_LANDLOCK "$WARD"; then
		variants+=(-L "ward-no-landlock=WARD_BENCH_NO_LANDLOCK=1 $w run -- /bin/true")
	fi
	local jl ncallers
	jl=$(echo $CALLERS | tr ' ' ,)
	ncallers=$(echo $CALLERS | wc -w)
	# probes (fast unless one hangs: 20 s each), latency budget, throughput, trace
	local want
	want=$(awk -v b="$BUDGET" -v n="$ncallers" -v s="$SECS" 'BEGIN{printf "%d", b + 20 + n * 4 * s * 1.3 + 30}')
	local t
	if ! t=$(fit "$want"); then
		say "skipped: no time left"
		printf '## Process start-up\n\nskipped: no time left\n\n' >>"$OUTDIR/scale.md"
		return
	fi
	say "wbench: up to ${t}s (estimate ${want}s)"
	lined "$t" timeout -k 5 "$t" "$WBENCH" -n "$RUNS" -P "$PASSES" -w "$WARMUP" -b "$BUDGET" \
		-s "$SECS" -j "$jl" -T ward -k "$TRACE_RUNS" \
		-o "$OUTDIR/wbench.json" -m "$OUTDIR/wbench.md" \
		-M "host=$(uname -n), Linux $(uname -r), $(uname -m), $(nproc) cores" \
		-M "ward=$WARD" "${variants[@]}" "${cmds[@]}"
	local rc=$?
	[ $rc -eq 0 ] || say "scale.sh: wbench exit $rc$([ $rc -ge 124 ] && echo ' (timed out)')"
	if [ -s "$OUTDIR/wbench.json" ]; then
		startup_table "$OUTDIR/wbench.json" >>"$OUTDIR/scale.md" ||
			printf '## Process start-up\n\n(no python3: see wbench.md)\n\n' >>"$OUTDIR/scale.md"
	else
		printf '## Process start-up\n\nwbench wrote no results (exit %s): see scale.log\n\n' "$rc" >>"$OUTDIR/scale.md"
	fi
}

# Run a command with its stdout on a pseudo-terminal (script(1)), so that what
# it prints with stdio is line-buffered and reaches the log even when its
# timeout kills it; plainly when there is no script(1) or no pty.  $1: the
# command's own time limit, for the backstop.
lined() {
	local t=$1
	shift
	if SHELL=/bin/bash timeout 10 script -qefc true /dev/null </dev/null >/dev/null 2>&1; then
		SHELL=/bin/bash timeout -k 5 $((t + 15)) script -qefc "$(printf '%q ' "$@")" /dev/null \
			</dev/null | tr -d '\r'
		return "${PIPESTATUS[0]}"
	fi
	"$@"
}

startup_table() {
	timeout 30 python3 - "$1" "$SECS" "$(nproc)" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
secs, cores = float(sys.argv[2]), sys.argv[3]
rows = [c for c in d["commands"] if "throughput" in c or not c.get("ok")]
rows = [c for c in rows if not c["name"].startswith("ward-")]
callers = []
for c in rows:
    for t in c.get("throughput", []):
        if t["callers"] not in callers:
            callers.append(t["callers"])
def rps(c, n):
    for t in c.get("throughput", []):
        if t["callers"] == n:
            return t.get("runs_per_sec")
    return None
print("## Process start-up: throughput by parallel callers\n")
print("runs/s, and in brackets the mean latency under load in ms (callers / runs/s); "
      "%g s per cell, %s cores. Median and p99 at 1 caller from the interleaved latency "
      "phase (ms, spawn to reap).\n" % (secs, cores))
hdr = "| command | " + " | ".join("%d" % n for n in callers) + \
      " | ×%s vs %s | median ms | p99 ms | failed |" % (callers[-1] if callers else "", callers[0] if callers else "")
print(hdr)
print("| --- |" + " ---: |" * (len(callers) + 4))
by = {c["name"]: c for c in rows}
for c in rows:
    if not c.get("ok"):
        print("| %s | skipped: %s |" % (c["name"], c.get("skipped", "").replace("|", "/")))
        continue
    cells = []
    for n in callers:
        r = rps(c, n)
        cells.append("%.0f (%.2f)" % (r, 1000.0 * n / r) if r else "–")
    r0, r1 = rps(c, callers[0]), rps(c, callers[-1])
    sc = "%.1f" % (r1 / r0) if r0 and r1 else "–"
    lat = c.get("latency", {})
    failed = sum(t.get("failures", 0) for t in c.get("throughput", [])) + lat.get("failures", 0)
    print("| %s | %s | %s | %.3f | %.3f | %d |" % (c["name"], " | ".join(cells), sc,
          lat.get("median_ms", float("nan")), lat.get("p99_ms", float("nan")), failed))
for ref in ("bwrap", "bare"):
    w, b = by.get("ward"), by.get(ref)
    if w and b and w.get("ok") and b.get("ok"):
        cells = []
        for n in callers:
            x, y = rps(w, n), rps(b, n)
            cells.append("%.2f" % (x / y) if x and y else "–")
        print("| ward ÷ %s (runs/s) | %s | | | | |" % (ref, " | ".join(cells)))
var = [c for c in d["commands"] if c["name"].startswith("ward-") and c.get("ok")]
if var:
    print("\nLatency-only variants of ward (median ms, 1 caller): " +
          ", ".join("%s %.3f" % (c["name"], c["latency"]["median_ms"]) for c in var) + ".")
tr = d.get("trace", {})
if tr.get("phases"):
    print("\nward start-up phases (WARD_TRACE=1, %d runs, median wall %.3f ms): " % (tr["runs"], tr["wall_median_ms"]) +
          ", ".join("%s +%.0f µs" % (p["phase"], p["median_delta_us"]) for p in tr["phases"]) + ".")
print()
PY
}

# --- part 2: ward serve, POST /exec ---------------------------------------------------
stop_server() {
	[ -n "${SRV:-}" ] || return 0
	if kill -0 "$SRV" 2>/dev/null; then
		kill -TERM "$SRV" 2>/dev/null
		for _ in $(seq 100); do
			kill -0 "$SRV" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "$SRV" 2>/dev/null; then
			say "  ward serve (pid $SRV) still there 10 s after SIGTERM: SIGKILL"
			kill -KILL "$SRV" 2>/dev/null
		fi
	fi
	wait "$SRV" 2>/dev/null
	say "  ward serve (pid $SRV) ended: exit $?"
	SRV=""
}

# POST one body; prints "HTTP_STATUS first 300 bytes of the answer".
post_once() {
	timeout 20 python3 - "$1" "$2" <<'PY'
import sys, urllib.request, urllib.error
req = urllib.request.Request(sys.argv[1], data=sys.argv[2].encode(), method="POST",
                             headers={"Content-Type": "application/json"})
try:
    with urllib.request.urlopen(req, timeout=15) as r:
        print(r.status, r.read(300).decode("utf-8", "replace").replace("\n", " "))
except urllib.error.HTTPError as e:
    print(e.code, e.read(300).decode("utf-8", "replace").replace("\n", " "))
except Exception as e:
    print(0, repr(e))
PY
}

get_text() {
	timeout 20 python3 -c 'import sys, urllib.request
print(urllib.request.urlopen(sys.argv[1], timeout=15).read().decode("utf-8", "replace"))' "$1" 2>&1
}

# /proc facts about the server: RSS, threads, processes it has started.
server_facts() {
	local rss hwm thr kids=0 p
	rss=$(awk '/^VmRSS/ {print $2}' "/proc/$SRV/status" 2>/dev/null)
	hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$SRV/status" 2>/dev/null)
	thr=$(awk '/^Threads/ {print $2}' "/proc/$SRV/status" 2>/dev/null)
	for p in /proc/[0-9]*/status; do
		[ "$(awk '/^PPid/ {print $2}' "$p" 2>/dev/null)" = "$SRV" ] && kids=$((kids + 1))
	done
	echo "comm=$(cat "/proc/$SRV/comm" 2>/dev/null) rss_kb=${rss:-?} hwm_kb=${hwm:-?} threads=${thr:-?} children=$kids"
}

serve() {
	section "ward serve: POST /exec {\"argv\":[\"true\"]}"
	local help has_pool=0 modes=()
	help=$(withlibs timeout 20 "$WARD" serve --help 2>&1)
	grep -q -- '--pool' <<<"$help" && has_pool=1
	case "$SERVE" in
	0) ;;
	1) modes=(nopool); [ $has_pool = 1 ] && modes+=(pool) ;;
	*) [ $has_pool = 1 ] && modes=(nopool pool) ;;
	esac
	local why=""
	if [ ${#modes[@]} = 0 ]; then
		if [ "$SERVE" = 0 ]; then
			why="SERVE=0"
		elif [ $has_pool = 0 ]; then
			why="\`ward serve --help\` does not mention --pool ($(head -n1 <<<"$help"))"
		fi
	elif [ -z "$HTTPLOAD" ] || [ ! -x "$HTTPLOAD" ]; then
		why="no load generator (bench/httpload.c)"
		modes=()
	elif ! command -v python3 >/dev/null; then
		why="no python3 (needed for the probe request)"
		modes=()
	fi
	if [ -n "$why" ]; then
		say "skipped: $why"
		printf '## ward serve\n\nskipped: %s\n\n' "$why" >>"$OUTDIR/scale.md"
		printf '{"skipped": "%s"}\n' "$(tr -d '"\\' <<<"$why")" >"$OUTDIR/serve.json"
		return
	fi
	local res=$TMP/serve.txt mode c t
	: >"$res"
	for mode in "${modes[@]}"; do
		local extra=()
		[ "$mode" = pool ] && extra=(--pool "$POOL")
		local want
		want=$(awk -v n="$(echo $CLIENTS | wc -w)" -v s="$SERVE_SECS" -v w="$SERVE_WARM" \
			-v sp="$SPARSE_N" -v p="$([ "$mode" = pool ] && echo 1 || echo 0)" \
			'BEGIN{printf "%d", 20 + n * (s + w + 2) + (sp > 0 ? 8 : 0) + p * 4}')
		if ! t=$(fit "$want"); then
			say "$mode: skipped, no time left"
			echo "$mode meta skipped=no_time_left" >>"$res"
			continue
		fi
		say "-- $mode: ward serve --listen 127.0.0.1:0 --max-concurrent $SERVE_MAXC --queue 1024 ${extra[*]}"
		# exec: $! is the server itself (ward execs ward-net in place), the
		# one process stop_server signals.
		(
			[ -n "$LIBS" ] && export LD_LIBRARY_PATH=$LIBS
			exec "$WARD" serve --listen 127.0.0.1:0 --max-concurrent "$SERVE_MAXC" --queue 1024 \
				--drain-timeout 5 "${extra[@]}" --log "$TMP/$mode.log"
		) </dev/null >"$TMP/$mode.out" 2>&1 &
		SRV=$!
		local url="" t0=$SECONDS
		for _ in $(seq 400); do
			url=$(sed -n 's/.*"event":"listening","message":"\([^ ]*\) .*/\1/p' "$TMP/$mode.log" 2>/dev/null | head -n1)
			[ -n "$url" ] && break
			kill -0 "$SRV" 2>/dev/null || break
			sleep 0.05
		done
		if [ -z "$url" ]; then
			say "$mode: ward serve did not start: $(tail -c 600 "$TMP/$mode.out" "$TMP/$mode.log" 2>/dev/null)"
			echo "$mode meta skipped=did_not_start" >>"$res"
			stop_server
			continue
		fi
		url=http://$url
		say "  listening at $url after $((SECONDS - t0))s; $(server_facts)"
		local probe
		probe=$(post_once "$url/exec" '{"argv":["true"]}')
		say "  probe: $probe"
		if ! grep -q '^200 .*"status":"ok"' <<<"$probe"; then
			say "$mode: POST /exec did not answer 200 with status ok: skipped"
			echo "$mode meta skipped=probe_failed" >>"$res"
			stop_server
			continue
		fi
		echo "$mode meta idle_$(server_facts | sed 's/ / idle_/g')" >>"$res"
		[ "$mode" = pool ] && pool_memory "$url" "$res"
		sparse "$mode" "$url" "$res"
		for c in $CLIENTS; do
			local line
			line=$(timeout -k 2 "$(awk -v s="$SERVE_SECS" -v w="$SERVE_WARM" 'BEGIN{printf "%d", s + w + 25}')" \
				"$HTTPLOAD" -c "$c" -d "$SERVE_SECS" -w "$SERVE_WARM" -t 10 \
				-b '{"argv":["true"]}' -e '"status":"ok"' "$url/exec")
			say "  $c clients: ${line:-no result (exit $?)}"
			[ -n "$line" ] && echo "$mode $c $line" >>"$res"
		done
		local facts
		facts=$(server_facts)
		say "  after the runs: $facts"
		echo "$mode meta $facts" >>"$res"
		get_text "$url/metrics" | grep -E '^ward_(pool|rejected)|^ward_runs_total\{status="(ok|error)",isolation="system"' |
			head -n 40 | sed 's/^/  metrics: /'
		stop_server
		say "  stopped; server log tail: $(tail -n 2 "$TMP/$mode.out" 2>/dev/null | tr '\n' ' ')"
	done
	serve_table "$res" "$OUTDIR/serve.json" >>"$OUTDIR/scale.md" ||
		printf '## ward serve\n\n(no summary: see scale.log)\n\n' >>"$OUTDIR/scale.md"
}

# Per-sandbox memory of the full, idle pool: waits (up to 20 s) until /metrics
# says ward_pool_ready >= POOL and the server has POOL children (the pooled PID
# 1s), lets it settle for 1 s, then appends to $2 "pool mem" with the mean Pss,
# Private_Dirty and Rss (kB, smaps_rollup) of those children and the server's
# own VmRSS and Pss.
pool_memory() {
	local line
	line=$(timeout -k 2 30 python3 - "$1" "$SRV" "$POOL" <<'PY'
import os, sys, time, urllib.request
url, srv, size = sys.argv[1], sys.argv[2], int(sys.argv[3])

def children():
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                st = f.read()
        except OSError:
            continue
        if st.rsplit(")", 1)[-1].split()[1:2] == [srv]:
            out.append(d)
    return out

def ready():
    try:
        text = urllib.request.urlopen(url + "/metrics", timeout=5).read().decode("utf-8", "replace")
    except Exception:
        return -1
    for ln in text.splitlines():
        if ln.startswith("ward_pool_ready "):
            return int(float(ln.split()[1]))
    return -1

def kb(path, keys):
    got = {}
    try:
        with open(path) as f:
            for ln in f:
                k, _, v = ln.partition(":")
                if k in keys:
                    got[k] = int(v.split()[0])
    except (OSError, ValueError, IndexError):
        pass
    return got

t0 = time.monotonic()
while True:
    r, kids = ready(), children()
    full = r >= size and len(kids) == size
    if full or time.monotonic() - t0 > 20:
        break
    time.sleep(0.2)
waited = time.monotonic() - t0
time.sleep(1.0)  # idle: nothing in flight, nothing being torn down
kids = children()
keys = ("Rss", "Pss", "Private_Dirty")
rows = [x for x in (kb("/proc/%s/smaps_rollup" % p, keys) for p in kids) if len(x) == len(keys)]
mean = lambda k: "%.0f" % (sum(x[k] for x in rows) / len(rows)) if rows else "nan"
srv_st, srv_sm = kb("/proc/%s/status" % srv, ("VmRSS",)), kb("/proc/%s/smaps_rollup" % srv, ("Pss",))
print("full=%s waited_s=%.1f ready=%d pooled=%d read=%d pss_kb_avg=%s private_dirty_kb_avg=%s rss_kb_avg=%s "
      "pss_kb_sum=%s server_rss_kb=%s server_pss_kb=%s" % (
          "yes" if full else "no", waited, ready(), len(kids), len(rows), mean("Pss"), mean("Private_Dirty"),
          mean("Rss"), sum(x["Pss"] for x in rows) if rows else "nan",
          srv_st.get("VmRSS", "nan"), srv_sm.get("Pss", "nan")))
PY
)
	say "  pool memory: ${line:-no result (exit $?)}"
	[ -n "$line" ] && echo "pool mem $line" >>"$2"
}

# The sparse run: 1 client, SPARSE_MS between an answer and the next request,
# SPARSE_N requests after 0.5 s of warm-up, at most SPARSE_SECS; appends
# "MODE sparse HTTPLOAD ..." to $3.
sparse() {
	[ "$SPARSE_N" -gt 0 ] 2>/dev/null || return 0
	local t line
	t=$(awk -v s="$SPARSE_SECS" 'BEGIN{printf "%d", 0.5 + s + 5 + 3}')
	if ! t=$(fit "$t"); then
		say "  sparse: skipped, no time left"
		return 0
	fi
	line=$(timeout -k 2 "$t" "$HTTPLOAD" -c 1 -i "$SPARSE_MS" -n "$SPARSE_N" -w 0.5 -d "$SPARSE_SECS" -t 5 \
		-b '{"argv":["true"]}' -e '"status":"ok"' "$2/exec")
	say "  sparse (1 client, ${SPARSE_MS} ms pause, $SPARSE_N requests): ${line:-no result (exit $?)}"
	[ -n "$line" ] && echo "$1 sparse $line" >>"$3"
}

serve_table() {
	timeout 30 python3 - "$1" "$2" "$SERVE_SECS" "$SERVE_MAXC" "$POOL" "$OUTDIR/wbench.json" \
		"$SPARSE_N" "$SPARSE_MS" <<'PY'
import json, math, sys
res, out, secs, maxc, pool, wjson = sys.argv[1:7]
sparse_n, sparse_ms = sys.argv[7], sys.argv[8]
data = {}
def num(kv):
    for k, v in kv.items():
        try:
            kv[k] = float(v)
        except ValueError:
            pass
    return kv
for line in open(res):
    w = line.split()
    if len(w) < 2:
        continue
    mode = data.setdefault(w[0], {"cells": {}, "meta": {}})
    kv = dict(x.split("=", 1) for x in w[2:] if "=" in x)
    if w[1] == "meta":
        mode["meta"].update(kv)
    elif w[1] in ("sparse", "mem"):
        mode[w[1]] = num(kv)
    else:
        mode["cells"][int(w[1])] = num(kv)
bare = None  # bare fork+exec median, ms, from this run's latency phase
try:
    for c in json.load(open(wjson)).get("commands", []):
        if c.get("name") == "bare" and c.get("ok") and c.get("latency", {}).get("median_ms"):
            bare = float(c["latency"]["median_ms"])
except (OSError, ValueError):
    pass
def mode_json(d):
    j = {"meta": d["meta"], "cells": [dict(clients=c, **d["cells"][c]) for c in sorted(d["cells"])]}
    if "sparse" in d:
        j["sparse"] = d["sparse"]
    if "mem" in d:
        j["pool_memory"] = d["mem"]
    return j
json.dump({"secs_per_cell": float(secs), "max_concurrent": int(maxc), "pool": int(pool),
           "sparse_requests": int(sparse_n), "sparse_pause_ms": float(sparse_ms), "bare_median_ms": bare,
           "modes": {m: mode_json(d) for m, d in data.items()}}, open(out, "w"), indent=1)
modes = [m for m in ("nopool", "pool") if m in data]
label = {"nopool": "no pool", "pool": "--pool %s" % pool}
def fmt(v):
    return "%.0f" % v if isinstance(v, float) else str(v)
def sparse_part():
    rows = [m for m in modes if "sparse" in data[m]]
    if rows:
        print("\n### Sparse: one client with occasional requests\n")
        print("1 keep-alive client, a %s ms pause after each answer (not timed; with --pool the pool "
              "refills meanwhile), %s requests after 0.5 s of warm-up: the latency a POST /exec client "
              "with occasional requests sees. Against bare fork+exec's median from this run's latency "
              "phase (%s).\n" % (sparse_ms, sparse_n, "%.3f ms" % bare if bare else "not measured"))
        print("| server | requests | p50 ms | p90 ms | p99 ms | max ms | p50 ÷ bare median | not ok |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for m in rows:
            x = data[m]["sparse"]
            ok = x.get("requests", 0) > 0 and not math.isnan(x.get("p50_ms", float("nan")))
            ratio = "%.2f" % (x["p50_ms"] / bare) if ok and bare else "–"
            print("| %s | %d | %.2f | %.2f | %.2f | %.2f | %s | %d |" % (
                label[m], x.get("requests", 0), x.get("p50_ms", float("nan")), x.get("p90_ms", float("nan")),
                x.get("p99_ms", float("nan")), x.get("max_ms", float("nan")), ratio,
                int(x.get("non200", 0) + x.get("bad", 0) + x.get("errors", 0))))
        x = data.get("pool", {}).get("sparse")
        if x and bare and x.get("requests", 0) > 0:
            print("\nPooled sparse p50 ÷ bare fork+exec median: %.3f ms ÷ %.3f ms = **%.2f**." % (
                x["p50_ms"], bare, x["p50_ms"] / bare))
    mem = data.get("pool", {}).get("mem")
    if mem:
        print("\nPool memory (--pool %s, %s): %s pooled PID 1s (%s read), each on average "
              "Pss %s kB, Private_Dirty %s kB (Rss %s kB); Pss of all %s kB; the server's own RSS %s kB "
              "(Pss %s kB)." % (
                  pool, "full and idle" if mem.get("full") == "yes" else
                  "idle but NOT full after 20 s: %s ready" % fmt(mem.get("ready")),
                  fmt(mem.get("pooled")), fmt(mem.get("read")), fmt(mem.get("pss_kb_avg")),
                  fmt(mem.get("private_dirty_kb_avg")), fmt(mem.get("rss_kb_avg")), fmt(mem.get("pss_kb_sum")),
                  fmt(mem.get("server_rss_kb")), fmt(mem.get("server_pss_kb"))))
print("## ward serve: POST /exec {\"argv\":[\"true\"]}\n")
print("Keep-alive clients sending back to back (bench/httpload.c), %s s per cell after 0.5 s of "
      "warm-up, `--max-concurrent %s --queue 1024`; latency is send to last byte.\n" % (secs, maxc))
clients = sorted({c for m in modes for c in data[m]["cells"]})
if not clients:
    print("no measurements:", "; ".join("%s %s" % (m, " ".join("%s=%s" % kv for kv in data[m]["meta"].items()))
                                      for m in modes) or "nothing ran")
    sparse_part()
    print()
    sys.exit(0)
hdr = "| clients |"
for m in modes:
    hdr += " %s req/s | p50 ms | p99 ms |" % label[m]
if len(modes) == 2:
    hdr += " pool ÷ no pool |"
print(hdr + " not ok |")
print("| ---: |" + " ---: | ---: | ---: |" * len(modes) + (" ---: |" if len(modes) == 2 else "") + " --- |")
for c in clients:
    row, notes = "| %d |" % c, []
    for m in modes:
        x = data[m]["cells"].get(c)
        if x:
            row += " %.0f | %.2f | %.2f |" % (x["rps"], x["p50_ms"], x["p99_ms"])
            bad = int(x["non200"] + x["bad"] + x["errors"])
            if bad:
                notes.append("%s: %d non-200, %d not ok, %d errors" % (label[m], x["non200"], x["bad"], x["errors"]))
        else:
            row += " – | – | – |"
    if len(modes) == 2:
        a, b = data["pool"]["cells"].get(c), data["nopool"]["cells"].get(c)
        row += " %.2f |" % (a["rps"] / b["rps"]) if a and b and b["rps"] else " – |"
    print(row + " %s |" % ("; ".join(notes) or "0"))
sparse_part()
for m in modes:
    meta = data[m]["meta"]
    if meta:
        print("\n%s server: %s" % (label.get(m, m), ", ".join("%s %s" % kv for kv in meta.items())))
print()
PY
}

main "$@" 2>&1 | tee "$OUTDIR/scale.log"
exit "${PIPESTATUS[0]}"
