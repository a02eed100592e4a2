#!/bin/bash
# SPEC §8: a fleet of runners behind a load balancer.  Three `ward serve`
# runners on 127.0.0.1, with nginx (deploy/nginx/ward.conf) and HAProxy
# (deploy/haproxy.cfg) in front — the shipped files themselves, with only
# the runners' addresses, the listen line and the log target replaced.
# Checks: the §4 result comes through; requests spread over all runners;
# a runner stopped with SIGTERM finishes what it holds while the balancers
# send everything else to the others; /health through the balancer.
. "$(dirname "$0")/lib.bash"

FLEET_NAME="fleet"
. "$(dirname "$0")/fleet.bash"

TOKEN=fleet-token-$RANDOM$RANDOM
echo "app $TOKEN" >"$SERVE_TMP/tokens"

# ---- deploy/kubernetes/ward.yaml: consistent, and its args start a runner ----
# (no cluster here: this checks the manifest against itself and against
# this ward; docs/deploy.md says what is untested)
K8S=$(/usr/bin/python3 - "$ROOT/deploy/kubernetes/ward.yaml" <<'PY' 2>&1
import sys, yaml
docs = {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(open(sys.argv[1])) if d}
bad = []
dep, svc = docs[("Deployment", "ward-runner")], docs[("Service", "ward-runner")]
pod = dep["spec"]["template"]
c = pod["spec"]["containers"][0]
args = c["args"]
ports = {p["name"]: p["containerPort"] for p in c["ports"]}
opt = lambda name, dflt=None: args[args.index(name) + 1] if name in args else dflt
listen_port = int(opt("--listen", "127.0.0.1:8900").rsplit(":", 1)[1])
port_of = lambda p: ports.get(p, p)
rp, lp = c.get("readinessProbe", {}), c.get("livenessProbe", {})
if args[0] != "serve": bad.append("args do not start with serve")
if rp.get("httpGet", {}).get("path") != "/health": bad.append("readinessProbe is not GET /health")
if port_of(rp.get("httpGet", {}).get("port")) != listen_port: bad.append("readinessProbe port is not --listen's")
if port_of(lp.get("httpGet", {}).get("port")) != listen_port: bad.append("livenessProbe port is not --listen's")
lim = c.get("resources", {}).get("limits", {})
if "cpu" not in lim or "memory" not in lim: bad.append("no cpu/memory limits")
drain = int(opt("--drain-timeout", "60"))
pre = c.get("lifecycle", {}).get("preStop", {}).get("sleep", {}).get("seconds", 0)
if pod["spec"].get("terminationGracePeriodSeconds", 30) <= drain + pre:
    bad.append("terminationGracePeriodSeconds <= preStop + --drain-timeout")
sel = svc["spec"]["selector"]
if any(pod["metadata"]["labels"].get(k) != v for k, v in sel.items()): bad.append("Service selector misses the pods")
if dep["spec"]["selector"]["matchLabels"] != sel: bad.append("Deployment and Service selectors differ")
tp = svc["spec"]["ports"][0]["targetPort"]
if port_of(tp) != listen_port: bad.append("Service targetPort is not --listen's")
if bad: print("BAD " + "; ".join(bad)); sys.exit(0)
# the args, one a line, for a runner here: own address, own token file
for i, a in enumerate(args[1:], 1):
    prev = args[i - 1]
    print("127.0.0.1:0" if prev == "--listen" else "TOKENFILE" if prev == "--token-file" else a)
PY
)
case "$K8S" in
BAD*|*Error*|*Traceback*) fail "fleet/k8s: the manifest is consistent" "$K8S" ;;
*)
	pass "fleet/k8s: the manifest is consistent (probes, ports, selectors, limits, grace period)"
	echo "k8s k8s-token" >"$SERVE_TMP/k8s-tokens"
	mapfile -t KARGS < <(printf '%s\n' "$K8S" | sed "s#^TOKENFILE\$#$SERVE_TMP/k8s-tokens#")
	if start_server k8s "${KARGS[@]}"; then
		r=$(http GET /health)
		expect_eq "fleet/k8s: ward serve starts with the manifest's args, /health 200" 200 "$(code_of "$r")"
		r=$(post_exec '{"argv":["echo","k8s"]}' -H 'Authorization: Bearer k8s-token')
		expect_eq "fleet/k8s: and runs a request" "200 k8s" "$(code_of "$r") $(jget "$(body_of "$r")" 'd["stdout"].strip()')"
		stop_server "$SRV_PID"
	fi ;;
