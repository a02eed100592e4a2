#!/usr/bin/env python3
"""tests/e2b/shares.py — what one tenant's E2B requests may cost the others
and what a token opens (the review of E2B's one request life): relays to a
sandbox's port and the interpreter's /health count in the sandbox owner's
--client-concurrency and never wait on a busy context; the traffic token
opens the interpreter's routes, never envd's whatever E2b-Sandbox-Port
says; metadata is capped (64 KiB) and a list is in the answer budget; a pause
and a connect that resumes are runs under --client-rate.  Run by
tests/e2b/shares.sh: argv = PART E2B_URL NATIVE_URL KEY OTHER_KEY.  Prints
PASS:/FAIL: lines; every step is bounded by socket timeouts."""
import json, socket, struct, sys, time, urllib.error, urllib.request

PART, URL, NAT, KEY, OTHER = sys.argv[1:6]
HOST, PORT = URL.split("//")[1].split(":")[0], int(URL.rsplit(":", 1)[1])
failed = False


def stopped(kind, value, tb):
    print("FAIL: e2b shares: %s stopped by %s: %s" % (PART, kind.__name__, value), flush=True)
    sys.exit(1)


sys.excepthook = stopped


def res(name, ok, why=""):
    global failed
    failed |= not ok
    print(("PASS: e2b shares: %s" % name) if ok else ("FAIL: e2b shares: %s: %s" % (name, why)), flush=True)


def http(method, path, body=None, hdr=None, timeout=60, base=None):
    r = urllib.request.Request((base or URL) + path, data=body, headers=hdr or {}, method=method)
    try:
        with urllib.request.urlopen(r, timeout=timeout) as f:
            return f.status, f.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def create(key, extra=None):
    b = {"templateID": "base", "timeout": 120}
    b.update(extra or {})
    return http("POST", "/v2/sandboxes", json.dumps(b).encode(), {"X-API-KEY": key, "Content-Type": "application/json"})


def made(key, extra=None):
    st, b = create(key, extra)
    assert st == 201, (st, b[:300])
    return json.loads(b)


def kill(sb):
    http("DELETE", "/sandboxes/" + sb["sandboxID"], None, {"X-API-KEY": KEY})


def env(msg):
    m = json.dumps(msg).encode()
    return b"\0" + struct.pack(">I", len(m)) + m


def raw(head, body=b""):
    """a request on a socket of its own, left open"""
    s = socket.create_connection((HOST, PORT), timeout=60)
    s.sendall(head.encode() + body)
    return s


def start_bg(sb, cmd):
    body = env({"process": {"cmd": "/bin/bash", "args": ["-c", cmd]}})
    s = raw("POST /process.Process/Start HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\nE2b-Sandbox-Id: %s\r\n"
            "X-Access-Token: %s\r\nContent-Type: application/connect+json\r\nConnect-Protocol-Version: 1\r\n\r\n"
            % (len(body), sb["sandboxID"], sb["envdAccessToken"]), body)
    s.recv(65536)  # its start frame
    return s


def native_exec():
    return http("POST", "/exec", b'{"command":"echo hi"}',
                {"Authorization": "Bearer " + OTHER, "Content-Type": "application/json"}, base=NAT)[0]


if PART == "workers":  # --max-concurrent 2 --queue 2 --client-concurrency 1
    a = made(KEY)
    srv = ("import socket,time\ns=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
           "s.bind(('127.0.0.1',8000)); s.listen(64)\nheld=[]\nwhile True:\n  c,_=s.accept(); held.append(c)\n")
    bg = start_bg(a, "python3 -c \"%s\"" % srv.replace('"', '\\"'))
    # the silent server listens once a connect to it is refused no more (bounded)
    for _ in range(50):
        c = raw("GET / HTTP/1.1\r\nHost: x\r\nE2b-Sandbox-Id: %s\r\nE2b-Sandbox-Port: 8000\r\n"
                "Connection: close\r\n\r\n" % a["sandboxID"])
        c.settimeout(1)
        try:
            got = c.recv(200)
        except socket.timeout:
            got = b"held"
        c.close()
        if got == b"held":
            break
        time.sleep(0.2)
    relays = [raw("GET /x HTTP/1.1\r\nHost: x\r\nE2b-Sandbox-Id: %s\r\nE2b-Sandbox-Port: 8000\r\n\r\n"
                  % a["sandboxID"]) for _ in range(6)]  # no API key, no token: alice's port
    time.sleep(1.5)  # all six in (admitted, queued or refused)
    st = native_exec()
    res("keyless relays to a tenant's silent port leave another key's native /exec a worker", st == 200,
        "HTTP %s" % st)
    for c in relays:
        c.close()
    bg.close()
    kill(a)
elif PART == "health":  # --max-concurrent 4 --queue 4 --client-concurrency 1
    # the interpreter's /health while the default context runs an execution
    a = made(KEY)
    body = json.dumps({"code": "import time\ntime.sleep(100)"}).encode()
    ex = raw("POST /execute HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
             "E2b-Sandbox-Id: %s\r\nX-Access-Token: %s\r\nE2b-Sandbox-Port: 49999\r\n\r\n"
             % (len(body), a["sandboxID"], a["envdAccessToken"]), body)
    ex.recv(300)
    time.sleep(1)
    st, b = http("GET", "/health", None, {"E2b-Sandbox-Id": a["sandboxID"], "E2b-Sandbox-Port": "49999",
                                          "E2B-Traffic-Access-Token": a["trafficAccessToken"]})
    res("the interpreter's /health answers while its context is busy (never waits on a worker)",
        st == 200 and json.loads(b).get("status") == "ok", "HTTP %s %s" % (st, b[:200]))
    ex.close()
    kill(a)
