#!/bin/bash
# bench/e2b_ports.sh — the E2B port proxy (issue 32.3's speed goals; bench/run
# runs it, or alone): one server with --e2b, a sandbox running a python3
# HTTP server on its port 8000 (bench/e2b_ports.mjs), and curl fetching from
# it through the proxy (E2b-Sandbox-Id/-Port to the listener) and directly
# inside the sandbox's network namespace (the same curl under nsenter -n),
# interleaved: a 100 MiB answer (throughput; goal: the proxy >= 0.8x
# direct) and small answers (per request; goal: <= 1.2x direct).  With
# WARD_BEFORE (another ward binary, e.g. a build of main), a second server
# of that binary with a sandbox of its own, fetched in the same rounds
# (its proxy against its own sandbox's direct fetches).  And two floors in
# the same rounds: the same fetches through bench/relayfloor.c (a relay of
# bytes, one epoll thread, no HTTP: the least any proxy costs), and MHD's
# round trip alone (getInfo on the E2B listener, answered on its I/O
# thread), and a relay to a port nothing listens on (the connect's cost
# on the I/O thread).  Prints a markdown section on stdout; skips (exit 3) without
# node/npm, curl or nsenter.
. "$(dirname "$0")/e2b_node.bash" e2b_ports.mjs
command -v curl >/dev/null && command -v nsenter >/dev/null || { echo "$me: no curl/nsenter" >&2; exit 3; }
ROUNDS=${BENCH_PORTS_ROUNDS:-6}
SMALL=${BENCH_PORTS_SMALL:-100}
BEFORE=${WARD_BEFORE:-}

# one server and its sandbox: E[k] (the listener), ID[k], SPID[k] (its server's pid on the host)
declare -A E ID SPID
serve() {
	local k=$1
	SERVE_WARD=$2 e2b_serve "$(mktemp -d /var/tmp/ward-bench-e2b-ports.XXXXXX)"
	E[$k]=$e
	local mark=ward-bench-ports-$$-$RANDOM-$k id p
	id=$(cd "$NODE_DIR" && MARK=$mark E2B_API_URL=http://$e E2B_SANDBOX_URL=http://$e \
		E2B_API_KEY=bench-token-0123456789 timeout 120 node e2b_ports.mjs) ||
		{ echo "$me: e2b_ports.mjs failed: $id" >&2; exit 2; }
	ID[$k]=$id
	# the sandbox's server on the host: its argv carries the mark
	for p in /proc/[0-9]*; do
		if { tr "\0" " " <"$p/cmdline"; } 2>/dev/null | grep -q -- "srv.py $mark"; then SPID[$k]=${p#/proc/}; break; fi
	done
	[ -n "${SPID[$k]:-}" ] || { echo "$me: the sandbox's server was not found on the host" >&2; exit 2; }
}
serve a "$WARD"
OUT=$T
kinds=(a)
[ -n "$BEFORE" ] && { serve b "$BEFORE"; kinds=(a b); }
mkdir -p build/bench
${CC:-cc} -std=gnu11 -Wall -Wextra -Werror -Wshadow -Wformat=2 -O2 -g -o build/bench/relayfloor bench/relayfloor.c || { echo "$me: cannot build relayfloor" >&2; exit 2; }
floor() { # floor NAME [splice]: a relayfloor to sandbox a's server, its address in $NAME
	build/bench/relayfloor "${SPID[a]}" 8000 ${2:-} >"$OUT/$1.port" &
	_e2b_pids="$_e2b_pids $!"
	for _ in $(seq 50); do [ -s "$OUT/$1.port" ] && break; sleep 0.1; done
	printf -v "$1" '127.0.0.1:%s' "$(cat "$OUT/$1.port")"
}
floor FLOOR
floor SPLICE splice

urls() { for _ in $(seq "$SMALL"); do printf -- '-o /dev/null %s ' "$1"; done; }
proxy() { curl -s -H "E2b-Sandbox-Id: ${ID[$1]}" -H "E2b-Sandbox-Port: 8000" "${@:2}"; }
direct() { nsenter -n -t "${SPID[$1]}" curl -s "${@:2}"; }
# one line a fetch: seconds; small ones in one curl (its connection kept where it can be)
big_p() { proxy "$1" -w '%{time_total}\n' -o /dev/null "http://${E[$1]}/big"; }
big_d() { direct "$1" -w '%{time_total}\n' -o /dev/null "http://127.0.0.1:8000/big"; }
small_p() { proxy "$1" -w '%{time_total}\n' $(urls "http://${E[$1]}/small"); }
small_d() { direct "$1" -w '%{time_total}\n' $(urls "http://127.0.0.1:8000/small"); }
big_f() { curl -s -w '%{time_total}\n' -o /dev/null "http://$FLOOR/big"; }
big_s() { curl -s -w '%{time_total}\n' -o /dev/null "http://$SPLICE/big"; }
small_f() { curl -s -w '%{time_total}\n' $(urls "http://$FLOOR/small"); }
mhd() { curl -s -H "X-API-Key: bench-token-0123456789" -w '%{time_total}\n' $(urls "http://${E[a]}/sandboxes/${ID[a]}"); }
closed() { curl -s -H "E2b-Sandbox-Id: ${ID[a]}" -H "E2b-Sandbox-Port: 8009" -w '%{time_total}\n' $(urls "http://${E[a]}/x"); }
for r in $(seq "$ROUNDS"); do
	# each round in another order: drift hits every kind alike
	order=("${kinds[@]}")
	[ $((r % 2)) = 0 ] && order=($(printf '%s\n' "${kinds[@]}" | tac))
	for k in "${order[@]}"; do
		if [ $((r % 2)) = 1 ]; then
			big_p "$k" >>"$OUT/bp$k"; big_d "$k" >>"$OUT/bd$k"; small_p "$k" >>"$OUT/sp$k"; small_d "$k" >>"$OUT/sd$k"
		else
			big_d "$k" >>"$OUT/bd$k"; big_p "$k" >>"$OUT/bp$k"; small_d "$k" >>"$OUT/sd$k"; small_p "$k" >>"$OUT/sp$k"
		fi
	done
	big_f >>"$OUT/bf"; big_s >>"$OUT/bs"; small_f >>"$OUT/sf"; mhd >>"$OUT/mh"; closed >>"$OUT/cl"
done
load=$(cut -d' ' -f1-3 /proc/loadavg)
python3 - "$OUT" "$ROUNDS" "$SMALL" "${kinds[*]}" "$load" <<'PY'
import statistics, sys
t, rounds, small, kinds, load = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4].split(), sys.argv[5]
med = {}
for k in kinds:
    for m in ("bp", "bd", "sp", "sd"):
        med[m + k] = statistics.median(float(x) for x in open(f"{t}/{m}{k}").read().split())
