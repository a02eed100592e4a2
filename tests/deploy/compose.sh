#!/bin/bash
# tests/deploy/compose.sh — deploy/compose.yaml brought up with Debian's
# docker-compose (1.29) from ward's image (SPEC §20): three runners behind
# HAProxy (the shipped haproxy.cfg, unchanged, and
# compose/haproxy-dialects.cfg) with the native API, Piston, Judge0 and E2B.
# Checks, all through the balancer's published ports: requests spread over
# the runners; sessions and E2B sandboxes (the real SDK, tests/e2b/fleet.mjs)
# stay on the runner that made them; stopping one runner's container loses
# only what it held; `down` leaves no process, cgroup or mount on the host.
set -u
. "$(dirname "$0")/lib.bash"
. "$ROOT/tests/e2b/lib.bash"
COMPOSE=/usr/bin/docker-compose
[ -x "$COMPOSE" ] || cannot_run "Debian's docker-compose is not installed (apt-get install docker-compose)"
docker_up
image_up

# one Compose fleet at a time on this daemon: the file's network is 10.0.0.0/24
exec 8>"$WARD_DOCKER_DIR/.compose-lock"
flock 8
T=$(mktemp -d /tmp/ward-compose.XXXXXX)
PROJ=wardtest$$
TOKEN=sekrit-alice-0123456789
printf 'alice %s\n' "$TOKEN" >"$T/tokens"
export WARD_TOKENS=$T/tokens WARD_PORT=127.0.0.1: WARD_PISTON_PORT=127.0.0.1: WARD_JUDGE0_PORT=127.0.0.1: \
	WARD_E2B_PORT=127.0.0.1:
# each runner a cgroup subtree of its own, as compose.yaml's header says
for r in runner1 runner2 runner3; do "$ROOT/deploy/cgroup-subtree" create "$PROJ-$r"; done
"$ROOT/deploy/cgroup-subtree" compose "$PROJ" runner1 runner2 runner3 >"$T/cgroup.yaml"
dc() { (cd "$ROOT/deploy" && timeout -k 5 300 "$COMPOSE" -p "$PROJ" -f compose.yaml -f "$T/cgroup.yaml" "$@"); }
downed=
cleanup() {
	[ -n "$downed" ] || dc down -v --timeout 10 >/dev/null 2>&1
	for r in runner1 runner2 runner3; do "$ROOT/deploy/cgroup-subtree" remove "$PROJ-$r" 2>/dev/null; done
	rm -rf "$T"
}
trap cleanup EXIT

if ! out=$(dc up -d 2>&1); then
	fail "compose: docker-compose up -d" "$(tail -c 800 <<<"$out")"
	exit 0
fi
pass "compose: docker-compose up -d (Debian's 1.29, no privileged, no capability)"
port_of() { dc port balancer "$1" | sed 's/.*://'; }
NATIVE=http://127.0.0.1:$(port_of 8900) PISTON=http://127.0.0.1:$(port_of 2000)
JUDGE0=http://127.0.0.1:$(port_of 2358) E2B_URL=http://127.0.0.1:$(port_of 49983)
AUTH=(-H "Authorization: Bearer $TOKEN")
req() { curl -s -m 60 "${AUTH[@]}" -o "$T/body" -w '%{http_code}' "$@"; }

# the runners up (each builds its pool, checks its languages), and HAProxy's
# checks seeing all three
up=0
for _ in $(seq 120); do
	[ "$(curl -s -m 5 -o /dev/null -w '%{http_code}' "$NATIVE/health")" = 200 ] && up=$((up + 1))
	[ "$up" -ge 3 ] && break
	sleep 1
done
expect_eq "compose: /health through the balancer" 200 "$(req "$NATIVE/health")"
sleep 5 # every runner through HAProxy's "rise 2"

# ---- the native API: a run comes through, and runs spread ----
code=$(req -d '{"argv": ["python3", "-c", "print(6*7)"]}' "$NATIVE/exec")
expect_eq "compose: POST /exec through the balancer" "200 ok 42" "$code $(jg "$(cat "$T/body")" 'd["status"] + " " + d["stdout"].strip()')"
for _ in $(seq 12); do req -d '{"argv": ["true"]}' "$NATIVE/exec" >/dev/null; done
served=0
for r in runner1 runner2 runner3; do
	n=$(dc logs --no-color "$r" 2>/dev/null | grep -c '"path":"/exec"')
	[ "$n" -ge 1 ] && served=$((served + 1))
done
expect_eq "compose: 13 runs spread over all three runners" 3 "$served"

# ---- sessions stay on their runner ----
declare -a SID
for i in 1 2 3 4 5 6; do
	req -d '{"idle_s": 300}' "$NATIVE/sessions" >/dev/null
	SID[$i]=$(jg "$(cat "$T/body")" 'd["id"]')
	req -X PUT --data-binary "session $i" "$NATIVE/sessions/${SID[$i]}/files/who" >/dev/null
done
nodes=$(printf '%s\n' "${SID[@]}" | cut -d. -f1 | sort -u | tr '\n' ' ')
check "compose: sessions made on several runners ($nodes)" test "$(wc -w <<<"$nodes")" -ge 2
ok=0
for i in 1 2 3 4 5 6; do
	code=$(req -d '{"argv": ["cat", "who"]}' "$NATIVE/sessions/${SID[$i]}/exec")
	[ "$code $(jg "$(cat "$T/body")" 'd["stdout"]')" = "200 session $i" ] && ok=$((ok + 1))