esac

# ---- three runners, the same token file (a client holds one token) ----
declare -a RPID RPORT RLOG
for i in 1 2 3; do
	start_server "r$i" --token-file "$SERVE_TMP/tokens" --max-concurrent 2 || exit 0
	RPID[i]=$SRV_PID RPORT[i]=$PORT RLOG[i]=$SRV_LOG
done
execs() { grep -c '"path":"/exec"' "${RLOG[$1]}"; }
counts() { echo "$(execs 1) $(execs 2) $(execs 3)"; }

# ---- nginx, from deploy/nginx/ward.conf ----
NGX_PORT=$(free_port)
sed -e "s/server 10\.0\.0\.11:8900 /server 127.0.0.1:${RPORT[1]} /" \
    -e "s/server 10\.0\.0\.12:8900 /server 127.0.0.1:${RPORT[2]} /" \
    -e "s/server 10\.0\.0\.13:8900 /server 127.0.0.1:${RPORT[3]} /" \
    -e "s/^\(\s*\)listen 8900;/\1listen 127.0.0.1:$NGX_PORT;/" \
    -e "s#/var/log/nginx/ward.log#$LB/nginx-access.log#" \
    "$ROOT/deploy/nginx/ward.conf" >"$LB/ward.conf"
changed=$(diff "$ROOT/deploy/nginx/ward.conf" "$LB/ward.conf" | grep -c '^>')
# (each runner's address is on two lines: ward_runners and its sessions' upstream)
expect_eq "fleet: nginx runs the shipped ward.conf, 8 lines adapted" 8 "$changed"
# the main context a packaged nginx.conf would give, in a temp dir
cat >"$LB/nginx.conf" <<EOF
daemon off;
worker_processes 1;
pid $LB/nginx.pid;
error_log $LB/nginx-error.log info;
events { worker_connections 512; }
http {
	client_body_temp_path $LB/body;
	proxy_temp_path $LB/proxy;
	fastcgi_temp_path $LB/fastcgi;
	uwsgi_temp_path $LB/uwsgi;
	scgi_temp_path $LB/scgi;
	include $LB/ward.conf;
}
EOF
NGX=(-p "$LB/" -c "$LB/nginx.conf" -e "$LB/nginx-error.log")
if out=$(timeout 10 "$NGINX" "${NGX[@]}" -t 2>&1); then pass "fleet: nginx -t accepts the config"
else fail "fleet: nginx -t accepts the config" "$out"; exit 0; fi
"$NGINX" "${NGX[@]}" </dev/null >"$LB/nginx.out" 2>&1 &
_LB_PIDS="$_LB_PIDS $!"

# ---- HAProxy, from deploy/haproxy.cfg ----
HAP_PORT=$(free_port)
sed -e "s/server runner1 10\.0\.0\.11:8900$/server runner1 127.0.0.1:${RPORT[1]}/" \
    -e "s/server runner2 10\.0\.0\.12:8900$/server runner2 127.0.0.1:${RPORT[2]}/" \
    -e "s/server runner3 10\.0\.0\.13:8900$/server runner3 127.0.0.1:${RPORT[3]}/" \
    -e "s/^\(\s*\)bind :8900$/\1bind 127.0.0.1:$HAP_PORT/" \
    -e "s/^\(\s*\)bind :49983$/\1bind 127.0.0.1:$(free_port)/" \
    -e "s#^\(\s*\)log /dev/log local0#\1log stderr format raw local0#" \
    "$ROOT/deploy/haproxy.cfg" >"$LB/haproxy.cfg"
