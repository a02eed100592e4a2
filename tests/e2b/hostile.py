#!/usr/bin/env python3
"""tests/e2b/hostile.py — the E2B listener's hostile cases, byte by byte
(no SDK): tokens, ids, paths, bodies, Connect deadlines, a storm of
SendInput, abandoned and killed streams.  Run by tests/e2b/hostile.sh:
argv = E2B_URL KEY OTHER_KEY MAX_BODY.  Prints PASS:/FAIL: lines; every
step is bounded by socket timeouts."""
import concurrent.futures, json, socket, struct, sys, time, urllib.error, urllib.request

URL, KEY, OTHER, MAX_BODY = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
HOST, PORT = URL.split("//")[1].split(":")[0], int(URL.rsplit(":", 1)[1])


def res(name, ok, why=""):
    print(("PASS: e2b hostile: %s" % name) if ok else ("FAIL: e2b hostile: %s: %s" % (name, why)), flush=True)


def http(method, path, body=None, hdr=None, timeout=30):
    r = urllib.request.Request(URL + path, data=body, headers=hdr or {}, method=method)
    try:
        with urllib.request.urlopen(r, timeout=timeout) as f:
            return f.status, f.read(), dict(f.headers)
    except urllib.error.HTTPError as e:
        return e.code, e.read(), dict(e.headers)


def create(key):
    st, b, _ = http("POST", "/v2/sandboxes", b'{"templateID":"base","timeout":120}',
                    {"X-API-KEY": key, "Content-Type": "application/json"})
    assert st == 201, (st, b)
    return json.loads(b)


def env(msg):
    m = json.dumps(msg).encode()
    return b"\0" + struct.pack(">I", len(m)) + m


def frames(b):
    out, i = [], 0
    while i + 5 <= len(b):
        n = struct.unpack(">I", b[i + 1:i + 5])[0]
        out.append((b[i], json.loads(b[i + 5:i + 5 + n])))
        i += 5 + n
    return out


def dp(sb, extra=None, tok=None):
    h = {"E2b-Sandbox-Id": sb["sandboxID"], "X-Access-Token": tok if tok is not None else sb["envdAccessToken"]}
    h.update(extra or {})
    return h


def start(sb, cmd, timeout_ms=None, stdin=False, tout=30):
    h = dp(sb, {"Content-Type": "application/connect+json", "Connect-Protocol-Version": "1"})
    if timeout_ms is not None:
        h["Connect-Timeout-Ms"] = timeout_ms
    st, b, hd = http("POST", "/process.Process/Start",
                     env({"process": {"cmd": "/bin/bash", "args": ["-l", "-c", cmd]}, "stdin": stdin}), h, tout)
    return st, (frames(b) if st == 200 else b)


def unary(sb, method, msg, tok=None):
    st, b, hd = http("POST", method, json.dumps(msg).encode(),
                     dp(sb, {"Content-Type": "application/json", "Connect-Protocol-Version": "1"}, tok))
    return st, (json.loads(b) if b else None)


a, a2, b_ = create(KEY), create(KEY), create(OTHER)
st, body, _ = http("POST", "/v2/sandboxes", b'{"timeout":2}', {"X-API-KEY": KEY, "Content-Type": "application/json"})
short, short_t = json.loads(body), time.time()

# tokens and ids
st, _, _ = http("GET", "/health", hdr=dp(a))
res("own token: health 204", st == 204, st)
st, _, _ = http("GET", "/health", hdr=dp(a, tok=a2["envdAccessToken"]))
res("another sandbox's token refused (401)", st == 401, st)
st, _, _ = http("GET", "/files?path=x", hdr=dp(b_, tok=a["envdAccessToken"]))
res("another key's sandbox with this token refused (401)", st == 401, st)
st, _, _ = http("GET", "/health", hdr={"E2b-Sandbox-Id": a["sandboxID"]})
res("no token: 401", st == 401, st)
st, b = start({"sandboxID": a["sandboxID"], "envdAccessToken": ""}, "echo no")
res("no token on a stream: 401, nothing ran", st == 401, st)
st, _, _ = http("GET", "/health", hdr={"E2b-Sandbox-Id": "nosuchsandbox0000", "X-Access-Token": a["envdAccessToken"]})
res("unknown sandbox on the data plane: 502", st == 502, st)
st1, b1, _ = http("GET", "/sandboxes/" + b_["sandboxID"], hdr={"X-API-KEY": KEY})
st2, b2, _ = http("GET", "/sandboxes/vmffffffffffffffffffffffffffffffff", hdr={"X-API-KEY": KEY})
m1 = json.loads(b1)["message"].replace(b_["sandboxID"], "ID")
m2 = json.loads(b2)["message"].replace("vmffffffffffffffffffffffffffffffff", "ID")
res("another key's sandbox: 404 as an unknown one, nothing revealed", st1 == st2 == 404 and m1 == m2
    and json.loads(b1)["code"] == 404, (st1, st2, m1, m2))
