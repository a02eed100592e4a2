#!/bin/bash
# SPEC §11 in a fleet: a session lives in one runner's memory, so every
# call of it must reach that runner.  HAProxy and nginx from the shipped
# deploy/haproxy.cfg and deploy/nginx/ward.conf (only the runners'
# addresses, the bind/listen line and the log target replaced) in front of
# three runners whose node ids are the files' runner names (runner1,
# runner2, runner3).
#
# Part 1 checks the CONFIGURATION with stand-ins: a tiny Python HTTP server
# per "runner" that answers its node id.  It needs no sessions in ward:
# each balancer routes /sessions/runner2.<hex>/... to the runner runner2
# and nowhere else, spreads new sessions and one-shot runs, refuses GET
# /sessions without ?node=, never sends a session call again (on a 503 or
# no answer), and answers 503 for the sessions of a killed runner without
# ever asking another.
# Part 1b checks deploy/kubernetes/ward.yaml's sessions StatefulSet against
# itself.
# Part 2 runs three real `ward serve --node-id runnerN`: sessions made
# through the balancers land on several runners and keep working through
# both; SIGKILL of one runner loses its sessions only (404 or 503, never a
# 200 from another runner) and kills their processes.  Where this ward has
# no sessions yet it says so in one FAIL line (SPEC §11).
. "$(dirname "$0")/lib.bash"

FLEET_NAME="fleet sessions"
. "$(dirname "$0")/fleet.bash"

# lb BALANCER METHOD PATH [CURL ARGS] — "CODE BODY" through haproxy or nginx; bounded
declare -A LB_URL LB_PID
lb() {
	local u=${LB_URL[$1]} m=$2 p=$3
	shift 3
	curl -s --max-time 20 -X "$m" -w '\n%{http_code}' "$@" "$u$p" | {
		local body
		body=$(cat)
		printf '%s %s' "${body##*$'\n'}" "${body%$'\n'*}"
	}
}

# lb_up BALANCER LOG — waits for GET /health through it
lb_up() {
	local _
	for _ in $(seq 100); do
		[ "$(code_of "$(lb "$1" GET /health)")" = 200 ] && return 0
		sleep 0.1
	done
	fail "fleet sessions: $1 up" "$(tail -c 600 "$2")"
	return 1
}

# start_balancers NAME PORT1 PORT2 PORT3 — HAProxy and nginx from the
# shipped files, runnerN at 127.0.0.1:PORTN; sets LB_URL, LB_PID, HAP_OUT
start_balancers() {
	local name=$1 port changed out d
	shift
	port=$(free_port)
	sed -e "s/server runner1 10\.0\.0\.11:8900$/server runner1 127.0.0.1:$1/" \
	    -e "s/server runner2 10\.0\.0\.12:8900$/server runner2 127.0.0.1:$2/" \
	    -e "s/server runner3 10\.0\.0\.13:8900$/server runner3 127.0.0.1:$3/" \
	    -e "s/^\(\s*\)bind :8900$/\1bind 127.0.0.1:$port/" \
	    -e "s/^\(\s*\)bind :49983$/\1bind 127.0.0.1:$(free_port)/" \
	    -e "s#^\(\s*\)log /dev/log local0#\1log stderr format raw local0#" \
	    "$ROOT/deploy/haproxy.cfg" >"$LB/$name-haproxy.cfg"
	changed=$(diff "$ROOT/deploy/haproxy.cfg" "$LB/$name-haproxy.cfg" | grep -c '^>')
	expect_eq "fleet sessions/$name: HAProxy runs the shipped haproxy.cfg, 6 lines adapted" 6 "$changed"
	if out=$(timeout 10 "$HAPROXY" -c -f "$LB/$name-haproxy.cfg" 2>&1); then
		pass "fleet sessions/$name: haproxy -c accepts the config"
	else
		fail "fleet sessions/$name: haproxy -c accepts the config" "$out"
		return 1
	fi
	HAP_OUT=$LB/$name-haproxy.out
	"$HAPROXY" -db -f "$LB/$name-haproxy.cfg" </dev/null >"$HAP_OUT" 2>&1 &
	LB_PID[haproxy]=$!
	_LB_PIDS="$_LB_PIDS $!"
	LB_URL[haproxy]=http://127.0.0.1:$port

	port=$(free_port)
	d=$LB/$name-nginx
	mkdir -p "$d"
	# each runner's address is on two lines: in ward_runners and in its own upstream
	sed -e "s/server 10\.0\.0\.11:8900 /server 127.0.0.1:$1 /" \
	    -e "s/server 10\.0\.0\.12:8900 /server 127.0.0.1:$2 /" \
	    -e "s/server 10\.0\.0\.13:8900 /server 127.0.0.1:$3 /" \
	    -e "s/^\(\s*\)listen 8900;/\1listen 127.0.0.1:$port;/" \
	    -e "s#/var/log/nginx/ward.log#$d/access.log#" \
	    "$ROOT/deploy/nginx/ward.conf" >"$d/ward.conf"
	changed=$(diff "$ROOT/deploy/nginx/ward.conf" "$d/ward.conf" | grep -c '^>')
	expect_eq "fleet sessions/$name: nginx runs the shipped ward.conf, 8 lines adapted" 8 "$changed"
	cat >"$d/nginx.conf" <<EOF
daemon off;
worker_processes 1;
pid $d/nginx.pid;
error_log $d/error.log info;
events { worker_connections 512; }
http {
	client_body_temp_path $d/body;
	proxy_temp_path $d/proxy;
	fastcgi_temp_path $d/fastcgi;
	uwsgi_temp_path $d/uwsgi;
	scgi_temp_path $d/scgi;
	include $d/ward.conf;
}
EOF
	local ngx=(-p "$d/" -c "$d/nginx.conf" -e "$d/error.log")
	if out=$(timeout 10 "$NGINX" "${ngx[@]}" -t 2>&1); then
		pass "fleet sessions/$name: nginx -t accepts the config"
	else
		fail "fleet sessions/$name: nginx -t accepts the config" "$out"
		return 1
	fi
	"$NGINX" "${ngx[@]}" </dev/null >"$d/nginx.out" 2>&1 &
	LB_PID[nginx]=$!
	_LB_PIDS="$_LB_PIDS $!"
	LB_URL[nginx]=http://127.0.0.1:$port
	lb_up haproxy "$HAP_OUT" && lb_up nginx "$d/error.log"
}