elif PART == "tokens":
    a = made(KEY, {"network": {"allowPublicTraffic": False}})
    t = {"E2b-Sandbox-Id": a["sandboxID"], "E2B-Traffic-Access-Token": a["trafficAccessToken"]}
    p = dict(t, **{"E2b-Sandbox-Port": "49999"})
    st, b = http("GET", "/files?path=/etc/hostname", None, p)
    res("the traffic token with E2b-Sandbox-Port 49999 does not open /files", st == 401, "HTTP %s %s" % (st, b[:120]))
    st, b = http("POST", "/process.Process/Start", env({"process": {"cmd": "/bin/sh", "args": ["-c", "id"]}}),
                 dict(p, **{"Content-Type": "application/connect+json", "Connect-Protocol-Version": "1"}))
    res("the traffic token with E2b-Sandbox-Port 49999 does not start a process", st == 401,
        "HTTP %s %s" % (st, b[:120]))
    st, b = http("GET", "/contexts", None, p)
    res("the traffic token opens the interpreter's contexts", st == 200, "HTTP %s %s" % (st, b[:120]))
    kill(a)
elif PART == "metadata":
    st, b = create(KEY, {"metadata": {"k%d" % i: "v" * 1000 for i in range(70)}})
    res("a create with 70 KB of metadata is refused", st == 400 and b"metadata" in b, "HTTP %s %s" % (st, b[:200]))
    md = {"k%d" % i: "v" * 1000 for i in range(60)}
    sbs = [made(KEY, {"metadata": md}) for _ in range(4)]
    st, b = http("GET", "/sandboxes/" + sbs[0]["sandboxID"], None, {"X-API-KEY": KEY})
    res("getInfo with 60 KB of metadata: its metadata", st == 200 and json.loads(b)["metadata"] == md,
        "HTTP %s %s" % (st, b[:200]))
    st, b = http("GET", "/v2/sandboxes", None, {"X-API-KEY": KEY})
    res("a list: every sandbox's metadata", st == 200 and [x["metadata"] for x in json.loads(b)] == [md] * 4,
        "HTTP %s %s" % (st, b[:200]))

    for x in sbs:
        kill(x)
elif PART == "budget":  # --max-output 1024 --max-answer-client 67187456 (the least it may be)
    md = {"k%d" % i: "v" * 1000 for i in range(60)}
    a, other = made(KEY, {"metadata": md}), made(KEY, {"metadata": md})
    bg = start_bg(a, "head -c 67108864 /dev/zero >/home/user/big; echo made")  # the most one read returns
    bg.settimeout(120)
    got = b""
    while b"exitCode" not in got:  # the command's end
        k = bg.recv(65536)
        if not k:
            break
        got += k
    bg.close()
    # alice's unread 64 MiB read holds all but 77 KiB of her share
    rd = socket.create_connection((HOST, PORT), timeout=60)
    rd.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    rd.sendall(("GET /files?path=/home/user/big HTTP/1.1\r\nHost: x\r\nE2b-Sandbox-Id: %s\r\n"
                "X-Access-Token: %s\r\n\r\n" % (a["sandboxID"], a["envdAccessToken"])).encode())
    head = rd.recv(1024)
    res("the 64 MiB read answers (unread)", head.startswith(b"HTTP/1.1 200"), head[:100])
    st, b = http("GET", "/v2/sandboxes", None, {"X-API-KEY": KEY})
    res("a list (120 KB) beyond her share of the answer budget: 503", st == 503 and b"max-answer-client" in b,
        "HTTP %s %s" % (st, b[:200]))
    rd.close()
    for _ in range(100):  # the connection's end gives the share back (bounded)
        st, b = http("GET", "/v2/sandboxes", None, {"X-API-KEY": KEY})
        if st == 200:
            break
        time.sleep(0.1)
    res("once the reader left, the list answers", st == 200, "HTTP %s %s" % (st, b[:200]))
    kill(a)
    kill(other)
elif PART == "rate":  # --client-rate 2
    H = {"X-API-KEY": KEY, "Content-Type": "application/json"}
    a = made(KEY)  # one run
    sid = a["sandboxID"]
    st, _ = http("POST", "/sandboxes/%s/connect" % sid, b'{"timeout": 60}', H)
    res("a connect to a running sandbox is no run", st in (200, 201), "HTTP %s" % st)
    st, b = http("POST", "/sandboxes/%s/pause" % sid, b'{"memory": false}', H)  # the second run
    res("a pause", st == 204, "HTTP %s %s" % (st, b[:200]))
    st, b = http("POST", "/sandboxes/%s/connect" % sid, b'{"timeout": 60}', H)
    res("a connect that resumes is a run: the third within the minute is refused", st == 429,
        "HTTP %s %s" % (st, b[:200]))
    kill(a)
sys.exit(1 if failed else 0)
