#!/bin/bash
# Judge0's callback_url (SPEC §16): a finished submission is PUT, base64
# default fields, to the URL; 3 tries of 5 s; never a redirect; never to a
# loopback, link-local or private address, at submit time nor at send time
# (DNS rebinding), proved by listeners that count every connection.
#
# Callbacks never reach loopback, so the test needs a public address that
# is not the world's: it makes two network namespaces joined by a veth
# pair, A (ward serve, 11.0.0.1, and counting listeners on 127.0.0.1,
# 10.9.9.9 and 169.254.169.254 on its lo) and B (the receiver,
# 11.0.0.2, which outside these namespaces would be a public address), and
# runs ward in A with its own /etc/hosts (a private mount namespace) whose
# names the test rewrites.  No production switch opens loopback for it.
# Bounded: the namespaces, listeners (by pid) and temporary files go when
# the script ends, whatever happens.
if [ -z "${WARD_CB_INNER:-}" ]; then
	if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null || ! command -v unshare >/dev/null; then
		echo "SKIP: needs root, ip and unshare (network namespaces)"
		exit 0
	fi
	NS=wcb$$
	CB_DIR=$(mktemp -d /tmp/ward-cb.XXXXXX)
	pids=""
	cleanup() {
		for p in $pids; do kill "$p" 2>/dev/null; done
		ip netns del "$NS-a" 2>/dev/null
		ip netns del "$NS-b" 2>/dev/null
		rm -rf "$CB_DIR"
	}
	trap cleanup EXIT
	here=$(cd "$(dirname "$0")" && pwd)
	ip netns add "$NS-a" && ip netns add "$NS-b" &&
		ip -n "$NS-a" link set lo up && ip -n "$NS-b" link set lo up &&
		ip link add "${NS}x" type veth peer name "${NS}y" &&
		ip link set "${NS}x" netns "$NS-a" && ip link set "${NS}y" netns "$NS-b" &&
		ip -n "$NS-a" addr add 11.0.0.1/24 dev "${NS}x" && ip -n "$NS-a" link set "${NS}x" up &&
		ip -n "$NS-b" addr add 11.0.0.2/24 dev "${NS}y" && ip -n "$NS-b" link set "${NS}y" up &&
		ip -n "$NS-a" addr add 10.9.9.9/32 dev lo && ip -n "$NS-a" addr add 169.254.169.254/32 dev lo ||
		{ echo "FAIL: judge0 callback: cannot set up the network namespaces"; exit 1; }
	ip netns exec "$NS-b" /usr/bin/python3 "$here/callback_receiver.py" "$CB_DIR" \
		11.0.0.2:8080:ok 11.0.0.2:8081:close 11.0.0.2:8082:hang >/dev/null 2>&1 &
	pids="$pids $!"
	# a name server that takes every question and answers none (a lookup's deadline)
	ip netns exec "$NS-b" /usr/bin/python3 -c 'import socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("11.0.0.2", 53))
t = time.time()
while time.time() - t < 300: s.recvfrom(4096)' >/dev/null 2>&1 &
	pids="$pids $!"
	ip netns exec "$NS-a" /usr/bin/python3 "$here/callback_receiver.py" "$CB_DIR" \
		127.0.0.1:8090:ok 10.9.9.9:8080:ok 169.254.169.254:80:ok >/dev/null 2>&1 &
	pids="$pids $!"
	for _ in $(seq 100); do [ "$(ls "$CB_DIR" | grep -c '^ready-')" = 2 ] && break; sleep 0.1; done
	printf '127.0.0.1 localhost\n11.0.0.2 cb.public.test\n10.9.9.9 cb.private.test\n11.0.0.2 rebind.test\n' >"$CB_DIR/hosts"
	printf 'nameserver 11.0.0.2\noptions timeout:4 attempts:3\n' >"$CB_DIR/resolv.conf"
	printf 'hosts: files dns\n' >"$CB_DIR/nsswitch.conf"
	WARD_CB_INNER=1 CB_DIR=$CB_DIR ip netns exec "$NS-a" unshare -m --propagation private \
		bash -c 'mount --bind "$CB_DIR/hosts" /etc/hosts && mount --bind "$CB_DIR/resolv.conf" /etc/resolv.conf &&
			mount --bind "$CB_DIR/nsswitch.conf" /etc/nsswitch.conf && exec bash "$0"' "$0"
	exit $?
fi

# ---- inside namespace A, with the test's /etc/hosts
. "$(dirname "$0")/dialect.bash"
start_dialects callback --judge0 127.0.0.1:0 --judge0-callback-allow cb.public.test \
	--judge0-callback-allow cb.private.test --judge0-callback-allow rebind.test \
	--judge0-callback-allow 127.0.0.1 --judge0-callback-allow localhost \
	--judge0-callback-allow 169.254.169.254 --judge0-callback-allow stall.test || exit 0