stop_balancers() {
	local B
	for B in haproxy nginx; do kill -TERM "${LB_PID[$B]}" 2>/dev/null; done
	for B in haproxy nginx; do wait "${LB_PID[$B]}" 2>/dev/null; done
}

HEX=0123456789abcdef0123456789abcdef

# ================= part 1: the configuration, with stand-in runners =================
cat >"$LB/standin.py" <<'PY'
# A stand-in runner: answers every request with its node id, and logs
# "METHOD PATH" of each (but GET /health) to its log.  It plays a runner
# that holds sessions NODE.*: other ids answer 404, as a real runner would.
# X-Standin: 503 makes it answer 503; X-Standin: close, nothing at all.
import http.server, json, os, sys, threading

node, portfile, logfile = sys.argv[1:4]
lock = threading.Lock()

class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def answer(self, code, obj):
        b = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)

    def any(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            self.rfile.read(n)
        path, _, query = self.path.partition("?")
        if path != "/health":
            with lock, open(logfile, "a") as f:
                f.write("%s %s\n" % (self.command, self.path))
        how = self.headers.get("X-Standin", "")
        if how == "close":
            self.close_connection = True
            return
        if how == "503":
            return self.answer(503, {"error": "stand-in: unhealthy"})
        if path == "/health":
            return self.answer(200, {"status": "ok", "node": node})
        if self.command == "POST" and path == "/sessions":
            return self.answer(201, {"id": node + "." + os.urandom(16).hex(), "node": node})
        if path.startswith("/sessions/") and path.split("/")[2]:
            if not path.split("/")[2].startswith(node + "."):
                return self.answer(404, {"error": "no such session", "node": node})
        if path.rstrip("/") == "/sessions" and "node=" in query and "node=" + node not in query:
            return self.answer(404, {"error": "another node", "node": node})
        self.answer(200, {"node": node, "method": self.command, "path": self.path})

    do_GET = do_POST = do_PUT = do_DELETE = any

srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
with open(portfile + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(portfile + ".tmp", portfile)
srv.serve_forever()
PY

declare -a SPID SPORT
for i in 1 2 3; do
	: >"$LB/standin$i.log"
	python3 "$LB/standin.py" "runner$i" "$LB/standin$i.port" "$LB/standin$i.log" </dev/null >"$LB/standin$i.out" 2>&1 &
	SPID[i]=$!
	_LB_PIDS="$_LB_PIDS ${SPID[i]}"
done
for i in 1 2 3; do
	wait_for test -s "$LB/standin$i.port" || { fail "fleet sessions: stand-in $i up" "$(cat "$LB/standin$i.out")"; exit 0; }
	SPORT[i]=$(cat "$LB/standin$i.port")
done
start_balancers standins "${SPORT[1]}" "${SPORT[2]}" "${SPORT[3]}" || exit 0

# seen N STRING — how many lines of stand-in N's log hold STRING
seen() { grep -cF -- "$2" "$LB/standin$1.log"; }
all_seen() { cat "$LB"/standin?.log | wc -l; }
node_of() { jg "$(body_of "$1")" 'd.get("node", "<none>")'; }

for B in haproxy nginx; do
	C="fleet sessions/config/$B"
	# every kind of call of a session, for each runner's sessions
	before=$(all_seen) bad=""
	for i in 1 2 3; do
		sid=runner$i.$HEX
		for call in "GET /sessions/$sid" "DELETE /sessions/$sid" "POST /sessions/$sid/exec" \
			"PUT /sessions/$sid/files/dir/a%20b.txt" "GET /sessions/$sid/files/" \
			"DELETE /sessions/$sid/files/x" "GET /sessions/$sid/processes" \
			"GET /sessions/$sid/processes/7/output?follow=1" "POST /sessions/$sid/processes/7/stdin?close=1" \
			"POST /sessions/$sid/processes/7/signal"; do
			set -- $call
			r=$(lb $B "$1" "$2" --data-binary x)
			got="$(code_of "$r") $(node_of "$r")"
			[ "$got" = "200 runner$i" ] || bad="$bad [$call: $got]"
		done
	done
	expect_eq "$C: routes /sessions/runnerN.<hex>/... to the runner runnerN (30 calls, 10 kinds)" "" "$bad"
	bad=""
	for i in 1 2 3; do
		for j in 1 2 3; do
			[ $i = $j ] && continue
			n=$(seen "$j" "/sessions/runner$i.")
			[ "$n" = 0 ] || bad="$bad runner$i's calls on runner$j: $n"
		done
	done
	expect_eq "$C: no call of a session reached another runner, none came twice" " $((before + 30))" "$bad $(all_seen)"

	# new sessions and one-shot runs: least connections over all runners
	unset made ran
	declare -A made ran
	for _ in $(seq 9); do
		r=$(lb $B POST /sessions -H 'Content-Type: application/json' --data-binary '{}')
		[ "$(code_of "$r")" = 201 ] && made[$(node_of "$r")]=1
	done
	check "$C: 9 POST /sessions land on at least 2 runners (got: ${!made[*]})" test "${#made[@]}" -ge 2
	for _ in $(seq 6); do
		r=$(lb $B POST /exec --data-binary '{"argv":["true"]}')
		[ "$(code_of "$r")" = 200 ] && ran[$(node_of "$r")]=1
	done
	check "$C: 6 POST /exec land on at least 2 runners (got: ${!ran[*]})" test "${#ran[@]}" -ge 2

	# the caller's list: one runner's, with ?node=
	before=$(all_seen)
	r=$(lb $B GET '/sessions?node=runner2')
	expect_eq "$C: GET /sessions?node=runner2 goes to runner2" "200 runner2" "$(code_of "$r") $(node_of "$r")"
	r=$(lb $B GET '/sessions?limit=5&node=runner3')
	expect_eq "$C: GET /sessions?...&node=runner3 goes to runner3" "200 runner3" "$(code_of "$r") $(node_of "$r")"
	for q in /sessions /sessions/ '/sessions?node=' '/sessions?node=run%20ner1' '/sessions?node=a.b' \
		'/sessions?xnode=runner1' "/sessions?node=$(printf 'x%.0s' $(seq 64))"; do
		r=$(lb $B GET "$q")
		expect_eq "$C: GET $q: 400 from the balancer, naming ?node=" "400 true" \
			"$(code_of "$r") $(jg "$(body_of "$r")" '"?node=NODEID" in d["error"]')"
	done
	expect_eq "$C: a list with no node reaches no runner" $((before + 2)) "$(all_seen)"

	# ids that name no runner: some runner answers its 404, as for any unknown id
	long=$(printf 'x%.0s' $(seq 64))
	for sid in "nobody.$HEX" "$long.$HEX" "runner2%2E$HEX" "runner2"; do
		r=$(lb $B POST "/sessions/$sid/exec" --data-binary '{}')
		expect_eq "$C: /sessions/$sid/exec names no runner: a runner's 404" 404 "$(code_of "$r")"
	done

	# a session call is sent once: not again on the runner's 503, nor when
	# it gets no answer at all (an exec in a session must not run twice)
	for how in 503 close; do
		tag="/sessions/runner3.$HEX/exec?$B-$how"
		before=$(seen 3 "$tag") others=$(($(seen 1 "$B-$how") + $(seen 2 "$B-$how")))
		r=$(lb $B POST "$tag" -H "X-Standin: $how" --data-binary '{}')
		want=503
		[ $how = close ] && [ $B = haproxy ] && want=502
		expect_eq "$C: runner3 answers a session call with [$how]: the client gets $want, runner3 saw it once, no other runner" \
			"$want 1 $others" "$(code_of "$r") $(($(seen 3 "$tag") - before)) $(($(seen 1 "$B-$how") + $(seen 2 "$B-$how")))"
	done
done

# runner2 dies (SIGKILL): its sessions' calls answer 503 from both
# balancers, before and after HAProxy's health check marks it DOWN; none
# reaches another runner; the others go on
{ kill -KILL "${SPID[2]}"; wait "${SPID[2]}"; } 2>/dev/null
dead_calls() {
	local bad="" r B
	for B in haproxy nginx; do
		for call in "GET /sessions/runner2.$HEX" "POST /sessions/runner2.$HEX/exec" "GET /sessions?node=runner2"; do
			set -- $call
			r=$(lb $B "$1" "$2" --data-binary x)
			[ "$(code_of "$r") $(jg "$(body_of "$r")" '"cannot be reached" in d["error"]')" = "503 true" ] ||
				bad="$bad [$B $call: $(code_of "$r") $(body_of "$r" | head -c 100)]"
		done
	done
	printf '%s' "$bad"
}
o1=$(seen 1 runner2) o3=$(seen 3 runner2)
expect_eq "fleet sessions/config: runner2 killed: its sessions' calls answer 503 (JSON) at once" "" "$(dead_calls)"
check "fleet sessions/config/haproxy: its health check marks runner2 DOWN" wait_for grep -q 'runner2 is DOWN' "$HAP_OUT"
expect_eq "fleet sessions/config: runner2 DOWN: its sessions' calls still answer 503" "" "$(dead_calls)"
expect_eq "fleet sessions/config: none of runner2's calls reached runner1 or runner3" "$o1 $o3" "$(seen 1 runner2) $(seen 3 runner2)"
for B in haproxy nginx; do
	bad=""
	for i in 1 3; do
		r=$(lb $B POST "/sessions/runner$i.$HEX/exec" --data-binary '{}')
		[ "$(code_of "$r") $(node_of "$r")" = "200 runner$i" ] || bad="$bad runner$i:$(code_of "$r")"
	done
	expect_eq "fleet sessions/config/$B: the other runners' sessions go on" "" "$bad"
	bad=""
	for _ in $(seq 6); do
		r=$(lb $B POST /sessions --data-binary '{}')
		case "$(code_of "$r") $(node_of "$r")" in
		"201 runner1" | "201 runner3") ;;
		*) bad="$bad $(code_of "$r"):$(node_of "$r")" ;;
		esac
	done
	expect_eq "fleet sessions/config/$B: new sessions go to the runners that are up" "" "$bad"