st, _, _ = http("DELETE", "/sandboxes/" + b_["sandboxID"], hdr={"X-API-KEY": KEY})
st2, _, _ = http("GET", "/health", hdr=dp(b_))
res("another key cannot kill it", st == 404 and st2 == 204, (st, st2))
st, _, _ = http("POST", "/v2/sandboxes", b"{}", {"Content-Type": "application/json"})
res("control plane without an API key: 401", st == 401, st)
st, _, _ = http("POST", "/v2/sandboxes", b"{}", {"X-API-KEY": "wrong", "Content-Type": "application/json"})
res("control plane with a wrong API key: 401", st == 401, st)
res("domain is never E2B's", "e2b" not in a.get("domain", "e2b"), a.get("domain"))

# egress (the server runs with --egress-allow example.invalid): asked for, narrowed, refused
def proxy_of(body):
    st, b, _ = http("POST", "/v2/sandboxes", json.dumps(body).encode(), {"X-API-KEY": KEY, "Content-Type": "application/json"})
    if st != 201:
        return st, None
    sb = json.loads(b)
    st2, fr = start(sb, "echo ${HTTPS_PROXY:-none}")
    out = b"".join(__import__("base64").b64decode(f[1]["event"]["data"]["stdout"]) for f in fr if "data" in f[1].get("event", {}))
    http("DELETE", "/sandboxes/" + sb["sandboxID"], hdr={"X-API-KEY": KEY})
    return st, out.strip()


st, out = proxy_of({"allow_internet_access": True})
res("allowInternetAccess true: the operator's ceiling (a proxy)", st == 201 and out.startswith(b"http://"), (st, out))
st, out = proxy_of({"allow_internet_access": False})
res("allowInternetAccess false: no network", st == 201 and out == b"none", (st, out))
st, out = proxy_of({"network": {"allowOut": ["example.invalid"]}})
res("network.allowOut within the ceiling: a proxy", st == 201 and out.startswith(b"http://"), (st, out))
st, out = proxy_of({"network": {"allowOut": ["elsewhere.invalid"]}})
res("network.allowOut beyond the ceiling: 400", st == 400, (st, out))

# paths: every path of the sandbox, as its user sees it (SPEC §18), never a host file
def inside(sb, cmd, seen=None):
    st, fr = start(sb, cmd)
    if seen is not None:
        seen.append((st, fr))   # what came, for a failure's message
    return b"".join(__import__("base64").b64decode(f[1]["event"]["data"].get("stdout", ""))
                    for f in fr if "data" in f[1].get("event", {}))


seen = []
mine = inside(a, "cat /etc/passwd", seen)
host_pw = open("/etc/passwd", "rb").read()
res("the sandbox's /etc/passwd is its own", mine and mine != host_pw, (mine[:80], seen))
for p in ("/home/user/../../etc/passwd", "/etc/passwd", "../../../etc/passwd", "/work/../etc/passwd",
          "/../../../../etc/passwd", "/proc/self/root/etc/passwd"):
    st, body, _ = http("GET", "/files?path=" + urllib.request.quote(p), hdr=dp(a))
    res("files read %s: the sandbox's own file, no host bytes" % p, st == 200 and body == mine, (st, body[:80]))
st, body, _ = http("GET", "/files?path=" + urllib.request.quote("/home/user/%2e%2e/%2e%2e/etc/passwd"), hdr=dp(a))
res("files read %2e%2e: a name, not a parent (404)", st == 404, (st, body[:80]))
for p in ("/proc/self/environ", "/proc/self/mem", "/proc/self/maps", "/proc/1/environ", "/etc/shadow"):
    st, body, _ = http("GET", "/files?path=" + urllib.request.quote(p), hdr=dp(a))
    res("files read %s refused, nothing of the server's" % p, st in (403, 404) and b"sekrit" not in body, (st, body[:80]))