for m in ("bf", "bs", "sf", "mh", "cl"):
    med[m] = statistics.median(float(x) for x in open(f"{t}/{m}").read().split())
mib = lambda s: 100 / s
name = {"a": "this build", "b": "before (WARD_BEFORE)"}
print("### The E2B port proxy (issue 32.3; bench/e2b_ports.sh)\n")
print("curl through `ward serve --e2b`'s port proxy (E2b-Sandbox-Id/-Port to the listener) against the same curl run "
      "inside the sandbox's network namespace (nsenter -n), to a python3 http.server in the sandbox; %d interleaved rounds, "
      "%d small requests a round in one curl; load average %s at the end.\n" % (rounds, small, load))
print("| fetch | build | direct (netns) | through the proxy | ratio | goal |\n| --- | --- | ---: | ---: | ---: | --- |")
for k in kinds:
    print("| 100 MiB answer (MiB/s, median) | %s | %.0f | %.0f | %.2fx | >= 0.8x |" %
          (name[k], mib(med["bd" + k]), mib(med["bp" + k]), med["bd" + k] / med["bp" + k]))
print("| 100 MiB answer (MiB/s, median) | floor: bench/relayfloor.c | %.0f | %.0f | %.2fx | |" %
      (mib(med["bda"]), mib(med["bf"]), med["bda"] / med["bf"]))
print("| 100 MiB answer (MiB/s, median) | floor: bench/relayfloor.c with splice | %.0f | %.0f | %.2fx | |" %
      (mib(med["bda"]), mib(med["bs"]), med["bda"] / med["bs"]))
for k in kinds:
    print("| 2-byte answer (ms a request, median) | %s | %.3f | %.3f | %.2fx | <= 1.2x |" %
          (name[k], med["sd" + k] * 1e3, med["sp" + k] * 1e3, med["sp" + k] / med["sd" + k]))
print("| 2-byte answer (ms a request, median) | floor: bench/relayfloor.c | %.3f | %.3f | %.2fx | |" %
      (med["sda"] * 1e3, med["sf"] * 1e3, med["sf"] / med["sda"]))
print("\nMHD's round trip alone (getInfo on the E2B listener, answered on its I/O thread, the same curl): "
      "%.3f ms a request, median (%.2fx the direct 2-byte fetch); a relay to a port nothing listens on (its connect, "
      "refused, and the 502 on the I/O thread): %.3f ms." % (med["mh"] * 1e3, med["mh"] / med["sda"], med["cl"] * 1e3))
PY