changed=$(diff "$ROOT/deploy/haproxy.cfg" "$LB/haproxy.cfg" | grep -c '^>')
# (the E2B frontend's port too: tests/e2b/fleet.sh is the one that uses it)
expect_eq "fleet: HAProxy runs the shipped haproxy.cfg, 6 lines adapted" 6 "$changed"
if out=$(timeout 10 "$HAPROXY" -c -f "$LB/haproxy.cfg" 2>&1); then pass "fleet: haproxy -c accepts the config"
else fail "fleet: haproxy -c accepts the config" "$out"; exit 0; fi
"$HAPROXY" -db -f "$LB/haproxy.cfg" </dev/null >"$LB/haproxy.out" 2>&1 &
_LB_PIDS="$_LB_PIDS $!"

NGX_URL=http://127.0.0.1:$NGX_PORT
HAP_URL=http://127.0.0.1:$HAP_PORT
# lb METHOD URL PATH [CURL ARGS] — "CODE BODY"; bounded
lb() {
	local m=$1 u=$2 p=$3; shift 3
	curl -s --max-time 20 -X "$m" -w '\n%{http_code}' "$@" "$u$p" | {
		local body
		body=$(cat)
		printf '%s %s' "${body##*$'\n'}" "${body%$'\n'*}"
	}
}
# lb_exec URL JSON — POST /exec with the token
lb_exec() {
	lb POST "$1" /exec -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' --data-binary "$2"
}

for u in "$NGX_URL" "$HAP_URL"; do
	up=""
	for _ in $(seq 100); do
		[ "$(code_of "$(lb GET "$u" /health)")" = 200 ] && { up=1; break; }
		sleep 0.1
	done
	if [ -z "$up" ]; then
		fail "fleet: balancer $u up" "$(tail -c 600 "$LB/nginx-error.log" "$LB/nginx.out" "$LB/haproxy.out" 2>&1)"
		exit 0
	fi
done

head -c $((9 << 20)) /dev/zero >"$LB/big"
for lbn in nginx haproxy; do
	[ $lbn = nginx ] && u=$NGX_URL || u=$HAP_URL
	r=$(lb GET "$u" /health)
	expect_eq "fleet/$lbn: GET /health answers 200" 200 "$(code_of "$r")"
	expect_eq "fleet/$lbn: /health is a runner's" ok "$(jget "$(body_of "$r")" 'd["status"]')"

	before=$(counts)
	r=$(lb_exec "$u" '{"command":"echo fleet-$((6*7))"}')
	expect_eq "fleet/$lbn: POST /exec answers 200" 200 "$(code_of "$r")"
	b=$(body_of "$r")
	expect_eq "fleet/$lbn: the §4 result: status, stdout, exit_code" "ok fleet-42 0 False" \
		"$(jget "$b" '" ".join(str(x) for x in (d["status"], d["stdout"].strip(), d["exit_code"], d["timed_out"]))')"
	expect_eq "fleet/$lbn: the §4 result has every member" "" \
		"$(jget "$b" '" ".join(k for k in ("status","exit_code","signal","timed_out","oom_killed","stdout","stderr","stdout_truncated","stderr_truncated","stdout_bytes","stderr_bytes","error","isolation","enforced","usage") if k not in d)')"

	r=$(lb_exec "$u" '{"command":"echo failing >&2; exit 3"}')
	expect_eq "fleet/$lbn: a failing command answers 200 with its status" "200 nonzero 3" \
		"$(code_of "$r") $(jget "$(body_of "$r")" 'd["status"]') $(jget "$(body_of "$r")" 'd["exit_code"]')"
	r=$(lb POST "$u" /exec -H 'Content-Type: application/json' --data-binary '{"command":"echo x"}')
	expect_eq "fleet/$lbn: no token: the runner's 401 comes through" 401 "$(code_of "$r")"
	after=$(counts)
	set -- $before; b1=$1 b2=$2 b3=$3; set -- $after
	expect_eq "fleet/$lbn: each of the 3 requests reached one runner once (no retry)" 3 \
		$(($1 + $2 + $3 - b1 - b2 - b3))
	r=$(lb POST "$u" /exec -H "Authorization: Bearer $TOKEN" --data-binary "@$LB/big")
	expect_eq "fleet/$lbn: a body over 8 MiB: 413 from the balancer, no runner sees it" "413 $after" \
		"$(code_of "$r") $(counts)"

	# spread: sequential requests, least connections with round-robin ties
	before=$(counts); bad=0
	for _ in $(seq 12); do
		r=$(lb_exec "$u" '{"argv":["true"]}')
		[ "$(code_of "$r")" = 200 ] || bad=$((bad + 1))
	done
	after=$(counts)
	expect_eq "fleet/$lbn: 12 requests answered 200" 0 "$bad"
	set -- $before; b1=$1 b2=$2 b3=$3; set -- $after
	d1=$(($1 - b1)) d2=$(($2 - b2)) d3=$(($3 - b3))
	if [ $((d1 + d2 + d3)) -eq 12 ] && [ $d1 -ge 2 ] && [ $d2 -ge 2 ] && [ $d3 -ge 2 ]; then
		pass "fleet/$lbn: 12 requests spread over all 3 runners"
	else
		fail "fleet/$lbn: 12 requests spread over all 3 runners" "runs per runner: $d1 $d2 $d3"
	fi