done
stop_balancers

# ================= part 1b: the Kubernetes StatefulSet for sessions =================
K8S=$(/usr/bin/python3 - "$ROOT/deploy/kubernetes/ward.yaml" <<'PY' 2>&1
import sys, yaml
docs = {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(open(sys.argv[1])) if d}
bad = []
sts = docs.get(("StatefulSet", "ward-sessions"))
if not sts:
    print("BAD no StatefulSet ward-sessions"); sys.exit(0)
pods = docs.get(("Service", sts["spec"].get("serviceName", "")))
new = docs.get(("Service", "ward-sessions"))
tmpl = sts["spec"]["template"]
c = tmpl["spec"]["containers"][0]
args, labels = c["args"], tmpl["metadata"]["labels"]
opt = lambda name: args[args.index(name) + 1] if name in args else None
env = {e["name"]: e for e in c.get("env", [])}
if args[0] != "serve": bad.append("args do not start with serve")
if opt("--node-id") != "$(POD_NAME)": bad.append("--node-id is not $(POD_NAME)")
if env.get("POD_NAME", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") != "metadata.name":
    bad.append("POD_NAME is not the downward API's metadata.name")
if not pods: bad.append("serviceName names no Service")
elif pods["spec"].get("clusterIP") != "None": bad.append("the pods' Service is not headless")
for svc in (pods, new):
    if svc and any(labels.get(k) != v for k, v in svc["spec"]["selector"].items()):
        bad.append(svc["metadata"]["name"] + "'s selector misses the pods")
if sts["spec"]["selector"]["matchLabels"] != (new or {}).get("spec", {}).get("selector"):
    bad.append("StatefulSet and Service selectors differ")
if not new: bad.append("no Service ward-sessions for new sessions")
name = sts["metadata"]["name"]
if len(name) + 1 + len(str(sts["spec"]["replicas"])) > 63: bad.append("pod names would be over 63 characters")
if c.get("readinessProbe", {}).get("httpGet", {}).get("path") != "/health": bad.append("no readinessProbe on /health")
if "memory" not in c.get("resources", {}).get("limits", {}): bad.append("no memory limit")
if bad: print("BAD " + "; ".join(bad)); sys.exit(0)
for i, a in enumerate(args[1:], 1):
    prev = args[i - 1]
    print("127.0.0.1:0" if prev == "--listen" else "TOKENFILE" if prev == "--token-file" else
          "ward-sessions-0" if a == "$(POD_NAME)" else a)
PY
)
case "$K8S" in
BAD* | *Error* | *Traceback*) fail "fleet sessions/k8s: the sessions StatefulSet is consistent" "$K8S" ;;
*) pass "fleet sessions/k8s: the sessions StatefulSet is consistent (node id = pod name, headless Service, selectors, probe, limits)" ;;
esac


