"""tests/e2b/file_worker.py — a sandbox's own file worker never stalls the E2B listener
(tests/e2b/file_worker.sh starts the server with --session-call-timeout 120).
argv = E2B_HOST:PORT KEY OTHER_KEY MODE.  MODE stall: alice's sandbox SIGSTOPs its file workers
while her upload is in flight and her directory is watched: bob's calls answer at once (each
bounded by a 30 s socket timeout, a quarter of the call timeout an I/O thread would wait);
killing her sandbox ends her upload.  MODE body: keyless peers' bodies are never held (9 x 1 MiB to each of envd, a Connect route and a sandbox's port, against
--max-body-total 8 MiB: a create still gets its body read).  MODE wake: an upload wakes a
paused autoResume sandbox.  MODE fair: alice watches 4 directories of a sandbox that
SIGSTOPs its file workers (each listing then waits the call timeout): bob's watch still sees
his new file (a key holds one of the two listers at most).  MODE open: an upload left in flight (its socket held until the
server closes it).  Prints PASS:/FAIL: lines."""
import json, socket, struct, sys, threading, time, urllib.error, urllib.request

E2B, A, B, MODE = sys.argv[1:5]
HOST, PORT = E2B.split(":")
bad = 0


def res(name, ok, why=""):
    global bad
    print(("PASS: " if ok else "FAIL: ") + "e2b file worker: " + name + ("" if ok else " (%s)" % why), flush=True)
    bad += not ok


def http(method, path, body=None, hdr=None, timeout=30):
    r = urllib.request.Request("http://" + E2B + path, data=body, headers=hdr or {}, method=method)
    try:
        with urllib.request.urlopen(r, timeout=timeout) as f:
            return f.status, f.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except OSError as e:
        return 0, repr(e).encode()


def create(key, extra=None):
    b = {"templateID": "base", "timeout": 300}
    b.update(extra or {})
    st, body = http("POST", "/v2/sandboxes", json.dumps(b).encode(), {"X-API-KEY": key, "Content-Type": "application/json"}, 120)
    assert st == 201, (st, body)
    return json.loads(body)


def env(msg):
    m = json.dumps(msg).encode()
    return b"\0" + struct.pack(">I", len(m)) + m


def dp(sb, extra=None):
    h = {"E2b-Sandbox-Id": sb["sandboxID"], "X-Access-Token": sb["envdAccessToken"]}
    h.update(extra or {})
    return h


def raw(head_path, hdr, body, length=None):
    """A request on a socket of its own, its body (or its start) sent; the socket."""
    s = socket.create_connection((HOST, int(PORT)), timeout=60)
    req = "%s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n" % (head_path, len(body) if length is None else length)
    s.sendall((req + "".join("%s: %s\r\n" % kv for kv in hdr.items()) + "\r\n").encode() + body)
    return s


def run(sb, cmd):
    """cmd's stream, left open once its start frame is in"""
    s = raw("POST /process.Process/Start", dp(sb, {"Content-Type": "application/connect+json", "Connect-Protocol-Version": "1"}),
            env({"process": {"cmd": "/bin/bash", "args": ["-c", cmd]}}))
    s.recv(65536)
    return s


def answer(s, timeout):
    s.settimeout(timeout)
    try:
        return s.recv(4096).split(b"\r\n")[0]
    except OSError as e:
        return repr(e).encode()


UP_HEAD = b"--Q\r\nContent-Disposition: form-data; name=\"file\"; filename=\"f\"\r\n\r\n"
UP_TAIL = b"\r\n--Q--\r\n"
MP = {"Content-Type": "multipart/form-data; boundary=Q"}

if MODE == "stall":
    a, b = create(A), create(B)
    st, _ = http("POST", "/files?path=/home/user/w/seed", UP_HEAD + b"x" + UP_TAIL, dp(a, MP))
    w = raw("POST /filesystem.Filesystem/WatchDir", dp(a, {"Content-Type": "application/connect+json", "Connect-Protocol-Version": "1"}),
            env({"path": "/home/user/w"}))
    payload = b"x" * (4 << 20)
    up = raw("POST /files?path=/home/user/f", dp(a, MP), UP_HEAD + b"x", len(UP_HEAD) + len(payload) + len(UP_TAIL))
    time.sleep(1)  # the upload's file part began: its file worker is forked
    stopper = run(a, "while :; do kill -STOP -1 2>/dev/null; done")
    time.sleep(1)
    up.settimeout(60)
    # taken by the pump's buffer while there is room, then the connection parked
    threading.Thread(target=lambda: up.sendall(payload[1:] + UP_TAIL), daemon=True).start()
    time.sleep(1)
    for i in range(3):
        st, body = http("GET", "/v2/sandboxes", None, {"X-API-KEY": B}, 30)
        res("bob's list answers while alice's file workers are stopped (%d)" % i, st == 200, "%s %s" % (st, body[:200]))
        st, body = http("GET", "/health", None, dp(b), 30)
        res("bob's own sandbox answers while alice's file workers are stopped (%d)" % i, st == 204, "%s %s" % (st, body[:200]))
    st, body = http("DELETE", "/sandboxes/" + a["sandboxID"], None, {"X-API-KEY": A}, 60)
    res("alice's stopped sandbox is killed", st == 204, "%s %s" % (st, body[:200]))
    got = answer(up, 30)
    res("the killed sandbox's upload is answered, not held (%s)" % got.decode(errors="replace"), b" 502 " in got or b" 500 " in got, got)
    for s in (w, up, stopper):
        s.close()
