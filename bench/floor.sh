#!/bin/bash
# bench/floor.sh — the HTTP runner against the kernel's floor (issue 26 item 2),
# run by bench/run after bench/serve.sh, or alone.
#
# In rounds, alternated so that drift on a shared host hits every side alike:
# bench/nsfloor (threads starting /bin/true into fresh namespaces, the least
# any fresh sandbox costs) at 1 and 8 callers, and `ward serve` as it starts
# by default answering POST /exec of `true` to wrk at 1 and 8 keep-alive
# clients; with WARD_BEFORE (another ward binary, e.g. the parent commit's)
# the same server from it too, so that a change is measured against what it
# replaces in the same run.  Prints a markdown table on stdout: each
# server's median req/s over the rounds and its ratio to the floor's median.
#
# Knobs: WARD (default build/ward), WARD_BEFORE (none), BENCH_FLOOR_ROUNDS (3),
# BENCH_FLOOR_SECS (3 per cell), BENCH_SERVE_MAXC (--max-concurrent, default
# the server's own: the number of cores).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 2
WARD=${WARD:-build/ward}
BEFORE=${WARD_BEFORE:-}
ROUNDS=${BENCH_FLOOR_ROUNDS:-3}
SECS=${BENCH_FLOOR_SECS:-3}
MAXC=${BENCH_SERVE_MAXC:-}
NSFLOOR=build/bench/nsfloor

command -v wrk >/dev/null || { echo "bench/floor.sh: wrk is missing (make deps)" >&2; exit 1; }
[ -x "$WARD" ] || { echo "bench/floor.sh: no ward binary at $WARD" >&2; exit 1; }
if [ ! -x "$NSFLOOR" ]; then
	mkdir -p build/bench
	${CC:-cc} -std=gnu11 -O2 -o "$NSFLOOR" bench/nsfloor.c -lpthread ||
		{ echo "bench/floor.sh: cannot build bench/nsfloor.c" >&2; exit 1; }