done

# ---- stop runner 1 while it holds a run; traffic goes on ----
# Three slow runs at once through nginx: least_conn gives each runner one.
before=$(counts)
for i in 1 2 3; do
	lb_exec "$NGX_URL" '{"command":"sleep 2; echo drained"}' >"$LB/slow$i" &
	eval "SLOW$i=\$!"
done
# SIGTERM once runner 1 is running its slow run (its /metrics says so)
for _ in $(seq 100); do
	curl -s --max-time 5 -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:${RPORT[1]}/metrics" |
		grep -q '^ward_in_flight 1$' && break
	sleep 0.05
done
kill -TERM "${RPID[1]}"
bad=""
for i in $(seq 10); do
	for lbn in nginx haproxy; do
		[ $lbn = nginx ] && u=$NGX_URL || u=$HAP_URL
		r=$(lb_exec "$u" '{"argv":["echo","still"]}')
		[ "$(code_of "$r") $(jget "$(body_of "$r")" 'd["stdout"]' 2>/dev/null)" = "200 still" ] ||
			bad="$bad $lbn:$(code_of "$r")"
	done
done
expect_eq "fleet: while runner 1 drains, 20 requests through both balancers answer 200" "" "$bad"
# (upstream="A, B": nginx tried A, then B)
check "fleet/nginx: requests that met runner 1's closed listener went on to another runner" \
	grep -q "upstream=127.0.0.1:${RPORT[1]}, " "$LB/nginx-access.log"
res=""
for i in 1 2 3; do
	eval "wait \$SLOW$i"
	r=$(cat "$LB/slow$i")
	res="$res $(code_of "$r"):$(jget "$(body_of "$r")" 'd["stdout"].strip()' 2>/dev/null)"
done
expect_eq "fleet: the runs in flight, runner 1's included, finish and answer" " 200:drained 200:drained 200:drained" "$res"
for _ in $(seq 300); do kill -0 "${RPID[1]}" 2>/dev/null || break; sleep 0.1; done
wait "${RPID[1]}" 2>/dev/null
expect_eq "fleet: runner 1 exits 0 after draining" 0 "$?"
set -- $before; b1=$1
check "fleet: runner 1 ran a slow run before it stopped" test "$(execs 1)" -gt "$b1"

# runner 1 is gone: everything goes to runners 2 and 3
before=$(counts); bad=0
for i in $(seq 6); do
	for u in "$NGX_URL" "$HAP_URL"; do
		r=$(lb_exec "$u" '{"argv":["true"]}')
		[ "$(code_of "$r")" = 200 ] || bad=$((bad + 1))
	done
done
after=$(counts)
expect_eq "fleet: with runner 1 down, 12 requests answer 200" 0 "$bad"
set -- $before; b2=$2 b3=$3; set -- $after
if [ $(($2 - b2 + $3 - b3)) -eq 12 ] && [ $(($2 - b2)) -ge 1 ] && [ $(($3 - b3)) -ge 1 ]; then
	pass "fleet: runners 2 and 3 take them all"