# ================= part 2: real runners =================
TOKEN=fleet-sessions-$RANDOM$RANDOM
echo "app $TOKEN" >"$SERVE_TMP/tokens"
AUTH=(-H "Authorization: Bearer $TOKEN")
JSON=(-H 'Content-Type: application/json')

start_server probe --token-file "$SERVE_TMP/tokens" || exit 0
r=$(http POST /sessions "${AUTH[@]}" "${JSON[@]}" --data-binary '{}')
if [ "$(code_of "$r")" = 404 ] || [ "$(code_of "$r")" = 405 ]; then
	fail "fleet sessions: the runner has no sessions (SPEC §11)" "POST /sessions answered $(code_of "$r")"
	exit 0
fi
stop_server "$SRV_PID"

# the StatefulSet's own arguments start a runner whose ids begin with the pod name
case "$K8S" in
BAD* | *Error* | *Traceback*) ;;
*)
	echo "k8s k8s-token" >"$SERVE_TMP/k8s-tokens"
	mapfile -t KARGS < <(printf '%s\n' "$K8S" | sed "s#^TOKENFILE\$#$SERVE_TMP/k8s-tokens#")
	if start_server k8s "${KARGS[@]}"; then
		r=$(http POST /sessions -H 'Authorization: Bearer k8s-token' "${JSON[@]}" --data-binary '{}')
		expect_eq "fleet sessions/k8s: a runner with the StatefulSet's args makes ids ward-sessions-0.<32 hex>" "201 true" \
			"$(code_of "$r") $(jg "$(body_of "$r")" '__import__("re").fullmatch(r"ward-sessions-0\.[0-9a-f]{32}", d["id"]) is not None')"
		stop_server "$SRV_PID"
	fi ;;