st, _ = unary(a, "/filesystem.Filesystem/Remove", {"path": "/home/user/../.."})
res("Remove of the root refused", st == 400, st)
inside(a, "touch /home/user/x")
st, _ = unary(a, "/filesystem.Filesystem/Move", {"source": "/home/user/x", "destination": "/etc/x"})
res("Move where the sandbox's user may not write refused", st == 400, st)
start(a, "ln -s /etc/shadow /home/user/sh; ln -s /proc/1/root /home/user/root1; ln -s /proc/self/environ /home/user/env")
st, body, _ = http("GET", "/files?path=/home/user/sh", hdr=dp(a))
res("planted symlink to /etc/shadow: an error, never the host's file", st != 200 or b"root:" not in body, (st, body[:80]))
st, body, _ = http("GET", "/files?path=/home/user/root1/etc/hostname", hdr=dp(a))
res("planted /proc/1/root: the sandbox's own view or an error", st != 200 or body.strip() == b"ward", (st, body[:80]))
st, body, _ = http("GET", "/files?path=/home/user/env", hdr=dp(a))
res("planted symlink to /proc/self/environ: refused", st in (403, 404) and b"sekrit" not in body, (st, body[:80]))
st, body, _ = http("POST", "/files?path=/proc/self/comm", b"--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"x\"\r\n\r\nx\r\n--b--\r\n",
                   dp(a, {"Content-Type": "multipart/form-data; boundary=b"}))
res("files write to /proc/self/comm refused", st in (400, 403), (st, body[:80]))

# bodies
big = b"x" * (MAX_BODY + 1024)
bnd = b"----b"
mp = b"--" + bnd + b'\r\nContent-Disposition: form-data; name="file"; filename="big"\r\n\r\n' + big + b"\r\n--" + bnd + b"--\r\n"
try:
    st, body, _ = http("POST", "/files?path=/home/user/big", mp,
                       dp(a, {"Content-Type": "multipart/form-data; boundary=" + bnd.decode()}))
except (ConnectionError, urllib.error.URLError) as e:
    st, body = 0, str(e).encode()
st2, got, _ = http("GET", "/files?path=/home/user/big", hdr=dp(a))
res("a multipart upload past --max-body streams into the sandbox (SPEC §18): written whole", st == 200 and st2 == 200
    and got == big, (st, st2, len(got), body[:100]))
try:
    st, body, _ = http("POST", "/filesystem.Filesystem/Stat", b'{"path":"' + b"x" * (MAX_BODY + 1024) + b'"}',
                       dp(a, {"Content-Type": "application/json", "Connect-Protocol-Version": "1"}))
except (ConnectionError, urllib.error.URLError) as e:
    st, body = 0, str(e).encode()
res("another body over --max-body: 413 (or the connection closed)", st in (0, 413), (st, body[:100]))
for bad in (b"--x\r\nno-disposition\r\n\r\nabc\r\n--x--", b"--x\r\n" + b"H: v\r\n" * 3000, b"garbage"):
    st, body, _ = http("POST", "/files", bad, dp(a, {"Content-Type": "multipart/form-data; boundary=x"}))
    res("a malformed multipart body: 400 naming the problem", st == 400 and b"multipart" in body, (st, body[:100]))


def raw_chunked(trickle):
    s = socket.create_connection((HOST, PORT), timeout=40)
    h = "E2b-Sandbox-Id: %s\r\nX-Access-Token: %s\r\n" % (a["sandboxID"], a["envdAccessToken"])
    s.sendall(("POST /files?path=/home/user/c HTTP/1.1\r\nHost: x\r\n%sContent-Type: multipart/form-data; boundary=x\r\n"
               "Transfer-Encoding: chunked\r\n\r\n5\r\n--x\r\n\r\n" % h).encode())
    t = time.time()
    try:
        while time.time() - t < 40:
            if trickle:
                s.sendall(b"1\r\nx\r\n")
                time.sleep(0.5)
            else:
                if not s.recv(100):
                    break
    except OSError:
        pass
    s.close()
    return time.time() - t


el = raw_chunked(True)
res("a chunked body that trickles forever is cut at --request-timeout", el < 15, "%.1f s" % el)
el = raw_chunked(False)
res("a chunked body that stalls is cut at the idle timeout", el < 35, "%.1f s" % el)

# Connect deadlines
st, fr = start(a, "echo never", "0")
res("Connect-Timeout-Ms 0: deadline_exceeded, nothing ran", st == 200 and fr[-1][0] == 2
    and fr[-1][1].get("error", {}).get("code") == "deadline_exceeded" and len(fr) == 1, fr)
st, fr = start(a, "echo never", "1000000000000")
res("Connect-Timeout-Ms 10^12: invalid_argument", st == 200 and fr[-1][1].get("error", {}).get("code") == "invalid_argument", fr)
st, fr = start(a, "echo ok", "abc")
res("Connect-Timeout-Ms not a number: invalid_argument", fr[-1][1].get("error", {}).get("code") == "invalid_argument", fr)
st, b, _ = http("POST", "/process.Process/Start", b"\x01\0\0\0\x02{}", dp(a, {"Content-Type": "application/connect+json"}))
fr = frames(b)
res("a compressed or malformed envelope: invalid_argument", fr and fr[-1][1].get("error", {}).get("code") == "invalid_argument", fr)
t = time.time()
st, fr = start(a, "sleep 30 & sleep 30", "1500")
ends = [f for f in fr if f[0] == 0 and "end" in f[1].get("event", {})]
res("a deadline kills the command's tree", time.time() - t < 10 and ends and ends[0][1]["event"]["end"]["exitCode"] == -1,
    (time.time() - t, fr[-2:]))