else
	fail "fleet: runners 2 and 3 take them all" "runs on 2 and 3: $(($2 - b2)) $(($3 - b3))"
fi
for lbn in nginx haproxy; do
	[ $lbn = nginx ] && u=$NGX_URL || u=$HAP_URL
	expect_eq "fleet/$lbn: /health still 200 with runner 1 down" 200 "$(code_of "$(lb GET "$u" /health)")"
done

# HAProxy's active check (GET /health every 2 s, fall 2) takes runner 1 out ...
down=""
for _ in $(seq 300); do  # fall 2 checks 2 s apart, generously bounded
	grep -q 'ward_runners/runner1 is DOWN' "$LB/haproxy.out" && { down=1; break; }
	sleep 0.1
done
check "fleet/haproxy: its health check marks the stopped runner DOWN" test -n "$down"
# ... and brings it back when a runner answers /health on that address again
start_server r1b --token-file "$SERVE_TMP/tokens" --listen "127.0.0.1:${RPORT[1]}" || exit 0
R1B_LOG=$SRV_LOG
up=""
for _ in $(seq 300); do  # rise 2 checks 2 s apart, generously bounded for a loaded host
	grep -q 'ward_runners/runner1 is UP' "$LB/haproxy.out" && { up=1; break; }
	sleep 0.1
done
check "fleet/haproxy: a runner back on that address is marked UP" test -n "$up"
for _ in $(seq 6); do lb_exec "$HAP_URL" '{"argv":["true"]}' >/dev/null; done
check "fleet/haproxy: the runner back in rotation gets requests" \
	test "$(grep -c '"path":"/exec"' "$R1B_LOG")" -ge 1

# ---- an unhealthy runner (its probe sandbox fails: every /exec is 503) ----
stop_server "$SRV_PID"
WARD_ALLOW_APPLICATION= start_server r1u --token-file "$SERVE_TMP/tokens" --listen "127.0.0.1:${RPORT[1]}" \
	--isolation application || exit 0
bad=""
# nginx tries runner 1's address again once fail_timeout (10 s) has passed
# since its last failure there; HAProxy's check sees the 503 within ~4 s.
for _ in $(seq 60); do
	for lbn in nginx haproxy; do
		[ $lbn = nginx ] && u=$NGX_URL || u=$HAP_URL
		r=$(lb_exec "$u" '{"argv":["echo","elsewhere"]}')
		[ "$(code_of "$r") $(jget "$(body_of "$r")" 'd["stdout"]' 2>/dev/null)" = "200 elsewhere" ] ||
			bad="$bad $lbn:$(code_of "$r")"
	done
	grep -q "upstream=127.0.0.1:${RPORT[1]}, .* upstream_status=503, 200 " "$LB/nginx-access.log" &&
		grep -q 'ward_runners/runner1 is DOWN, reason: Layer7 wrong status, code: 503' "$LB/haproxy.out" && break
	sleep 0.25
done
expect_eq "fleet: with runner 1 unhealthy, requests through both balancers answer 200" "" "$bad"
check "fleet/nginx: a runner's 503 sends the POST on to another runner" \
	grep -q "upstream=127.0.0.1:${RPORT[1]}, .* upstream_status=503, 200 " "$LB/nginx-access.log"
check "fleet/haproxy: its health check takes out a runner whose /health is 503" \
	grep -q 'ward_runners/runner1 is DOWN, reason: Layer7 wrong status, code: 503' "$LB/haproxy.out"

# ---- no runner at all: a prompt error, not a hang ----
stop_server "$SRV_PID"; stop_server "${RPID[2]}"; stop_server "${RPID[3]}"
start=$(date +%s)
r=$(lb_exec "$NGX_URL" '{"argv":["true"]}')
expect_eq "fleet/nginx: no runner reachable: 502" 502 "$(code_of "$r")"
r=$(lb_exec "$HAP_URL" '{"argv":["true"]}')
expect_eq "fleet/haproxy: no runner reachable: 503" 503 "$(code_of "$r")"
check "fleet: both answered within 10 s" test $(($(date +%s) - start)) -le 10