done
expect_eq "compose: every session's calls reach its runner (its file is there)" 6 "$ok"

# ---- Piston and Judge0 through the balancer ----
code=$(req -d '{"language": "python", "version": "*", "files": [{"content": "print(6*7)"}]}' "$PISTON/api/v2/execute")
expect_eq "compose: Piston's execute through the balancer" "200 42" "$code $(jg "$(cat "$T/body")" 'd["run"]["stdout"].strip()')"
code=$(curl -s -m 60 -H "X-Auth-Token: $TOKEN" -H 'Content-Type: application/json' -o "$T/body" -w '%{http_code}' \
	-d '{"source_code": "print(6*7)", "language_id": 71}' "$JUDGE0/submissions?wait=true&base64_encoded=false")
expect_eq "compose: Judge0's submission (wait=true) through the balancer" "201 42 Accepted" \
	"$code $(jg "$(cat "$T/body")" 'd["stdout"].strip() + " " + d["status"]["description"]')"
code=$(curl -s -m 60 -H "X-Auth-Token: $TOKEN" -H 'Content-Type: application/json' -o "$T/body" -w '%{http_code}' \
	-d '{"source_code": "print(7*6)", "language_id": 71}' "$JUDGE0/submissions?base64_encoded=false")
tok=$(jg "$(cat "$T/body")" 'd["token"]')
st=
for _ in $(seq 60); do
	curl -s -m 10 -H "X-Auth-Token: $TOKEN" -o "$T/body" "$JUDGE0/submissions/$tok?base64_encoded=false"
	st=$(jg "$(cat "$T/body")" 'd["status"]["id"]')
	[ "$st" -gt 2 ] 2>/dev/null && break
	sleep 0.5
done
expect_eq "compose: a Judge0 token polled through the balancer reaches the runner that holds it" "3 42" \
	"$st $(jg "$(cat "$T/body")" 'd["stdout"].strip()')"

# ---- E2B: the real SDK, sandboxes spread and pinned ----
if node_ready; then
	KEY=$TOKEN sdk fleet.mjs | sed 's/e2b fleet:/compose: e2b:/' || fail "compose: e2b fleet.mjs" "exited"
fi

# ---- a stopped runner loses only what it held ----
victim=$(printf '%s\n' "${SID[@]}" | cut -d. -f1 | sort | uniq -c | sort -rn | awk 'NR == 1 {print $2}')
dc stop --timeout 10 "$victim" >/dev/null 2>&1
sleep 5 # HAProxy's "fall 2"
kept=0 lost=0 others=0
for i in 1 2 3 4 5 6; do
	code=$(req -d '{"argv": ["cat", "who"]}' "$NATIVE/sessions/${SID[$i]}/exec")
	if [ "${SID[$i]%%.*}" = "$victim" ]; then
		[ "$code" = 503 ] && lost=$((lost + 1))
	else
		others=$((others + 1))
		[ "$code $(jg "$(cat "$T/body")" 'd["stdout"]')" = "200 session $i" ] && kept=$((kept + 1))
	fi
done
expect_eq "compose: $victim stopped: the other runners' sessions all still answer" "$others" "$kept"
check "compose: $victim stopped: its own sessions are gone (503), only those" test "$lost" -ge 1 -a $((lost + others)) -eq 6
ok=0
for _ in $(seq 6); do [ "$(req -d '{"argv": ["true"]}' "$NATIVE/exec")" = 200 ] && ok=$((ok + 1)); done
expect_eq "compose: $victim stopped: new runs all go to the others" 6 "$ok"

# ---- down leaves nothing on the host ----
ids=$(dc ps -q -a | tr '\n' ' ')
pids=""
for id in $ids; do
	for f in /sys/fs/cgroup/pids/docker/"$id"*/cgroup.procs; do [ -r "$f" ] && pids="$pids $(cat "$f")"; done
done
check "compose: the runners' and the balancer's processes are known ($(wc -w <<<"$pids") of them)" test -n "$pids"
dc down -v --timeout 30 >/dev/null 2>&1
downed=1
alive=""
for p in $pids; do [ -d /proc/"$p" ] && grep -q docker /proc/"$p"/cgroup 2>/dev/null && alive="$alive $p"; done
expect_eq "compose: down: no process of the fleet is left" "" "$alive"
left=""
for id in $ids; do left="$left$(find /sys/fs/cgroup/*/docker -maxdepth 1 -name "$id*" 2>/dev/null)"; done
expect_eq "compose: down: no cgroup of the fleet is left" "" "$left"
m=""
for id in $ids; do m="$m$(grep -F "$id" /proc/self/mountinfo)"; done
m="$m$(grep -F "${PROJ}_ward-proc" /proc/self/mountinfo)"
expect_eq "compose: down: no mount of the fleet (containers, the proc volume) is left" "" "$m"
busy=$(find /sys/fs/cgroup/*/ward-containers/"$PROJ"-* -name cgroup.procs -size +0 2>/dev/null -exec sh -c '[ -s "$1" ] && [ -n "$(cat "$1")" ] && echo "$1"' _ {} \;)
expect_eq "compose: down: no process left in the runners' cgroup subtrees" "" "$busy"
ok=1
for r in runner1 runner2 runner3; do "$ROOT/deploy/cgroup-subtree" remove "$PROJ-$r" || ok=; done
check "compose: down: the subtrees come away whole (no cgroup ward made is still in use)" test -n "$ok" -a -z "$(ls -d /sys/fs/cgroup/*/ward-containers/"$PROJ"-* 2>/dev/null)"