elif MODE == "body":
    kinds = [("process.Process/Start", {}), ("filesystem.Filesystem/ListDir", {}),
             ("a sandbox's port", {"E2b-Sandbox-Port": "8000"})]
    for name, extra in kinds:
        path = "POST /" + name if name.startswith(("process", "filesystem")) else "POST /anything"
        hdr = dict({"Content-Type": "application/connect+json", "E2b-Sandbox-Id": "nosuch"}, **extra)
        hold = [raw(path, hdr, b"x" * ((1 << 20) - 10), 1 << 20) for _ in range(9)]  # 9 MiB > --max-body-total
        time.sleep(1)
        st, body = http("POST", "/v2/sandboxes", b'{"timeout":60}', {"X-API-KEY": A, "Content-Type": "application/json"}, 60)
        res("keyless peers' bodies to %s hold nothing: a create's body is still read (%d)" % (name, st), st == 201, body[:200])
        for s in hold:
            s.close()
    a = create(A)
    bad_tok = dict(dp(a), **{"X-Access-Token": "wrong"})
    st, body = http("POST", "/filesystem.Filesystem/ListDir", env({"path": "/"}), dict(bad_tok, **{"Content-Type": "application/connect+json"}))
    res("a wrong token is refused at its headers (%d)" % st, st == 401, body[:200])
elif MODE == "wake":
    a = create(A, {"autoPause": True, "autoResume": {"enabled": True}})
    st, body = http("POST", "/sandboxes/%s/pause" % a["sandboxID"], b'{"memory": false}', {"X-API-KEY": A, "Content-Type": "application/json"}, 300)
    res("alice's sandbox pauses (%d)" % st, st == 204, body[:200])
    st, body = http("POST", "/files?path=/home/user/woke", UP_HEAD + b"awake" + UP_TAIL, dp(a, MP), 300)
    res("an upload wakes the paused autoResume sandbox (%d)" % st, st == 200, body[:200])
    st, body = http("GET", "/files?path=/home/user/woke", None, dp(a), 60)
    res("... and its file is there", st == 200 and body == b"awake", "%s %s" % (st, body[:200]))
elif MODE == "fair":
    a, b = create(A), create(B)
    watch = lambda sb, path: raw("POST /filesystem.Filesystem/WatchDir", dp(sb, {"Content-Type": "application/connect+json", "Connect-Protocol-Version": "1"}),
                                 env({"path": path}))
    held = []
    for i in range(4):
        http("POST", "/files?path=/home/user/d%d/seed" % i, UP_HEAD + b"x" + UP_TAIL, dp(a, MP))
        held.append(watch(a, "/home/user/d%d" % i))
    http("POST", "/files?path=/home/user/w/seed", UP_HEAD + b"x" + UP_TAIL, dp(b, MP))
    bw = watch(b, "/home/user/w")
    bw.settimeout(60)
    seen = b""
    while b"start" not in seen:
        seen += bw.recv(65536)
    held.append(run(a, "while :; do kill -STOP -1 2>/dev/null; done"))
    # a few polls (0.2 s each): alice's listings, stalled for the call timeout (120 s), take
    # every lister they are let have
    time.sleep(3)
    st, body = http("POST", "/files?path=/home/user/w/new", UP_HEAD + b"n" + UP_TAIL, dp(b, MP), 30)
    res("bob's upload beside alice's stalled watches (%d)" % st, st == 200, body[:200])
    seen = b""
    end = time.monotonic() + 60  # (half the call timeout: a lister held by alice frees itself only after it)
    try:  # (keepalives come every few seconds: the deadline is the loop's)
        while b'"new"' not in seen and time.monotonic() < end:
            got = bw.recv(65536)
            if not got:
                break
            seen += got
    except OSError as e:
        seen += repr(e).encode()
    res("bob's watch sees his new file while alice's stalled listings wait", b'"new"' in seen and b"EVENT_TYPE_CREATE" in seen, seen[-300:])
    st, body = http("DELETE", "/sandboxes/" + a["sandboxID"], None, {"X-API-KEY": A}, 60)
    res("alice's stopped sandbox is killed", st == 204, "%s %s" % (st, body[:200]))
    for s in held + [bw]:
        s.close()
elif MODE == "open":
    a = create(A)
    up = raw("POST /files?path=/home/user/up", dp(a, MP), UP_HEAD + b"abc", 100000)
    time.sleep(1)
    print("open", flush=True)
    answer(up, 120)  # held until the server closes it
    up.close()
sys.exit(1 if bad else 0)