esac

declare -a RPID RPORT RLOG
for i in 1 2 3; do
	start_server "r$i" --token-file "$SERVE_TMP/tokens" --node-id "runner$i" || exit 0
	RPID[i]=$SRV_PID RPORT[i]=$PORT RLOG[i]=$SRV_LOG
done
bad=""
for i in 1 2 3; do
	r=$(curl -s --max-time 10 "http://127.0.0.1:${RPORT[i]}/health")
	[ "$(jg "$r" 'd.get("node")')" = "runner$i" ] || bad="$bad [runner$i: $(printf '%s' "$r" | head -c 200)]"
done
expect_eq "fleet sessions: each runner's /health names its node id" "" "$bad"
start_balancers runners "${RPORT[1]}" "${RPORT[2]}" "${RPORT[3]}" || exit 0
other() { [ "$1" = haproxy ] && echo nginx || echo haproxy; }

# six sessions through each balancer
declare -a SIDS
declare -A MADE_BY
bad=""
for B in haproxy nginx; do
	for _ in $(seq 6); do
		r=$(lb $B POST /sessions "${AUTH[@]}" "${JSON[@]}" --data-binary '{"ttl_s":600,"idle_s":300}')
		id=$(jg "$(body_of "$r")" 'd.get("id", "")')
		if [ "$(code_of "$r")" = 201 ] && [[ $id =~ ^runner[123]\.[0-9a-f]{32}$ ]]; then
			SIDS+=("$id")
			MADE_BY[$id]=$B
		else
			bad="$bad [$B: $(code_of "$r") $(body_of "$r" | head -c 200)]"
		fi
	done
