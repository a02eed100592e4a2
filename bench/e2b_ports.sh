#!/bin/bash
# bench/e2b_ports.sh — the E2B port proxy (issue 32.3's speed goals; bench/run
# runs it, or alone): one server with --e2b, a sandbox running a python3
# HTTP server on its port 8000 (bench/e2b_ports.mjs), and curl fetching from
# it through the proxy (E2b-Sandbox-Id/-Port to the listener) and directly
# inside the sandbox's network namespace (the same curl under nsenter -n),
# interleaved: a 100 MiB answer (throughput; goal: the proxy >= 0.8x
# direct) and small answers (per request; goal: <= 1.2x direct).  Prints a
# markdown section on stdout; skips (exit 3) without node/npm, curl or
# nsenter.
. "$(dirname "$0")/e2b_node.bash" e2b_ports.mjs
command -v curl >/dev/null && command -v nsenter >/dev/null || { echo "$me: no curl/nsenter" >&2; exit 3; }
ROUNDS=${BENCH_PORTS_ROUNDS:-6}
SMALL=${BENCH_PORTS_SMALL:-100}
e2b_serve "$(mktemp -d /var/tmp/ward-bench-e2b-ports.XXXXXX)"
mark=ward-bench-ports-$$-$RANDOM
id=$(cd "$NODE_DIR" && MARK=$mark E2B_API_URL=http://$e E2B_SANDBOX_URL=http://$e E2B_API_KEY=bench-token-0123456789 \
	timeout 120 node e2b_ports.mjs) || { echo "$me: e2b_ports.mjs failed: $id" >&2; exit 2; }
# the sandbox's server on the host: its argv carries the mark
spid=
for p in /proc/[0-9]*; do
	if { tr "\0" " " <"$p/cmdline"; } 2>/dev/null | grep -q -- "srv.py $mark"; then spid=${p#/proc/}; break; fi
done
[ -n "$spid" ] || { echo "$me: the sandbox's server was not found on the host" >&2; exit 2; }
proxy=(curl -s -H "E2b-Sandbox-Id: $id" -H "E2b-Sandbox-Port: 8000")
direct=(nsenter -n -t "$spid" curl -s)
urls() { for _ in $(seq "$SMALL"); do printf -- '-o /dev/null %s ' "$1"; done; }
# one line a fetch: seconds; small ones in one curl (its connection kept where it can be)
big_p() { "${proxy[@]}" -w '%{time_total}\n' -o /dev/null "http://$e/big"; }
big_d() { "${direct[@]}" -w '%{time_total}\n' -o /dev/null "http://127.0.0.1:8000/big"; }
small_p() { "${proxy[@]}" -w '%{time_total}\n' $(urls "http://$e/small"); }
small_d() { "${direct[@]}" -w '%{time_total}\n' $(urls "http://127.0.0.1:8000/small"); }
for r in $(seq "$ROUNDS"); do
	if [ $((r % 2)) = 1 ]; then
		big_p >>"$T/bp"; big_d >>"$T/bd"; small_p >>"$T/sp"; small_d >>"$T/sd"
	else
		big_d >>"$T/bd"; big_p >>"$T/bp"; small_d >>"$T/sd"; small_p >>"$T/sp"
	fi
done
python3 - "$T" "$ROUNDS" "$SMALL" <<'PY'
import statistics, sys
t, rounds, small = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
v = {k: [float(x) for x in open(f"{t}/{k}").read().split()] for k in ("bp", "bd", "sp", "sd")}
med = {k: statistics.median(x) for k, x in v.items()}
mib = lambda s: 100 / s
print("### The E2B port proxy (issue 32.3; bench/e2b_ports.sh)\n")
print("curl through `ward serve --e2b`'s port proxy (E2b-Sandbox-Id/-Port to the listener) against the same curl run "
      "inside the sandbox's network namespace (nsenter -n), to a python3 http.server in the sandbox; %d interleaved rounds, "
      "%d small requests a round in one curl.\n" % (rounds, small))
print("| fetch | direct (netns) | through the proxy | ratio | goal |\n| --- | ---: | ---: | ---: | --- |")
print("| 100 MiB answer (MiB/s, median) | %.0f | %.0f | %.2fx | >= 0.8x |" % (mib(med["bd"]), mib(med["bp"]), med["bd"] / med["bp"]))
print("| 2-byte answer (ms a request, median) | %.2f | %.2f | %.2fx | <= 1.2x |" % (med["sd"] * 1e3, med["sp"] * 1e3, med["sp"] / med["sd"]))
PY