J=$(dialect_url judge0)

timeout 200 /usr/bin/python3 - "$J" "$CB_DIR" "$SRV_LOG" <<'PY'
import base64, json, os, sys, time, urllib.request, urllib.error
J, DIR, LOG = sys.argv[1:4]
def check(name, ok, detail=""):
    print(("PASS: " if ok else "FAIL: ") + "judge0 callback: " + name + ("" if ok else ": " + str(detail)[:600]))
def call(path, body=None):
    req = urllib.request.Request(J + path, data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")
def events(listener=None, path=None):
    try:
        ev = [json.loads(l) for l in open(os.path.join(DIR, "events.jsonl"))]
    except FileNotFoundError:
        ev = []
    return [e for e in ev if (listener is None or e["listener"] == listener) and (path is None or e.get("path") == path)]
def wait_events(listener, path, n, secs):
    for _ in range(int(secs * 10)):
        ev = events(listener, path)
        if len(ev) >= n:
            return ev
        time.sleep(0.1)
    return events(listener, path)
PUB = "11.0.0.2:8080"
PRIVATE = ("127.0.0.1:8090", "10.9.9.9:8080", "169.254.169.254:80")
prog = "print(int(input()) + 1)"

code, cfg = call("/config_info")
check("config_info: enable_callbacks, 3 tries, 5 s", cfg["enable_callbacks"] is True and cfg["callbacks_max_tries"] == 3 and cfg["callbacks_timeout"] == 5.0, cfg)

# a hanging receiver first: its three 5 s tries run beside the rest
code, a = call("/submissions", {"language_id": 71, "source_code": prog, "stdin": "1", "callback_url": "http://cb.public.test:8082/hang"})
check("a callback to a receiver that never answers: 201", code == 201, a)
t_hang = time.time()

code, a = call("/submissions", {"language_id": 71, "source_code": prog, "stdin": "41", "callback_url": "http://cb.public.test:8080/done?x=1"})
tok = a.get("token")
ev = wait_events(PUB, "/done?x=1", 1, 30)
check("wait=false: the callback came, once", len(ev) == 1, ev)
if ev:
    e = ev[0]
    body = json.loads(e["body"])
    check("... a PUT, Content-Type application/json", e["method"] == "PUT" and e["headers"].get("content-type") == "application/json", e)
    check("... Judge0's default fields", set(body) == {"token", "time", "memory", "stdout", "stderr", "compile_output", "message", "status"}, body)
    check("... the submission's token and status, stdout base64", body["token"] == tok and body["status"]["id"] == 3 and base64.b64decode(body["stdout"]) == b"42\n", body)
code, s = call(f"/submissions/{tok}?fields=callback_url,status_id")
check("callback_url is answered in fields", s.get("callback_url") == "http://cb.public.test:8080/done?x=1", s)
code, a = call("/submissions?wait=true", {"language_id": 71, "source_code": prog, "stdin": "1", "callback_url": "http://cb.public.test:8080/waited"})
check("wait=true: the callback comes too", code == 201 and len(wait_events(PUB, "/waited", 1, 20)) == 1, a)
code, a = call("/submissions/batch", {"submissions": [{"language_id": 71, "source_code": prog, "stdin": str(i), "callback_url": "http://cb.public.test:8080/batch"} for i in range(3)]})
check("a batch: one callback each", len(wait_events(PUB, "/batch", 3, 30)) == 3, events(PUB, "/batch"))

# refused at submit: 422, and not one connection to the counting listeners
for url in ("http://127.0.0.1:8090/x", "http://localhost:8090/x", "http://169.254.169.254/latest/meta-data/",
            "http://cb.private.test:8080/x", "http://unlisted.test:8080/x", "http://cb.public.test:8080@10.9.9.9:8080/x",
            "ftp://cb.public.test/x", "http://cb.public.test:99999/x", "http://cb.public.test\\@10.9.9.9:8080/x"):
    code, a = call("/submissions", {"language_id": 71, "source_code": prog, "stdin": "1", "callback_url": url})
    check(f"hostile: callback_url {url}: 422", code == 422 and "callback_url" in a, a)

# a redirect is not followed (its Location is private, but no redirect is)
code, a = call("/submissions?wait=true", {"language_id": 71, "source_code": prog, "stdin": "1", "callback_url": "http://cb.public.test:8080/redirect"})
check("a callback answered 302 (to a private address)", len(wait_events(PUB, "/redirect", 1, 20)) == 1, events(path="/redirect"))

# DNS rebinding: public at submit time, private by the time it is sent
code, a = call("/submissions", {"language_id": 71, "source_code": "import time; time.sleep(2); print(1)", "callback_url": "http://rebind.test:8080/rebind"})
check("rebinding: rebind.test is public at submit: 201", code == 201, a)
rtok = a.get("token")
with open("/etc/hosts", "r+") as f:
    hosts = f.read().replace("11.0.0.2 rebind.test", "10.9.9.9 rebind.test")
    f.seek(0); f.truncate(); f.write(hosts)
for _ in range(300):
    code, s = call(f"/submissions/{rtok}?fields=status_id")
    if s["status_id"] > 2:
        break
    time.sleep(0.1)
time.sleep(3)
check("rebinding: ... and private when it is sent: nothing reaches 10.9.9.9", events("10.9.9.9:8080") == [] and events(path="/rebind") == [], events(path="/rebind"))
log = open(LOG).read()
check("rebinding: ... the server says so", "http://rebind.test:8080/rebind refused, nothing sent" in log, log[-800:])

# retries: a receiver that closes at once gets 3 tries
ev = []
code, a = call("/submissions", {"language_id": 71, "source_code": prog, "stdin": "1", "callback_url": "http://cb.public.test:8081/close"})
ev = wait_events("11.0.0.2:8081", None, 3, 30)
time.sleep(1)
check("a failing receiver: exactly 3 tries (callbacks_max_tries)", len(events("11.0.0.2:8081")) == 3, events("11.0.0.2:8081"))
ev = wait_events("11.0.0.2:8082", None, 3, max(1, 25 - (time.time() - t_hang)))
ts = [e["t"] for e in ev]
check("a receiver that never answers: 3 tries, 5 s each (callbacks_timeout)", len(ts) == 3 and all(4.5 < b - a < 7 for a, b in zip(ts, ts[1:])), ts)

# one host that never answers cannot take the whole queue: past a quarter of
# it (64 of 256) its callbacks are dropped, another host's are still taken
toks = []
for b in range(4):
    code, a = call("/submissions/batch", {"submissions": [{"language_id": 71, "source_code": "print(1)", "callback_url": "http://cb.public.test:8082/flood"} for _ in range(20)]})
    toks += [x.get("token") for x in a if isinstance(x, dict)]
check("a flood: 80 submissions with a callback to a host that never answers", len(toks) == 80, len(toks))
def all_done():
    for i in range(0, len(toks), 20):
        code, bs = call("/submissions/batch?tokens=" + ",".join(toks[i:i + 20]) + "&fields=status_id")
        if code != 200 or not all(x["status_id"] > 2 for x in bs["submissions"]):
            return False
    return True
for _ in range(600):
    if all_done():
        break
    time.sleep(0.1)
time.sleep(0.5)
log = open(LOG).read()
check("... past 64 waiting for that host, its callbacks are dropped and logged", "callbacks to its host are already waiting" in log, log[-600:])
with open("/etc/hosts", "r+") as f:
    hosts = f.read().replace("10.9.9.9 rebind.test", "11.0.0.2 rebind.test")
    f.seek(0); f.truncate(); f.write(hosts)
code, a = call("/submissions?wait=true", {"language_id": 71, "source_code": "print(1)", "callback_url": "http://rebind.test:8080/other"})
time.sleep(0.3)
check("... while another host's callback is still queued", code == 201 and "rebind.test:8080/other dropped" not in open(LOG).read(), a)

# a listed name whose name server never answers: the lookup's deadline (5 s),
# not the resolver's 3 x 4 s, ends the submission's check
t0 = time.time()
code, a = call("/submissions", {"language_id": 71, "source_code": prog, "stdin": "1", "callback_url": "http://stall.test:8080/x"})
dt = time.time() - t0
check("a listed host whose name server never answers: 422 within the 5 s lookup deadline", code == 422 and "lookup took over 5 s" in json.dumps(a) and 4.5 < dt < 8.5, (code, a, round(dt, 2)))

check("hostile: no connection ever reached a loopback, private or link-local listener", all(events(l) == [] for l in PRIVATE), [events(l) for l in PRIVATE])
check("the redirect was not followed", events(path="/followed") == [], events(path="/followed"))
PY

stop_dialects callback
# the default: no --judge0-callback-allow, no callbacks
start_dialects nocallback --judge0 127.0.0.1:0 || exit 0
J=$(dialect_url judge0)
expect_eq "no --judge0-callback-allow: enable_callbacks false" False "$(jg "$(curl -s "$J/config_info")" 'd["enable_callbacks"]')"
out=$(curl -s -H 'Content-Type: application/json' -d '{"language_id":71,"source_code":"print(1)","callback_url":"http://cb.public.test:8080/x"}' "$J/submissions")
expect_eq "... and a callback_url: 422 setting callback is not allowed" "setting callback is not allowed" "$(jg "$out" 'd["callback_url"][0]')"
stop_dialects nocallback