done
expect_eq "fleet sessions: 12 POST /sessions through the balancers answer 201, ids runnerN.<32 hex>" "" "$bad"
[ "${#SIDS[@]}" -ge 2 ] || exit 0
declare -A nodes
for id in "${SIDS[@]}"; do nodes[${id%%.*}]=1; done
check "fleet sessions: they land on at least 2 runners (got: ${!nodes[*]})" test "${#nodes[@]}" -ge 2

# each keeps working through both balancers: a file written, an exec that
# reads it and leaves a mark in /tmp, a second exec that reads the mark
bad=""
for id in "${SIDS[@]}"; do
	B=${MADE_BY[$id]} O=$(other "${MADE_BY[$id]}")
	r=$(lb $B PUT "/sessions/$id/files/marker.txt" "${AUTH[@]}" --data-binary "marker-of-$id")
	[ "$(code_of "$r")" = 201 ] || bad="$bad [$id put: $(code_of "$r")]"
	r=$(lb $O POST "/sessions/$id/exec" "${AUTH[@]}" "${JSON[@]}" --data-binary '{"command":"cat marker.txt; echo; echo $$ >/tmp/first-exec"}')
	[ "$(code_of "$r") $(jg "$(body_of "$r")" 'd["stdout"].strip()')" = "200 marker-of-$id" ] ||
		bad="$bad [$id exec: $(code_of "$r") $(body_of "$r" | head -c 200)]"
	r=$(lb $B POST "/sessions/$id/exec" "${AUTH[@]}" "${JSON[@]}" --data-binary '{"argv":["cat","/tmp/first-exec"]}')
	[ "$(code_of "$r") $(jg "$(body_of "$r")" 'd["stdout"].strip().isdigit()')" = "200 true" ] ||
		bad="$bad [$id second exec: $(code_of "$r") $(body_of "$r" | head -c 200)]"
	r=$(lb $O GET "/sessions/$id" "${AUTH[@]}")
	[ "$(code_of "$r") $(jg "$(body_of "$r")" 'd["id"] + " " + str(d["execs"])')" = "200 $id 2" ] ||
		bad="$bad [$id info: $(code_of "$r") $(body_of "$r" | head -c 200)]"