fi
TMP=$(mktemp -d /tmp/ward-bench-floor.XXXXXX)
SRV=""
cleanup() {
	[ -n "$SRV" ] && kill -TERM "$SRV" 2>/dev/null && wait "$SRV" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT

# serve_cells BINARY — "REQS_1 REQS_8" (req/s at 1 and 8 clients) of a fresh
# server from BINARY
serve_cells() {
	local log=$TMP/log url="" out=""
	: >"$log"
	"$1" serve --listen 127.0.0.1:0 --queue 1024 --log "$log" ${MAXC:+--max-concurrent "$MAXC"} \
		</dev/null >"$TMP/out" 2>&1 &
	SRV=$!
	for _ in $(seq 400); do
		url=$(sed -n 's/.*"event":"listening","message":"\([^ ]*\) .*/\1/p' "$log" 2>/dev/null | head -1)
		[ -n "$url" ] && break
		sleep 0.05
	done
	[ -n "$url" ] || { echo "bench/floor.sh: $1 serve did not start: $(cat "$TMP/out")" >&2; exit 1; }
	# warm: the first sandboxes make what later ones reuse
	wrk -t 1 -c 1 -d 1s -s bench/serve_exec.lua "http://$url/exec" >/dev/null 2>&1
	local hz spawners s0 c0 p0 s1 c1 p1
	hz=$(getconf CLK_TCK)
	spawners=$(ps -o pid= --ppid "$SRV" -C ward-spawner | tr '\n' ' ')
	for c in 1 8; do
		local t=$((c < $(nproc) ? c : $(nproc)))
		local r
		[ "$c" = 8 ] && read -r s0 c0 p0 < <(cpu_of "$SRV" "$spawners")
		r=$(wrk -t "$t" -c "$c" -d "${SECS}s" --timeout 30s -s bench/serve_exec.lua "http://$url/exec" 2>&1 |
			sed -n 's/^BENCH //p')
		# REQS P50 P99 BAD ERRS: a cell with a bad answer counts 0
		set -- "$1" $r
		if [ "${5:-1}" != 0 ] || [ "${6:-1}" != 0 ]; then
			echo "bench/floor.sh: $c clients: bad answers ($r)" >&2
			out="$out 0"
		else
			out="$out $(awk -v n="$2" -v s="$SECS" 'BEGIN{printf "%.0f", n/s}')"
		fi
		if [ "$c" = 8 ]; then
			read -r s1 c1 p1 < <(cpu_of "$SRV" "$spawners")
			# CPU per request, ms: the server's threads, its children (PID 1s and
			# their commands), the spawner helpers
			out="$out $(awk -v n="$2" -v hz="$hz" -v a=$((s1 - s0)) -v b=$((c1 - c0)) -v d=$((p1 - p0)) \
				'BEGIN{n = n > 0 ? n : 1; printf "%.3f %.3f %.3f", a/hz*1000/n, b/hz*1000/n, d/hz*1000/n}')"
		fi
	done
	kill -TERM "$SRV" 2>/dev/null
	wait "$SRV" 2>/dev/null
	SRV=""
	echo "$out"
}

# cpu_of PID "SPAWNERS" — clock ticks: PID's own (all threads), its reaped
# children's, and the spawner helpers' (those alive now)
cpu_of() {
	local sp=0 p
	for p in $2; do
		[ -r "/proc/$p/stat" ] && sp=$((sp + $(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0)))
	done
	awk -v sp="$sp" '{print $14 + $15, $16 + $17, sp}' "/proc/$1/stat"
}

median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{a[NR]=$1} END{print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

declare -a F1 F8 A1 A8 B1 B8 AS AC AP BS BC BP
for r in $(seq "$ROUNDS"); do
	read -r f1 f8 < <("$NSFLOOR" "$SECS" 1,8 /bin/true | awk '$2=="ns"{printf "%s ", $4} END{print ""}')
	F1+=("$f1"); F8+=("$f8")
	if [ -n "$BEFORE" ] && [ $((r % 2)) = 0 ]; then
		read -r b1 b8 bs bc bp < <(serve_cells "$BEFORE"); B1+=("$b1"); B8+=("$b8"); BS+=("$bs"); BC+=("$bc"); BP+=("$bp")
		read -r a1 a8 as ac ap < <(serve_cells "$WARD"); A1+=("$a1"); A8+=("$a8"); AS+=("$as"); AC+=("$ac"); AP+=("$ap")
	else
		read -r a1 a8 as ac ap < <(serve_cells "$WARD"); A1+=("$a1"); A8+=("$a8"); AS+=("$as"); AC+=("$ac"); AP+=("$ap")
		if [ -n "$BEFORE" ]; then
			read -r b1 b8 bs bc bp < <(serve_cells "$BEFORE"); B1+=("$b1"); B8+=("$b8"); BS+=("$bs"); BC+=("$bc"); BP+=("$bp")
		fi
	fi
	echo "bench/floor.sh: round $r: floor $f1/$f8, ward $a1/$a8${BEFORE:+, before ${b1:-}/${b8:-}}" >&2
done
mf1=$(echo "${F1[*]}" | median); mf8=$(echo "${F8[*]}" | median)
ma1=$(echo "${A1[*]}" | median); ma8=$(echo "${A8[*]}" | median)
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2f", (b > 0) ? a / b : 0}'; }
echo "| callers | fresh-namespace floor, starts/s | ward serve, POST /exec req/s | × floor |${BEFORE:+ before (WARD_BEFORE), req/s | × floor |}"
echo "|---:|---:|---:|---:|${BEFORE:+---:|---:|}"
if [ -n "$BEFORE" ]; then
	mb1=$(echo "${B1[*]}" | median); mb8=$(echo "${B8[*]}" | median)
	echo "| 1 | $mf1 | $ma1 | $(ratio "$ma1" "$mf1")× | $mb1 | $(ratio "$mb1" "$mf1")× |"
	echo "| 8 | $mf8 | $ma8 | $(ratio "$ma8" "$mf8")× | $mb8 | $(ratio "$mb8" "$mf8")× |"
else
	echo "| 1 | $mf1 | $ma1 | $(ratio "$ma1" "$mf1")× |"
	echo "| 8 | $mf8 | $ma8 | $(ratio "$ma8" "$mf8")× |"
fi
echo
echo "CPU per request at 8 clients, ms (medians; from /proc: the server's threads, its reaped children — each sandbox's PID 1 and command —, the spawner helpers; the kernel's own workers are in none):"
echo
echo "| server | its threads | PID 1 and the command | spawner helpers | sum |"
echo "| --- | ---: | ---: | ---: | ---: |"
row() { awk -v a="$2" -v b="$3" -v c="$4" -v n="$1" 'BEGIN{printf "| %s | %.3f | %.3f | %.3f | %.3f |\n", n, a, b, c, a + b + c}'; }
row "this ward" "$(echo "${AS[*]}" | median)" "$(echo "${AC[*]}" | median)" "$(echo "${AP[*]}" | median)"
[ -n "$BEFORE" ] && row "before (WARD_BEFORE)" "$(echo "${BS[*]}" | median)" "$(echo "${BC[*]}" | median)" "$(echo "${BP[*]}" | median)"
echo
echo "Medians of $ROUNDS alternated rounds, ${SECS} s a cell; the server with its defaults (--max-concurrent = cores$([ -n "$MAXC" ] && echo ", here $MAXC")); load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