st, fr = start(a, "ps -e -o comm= | grep -c '^sleep' || true")
out = b"".join(__import__("base64").b64decode(f[1]["event"]["data"]["stdout"]) for f in fr if "data" in f[1].get("event", {}))
res("... no sleep left behind", out.strip() == b"0", out)

# 1000 SendInput frames at once


def bg_stream(cmd, timeout_ms=None, stdin=False):
    """Start, read the start frame, return (socket, pid): the stream stays open."""
    s = socket.create_connection((HOST, PORT), timeout=30)
    body = env({"process": {"cmd": "/bin/bash", "args": ["-l", "-c", cmd]}, "stdin": stdin})
    h = "E2b-Sandbox-Id: %s\r\nX-Access-Token: %s\r\nContent-Type: application/connect+json\r\n" % (
        a["sandboxID"], a["envdAccessToken"])
    if timeout_ms:
        h += "Connect-Timeout-Ms: %s\r\n" % timeout_ms
    s.sendall(("POST /process.Process/Start HTTP/1.1\r\nHost: x\r\n%sContent-Length: %d\r\n\r\n" % (h, len(body))).encode() + body)
    buf = b""
    while b'"pid"' not in buf:
        buf += s.recv(4096)
    pid = int(buf.split(b'"pid":')[1].split(b"}")[0])
    return s, pid


s, pid = bg_stream("wc -c", stdin=True)
payload = __import__("base64").b64encode(b"0123456789").decode()


def send(_):
    return unary(a, "/process.Process/SendInput", {"process": {"pid": pid}, "input": {"stdin": payload}})[0]


t = time.time()
with concurrent.futures.ThreadPoolExecutor(100) as ex:
    codes = list(ex.map(send, range(1000)))
unary(a, "/process.Process/CloseStdin", {"process": {"pid": pid}})
data = b""
s.settimeout(20)
while b'"end"' not in data:
    d = s.recv(65536)
    if not d:
        break
    data += d
s.close()
got = b"".join(__import__("base64").b64decode(x.split(b'"')[0]) for x in data.split(b'"stdout":"')[1:])
res("1000 SendInput frames at once: all taken, in %.1f s" % (time.time() - t), codes.count(200) == 1000
    and got.strip() == b"10000", (sorted(set(codes)), got[:40]))
st, _, _ = http("GET", "/health", hdr=dp(a))
res("... the server still answers", st == 204, st)

# abandoned streams
s, pid = bg_stream("sleep 60", timeout_ms=1500)
s.close()
time.sleep(3.5)
st, l = unary(a, "/process.Process/List", {})
res("an abandoned foreground stream: the command dies at its deadline", pid not in [p["pid"] for p in l["processes"]], l)
s, pid = bg_stream("sleep 60")
s.close()
time.sleep(1)
st, l = unary(a, "/process.Process/List", {})
res("an abandoned background stream: the command lives on", pid in [p["pid"] for p in l["processes"]], l)
unary(a, "/process.Process/SendSignal", {"process": {"pid": pid}, "signal": "SIGNAL_SIGKILL"})

# a kill while a command streams
s, pid = bg_stream("while :; do echo x; sleep 0.05; done")
time.sleep(0.3)
st, _, _ = http("DELETE", "/sandboxes/" + a["sandboxID"], hdr={"X-API-KEY": KEY})
data = b""
s.settimeout(10)
t = time.time()
try:
    while b"\x02\0\0\0" not in data and time.time() - t < 10:
        d = s.recv(65536)
        if not d:
            break
        data += d
except OSError:
    pass
s.close()
res("a kill while a command streams: the stream ends (killed, then end-stream)", st == 204 and
    (b"unavailable" in data or b"signal: killed" in data) and b"\x02\0\0\0" in data,
    (st, data[-120:]))
st, _, _ = http("GET", "/health", hdr=dp(a))
res("... the sandbox is gone: 502", st == 502, st)
for sb, k in ((a2, KEY), (b_, OTHER)):
    http("DELETE", "/sandboxes/" + sb["sandboxID"], hdr={"X-API-KEY": k})

# a sandbox's timeout ends it (its session's ttl), with everything in it
time.sleep(max(0, short_t + 3.5 - time.time()))
st, _, _ = http("GET", "/health", hdr=dp(short))
st2, _, _ = http("GET", "/sandboxes/" + short["sandboxID"], hdr={"X-API-KEY": KEY})
res("a sandbox past its timeout is gone (502 on the data plane, 404 on the control plane)", st == 502 and st2 == 404, (st, st2))