done
expect_eq "fleet sessions: each session works through both balancers (its file, its /tmp, GET /sessions/{id}: 2 execs)" "" "$bad"
bad=""
for id in "${SIDS[@]}"; do
	n=${id%%.*}
	n=${n#runner}
	for i in 1 2 3; do
		[ "$i" = "$n" ] && continue
		grep -qF "$id" "${RLOG[i]}" && bad="$bad $id-in-runner$i's-log"
	done
	grep -qF "$id" "${RLOG[n]}" || bad="$bad $id-not-in-its-runner's-log"
done
expect_eq "fleet sessions: every call of a session reached its own runner only (the runners' logs)" "" "$bad"

# the caller's list, per runner through the balancers
for B in haproxy nginx; do
	bad=""
	for n in "${!nodes[@]}"; do
		want=$(printf '%s\n' "${SIDS[@]}" | grep "^$n\." | sort | tr '\n' ' ')
		r=$(lb $B GET "/sessions?node=$n" "${AUTH[@]}")
		got=$(jg "$(body_of "$r")" '" ".join(sorted(s["id"] for s in d)) + " "')
		[ "$(code_of "$r") $got" = "200 $want" ] || bad="$bad [$n: $(code_of "$r") $got]"
	done
	expect_eq "fleet sessions/$B: GET /sessions?node=N lists exactly N's sessions" "" "$bad"
	r=$(lb $B GET /sessions "${AUTH[@]}")
	expect_eq "fleet sessions/$B: GET /sessions without ?node=: 400" 400 "$(code_of "$r")"
done
r=$(curl -s --max-time 10 -w '\n%{http_code}' "${AUTH[@]}" "http://127.0.0.1:${RPORT[1]}/sessions?node=runner2" | tail -1)
expect_eq "fleet sessions: a runner asked for another node's list answers 404" 404 "$r"

# SIGKILL the runner of the first session; a background process there marks it
victim=${SIDS[0]%%.*}
v=${victim#runner}
MARK=$((900000 + RANDOM))
r=$(lb haproxy POST "/sessions/${SIDS[0]}/exec" "${AUTH[@]}" "${JSON[@]}" \
	--data-binary "{\"argv\":[\"sleep\",\"$MARK\"],\"background\":true}")
expect_eq "fleet sessions: a background process in one of $victim's sessions" 202 "$(code_of "$r")"
marker_up() { [ -n "$(marker_pids "$MARK")" ]; }
marker_gone() { [ -z "$(marker_pids "$MARK")" ]; }
wait_for marker_up
check "fleet sessions: it runs" marker_up
{ kill -KILL "${RPID[v]}"; wait "${RPID[v]}"; } 2>/dev/null
declare -A before_kill
for i in 1 2 3; do before_kill[$i]=$(wc -l <"${RLOG[i]}"); done
lost="" kept="" bad=""
for id in "${SIDS[@]}"; do
	if [ "${id%%.*}" != "$victim" ]; then
		kept="$kept $id"
		continue
	fi
	lost="$lost $id"
	for B in haproxy nginx; do
		for call in "GET /sessions/$id" "POST /sessions/$id/exec" "GET /sessions/$id/files/marker.txt"; do
			set -- $call
			r=$(lb $B "$1" "$2" "${AUTH[@]}" "${JSON[@]}" --data-binary '{"argv":["true"]}')
			case "$(code_of "$r")" in 404 | 503) ;; *) bad="$bad [$B $call: $(code_of "$r")]" ;; esac
		done
	done
done
expect_eq "fleet sessions: $victim killed: its sessions' calls answer 404 or 503, never 200" "" "$bad"
bad=""
for i in 1 2 3; do
	[ "$i" = "$v" ] && continue
	for id in $lost; do
		tail -n +"$((before_kill[$i] + 1))" "${RLOG[i]}" | grep -qF "$id" && bad="$bad $id-on-runner$i"
	done
done
expect_eq "fleet sessions: none of those calls reached another runner" "" "$bad"
bad=""
for id in $kept; do
	for B in haproxy nginx; do
		r=$(lb $B POST "/sessions/$id/exec" "${AUTH[@]}" "${JSON[@]}" --data-binary '{"argv":["cat","marker.txt"]}')
		[ "$(code_of "$r") $(jg "$(body_of "$r")" 'd["stdout"]')" = "200 marker-of-$id" ] || bad="$bad [$B $id: $(code_of "$r")]"
	done
done
expect_eq "fleet sessions: the other runners' sessions go on through both balancers" "" "$bad"
wait_for marker_gone
expect_eq "fleet sessions: the killed runner's session processes died with it" "" "$(marker_pids "$MARK")"
bad=""
for B in haproxy nginx; do
	for _ in $(seq 3); do
		r=$(lb $B POST /sessions "${AUTH[@]}" "${JSON[@]}" --data-binary '{}')
		id=$(jg "$(body_of "$r")" 'd.get("id", "")')
		if [ "$(code_of "$r")" = 201 ] && [ "${id%%.*}" != "$victim" ]; then
			kept="$kept $id"
		else
			bad="$bad [$B: $(code_of "$r") $id]"
		fi
	done
done
expect_eq "fleet sessions: new sessions go to the runners left" "" "$bad"
bad=""
for id in $kept; do
	[ "$(code_of "$(lb haproxy DELETE "/sessions/$id" "${AUTH[@]}")")" = 204 ] || bad="$bad [$id delete]"
	[ "$(code_of "$(lb nginx GET "/sessions/$id" "${AUTH[@]}")")" = 404 ] || bad="$bad [$id after delete]"
done
expect_eq "fleet sessions: DELETE through the balancer: 204, then 404" "" "$bad"
