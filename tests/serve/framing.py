"""tests/serve/framing.py LISTENER URL — called by tests/serve/framing.sh:
a request whose body framing a proxy in front could read otherwise than
ward (RFC 9112 §6.3, request smuggling) is answered 400 (501 for a
transfer coding other than chunked) in LISTENER's error shape, with
Connection: close, and its connection closed: the request smuggled behind
it is never read (framing.sh checks the server's log for it).  Pipelined
keep-alive requests and a chunked body still work."""
import json, re, socket, sys

listener, url = sys.argv[1], sys.argv[2]
HOST, PORT = url.split("//")[1].rsplit(":", 1)[0], int(url.rsplit(":", 1)[1])
# a route of the listener's, and a GET it answers with no token
ROUTE = {"native": "/exec", "piston": "/api/v2/execute", "judge0": "/submissions",
         "e2b": "/sandboxes", "mcp": "/mcp"}[listener]
GET = {"native": "/health", "piston": "/api/v2/runtimes", "judge0": "/languages",
       "e2b": "/sandboxes", "mcp": "/mcp"}[listener]
# where the dialect's error body keeps its message
SHAPE = {"native": lambda d: d["error"], "piston": lambda d: d["message"], "judge0": lambda d: d["error"],
         "e2b": lambda d: d["message"] if d["code"] in (400, 501) else None,
         "mcp": lambda d: d["error"]["message"]}[listener]
failed = 0


def ok(name, cond, detail=b""):
    global failed
    print("%s: framing %s: %s%s" % ("PASS" if cond else "FAIL", listener, name,
                                    "" if cond else ": " + repr(detail[:400])))
    failed += not cond


def raw(req):
    """req's bytes on a new connection; everything read until the server
    closes it (None: it stayed open for 30 s)"""
    s = socket.create_connection((HOST, PORT), timeout=30)
    s.sendall(req)
    out = b""
    try:
        while True:
            k = s.recv(65536)
            if not k:
                break
            out += k
    except socket.timeout:
        out = None
    except OSError:
        pass
    s.close()
    return out


def smuggled(n):
    """the request hidden behind a malformed one: logged (with its path) if
    ward ever reads it"""
    if listener == "native":  # a run: its log line would be a 200 on /exec
        body = b'{"command":"echo smuggled"}'
        return b"POST /exec HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (
            len(body), body)
    return b"GET /smuggled-%d HTTP/1.1\r\nHost: x\r\n\r\n" % n


def head(extra):
    return ("POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" % ROUTE).encode() + extra


cases = []  # (name, want, bytes)
for n, (name, want, hdrs, body) in enumerate([
        ("Content-Length and Transfer-Encoding: chunked", 400,
         b"Content-Length: 4\r\nTransfer-Encoding: chunked\r\n", None),
        ("Transfer-Encoding: chunked and Content-Length", 400,
         b"Transfer-Encoding: chunked\r\nContent-Length: 4\r\n", b"0\r\n\r\n"),
        ("two Content-Lengths that differ (MHD reads the first)", 400, b"Content-Length: 0\r\nContent-Length: %d\r\n",
         None),
        ("two equal Content-Lengths", 400, b"Content-Length: 2\r\nContent-Length: 2\r\n", b"{}"),
        ("a second Content-Length not a number", 400, b"Content-Length: 0\r\nContent-Length: 0x10\r\n", b""),
        ("two Transfer-Encodings", 400, b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
         b"0\r\n\r\n"),
        ("Transfer-Encoding: gzip, chunked", 501, b"Transfer-Encoding: gzip, chunked\r\n", b"0\r\n\r\n"),
        ("Transfer-Encoding: identity", 501, b"Transfer-Encoding: identity\r\n", b""),
        ("whitespace before a header's colon", 400, b"Transfer-Encoding : chunked\r\nContent-Length: 5\r\n",
         b"0\r\n\r\n"),
        ("a folded Transfer-Encoding", 400, b"Content-Length: 5\r\nTransfer-Encoding:\r\n chunked\r\n",
         b"0\r\n\r\n")]):
    sm = smuggled(n)
    if body is None and b"%d" in hdrs:  # the first Content-Length (0) is MHD's: the rest is a request
        req = head(hdrs % len(sm) + b"\r\n") + sm
    elif body is None:  # chunked: the smuggled request is the chunk, a proxy's body (Content-Length: 4)
        req = head(hdrs + b"\r\n") + b"%x\r\n" % len(sm) + sm + b"\r\n0\r\n\r\n"
    else:
        req = head(hdrs + b"\r\n") + body + sm
    cases.append((name, want, req))
# the same on a GET, which reads no body
cases.append(("a GET with Content-Length and Transfer-Encoding", 400,
              ("GET %s HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" % GET)
              .encode() + smuggled(99)))

for name, want, req in cases:
    a = raw(req)
    if a is None:
        ok("%s: the connection closed" % name, False, b"it stayed open 30 s")
        continue
    h, _, b = a.partition(b"\r\n\r\n")
    code = int(h.split(b" ")[1]) if h.startswith(b"HTTP/1.1 ") else 0
    try:
        msg = SHAPE(json.loads(b[:b.index(b"\r\nHTTP/")] if b"\r\nHTTP/" in b else b))
    except (ValueError, KeyError, TypeError):
        msg = None
    ok("%s: %d in the API's shape, Connection: close, closed, one answer" % (name, want),
       code == want and b"\r\nconnection: close" in h.lower() and a.count(b"HTTP/1.1 ") == 1
       and isinstance(msg, str) and "a proxy could read" in msg, a)

# what is not refused: keep-alive pipelining, a chunked body.  (libmicrohttpd
# 0.9.75 ends the connection after each answer on every listener but E2B's,
# with Connection: close, refused or not: there the second is never read.)


def pipelined(a, first):
    """a: the answers to two pipelined requests; first: the first's status"""
    codes = re.findall(rb"HTTP/1\.1 (\d{3}) ", a or b"")
    closed = b"\r\nconnection: close\r\n" in (a or b"").split(b"\r\n\r\n", 1)[0].lower()
    return (bool(codes) and codes[0] == first and b"a proxy could read" not in (a or b"")
            and (codes == [first, first] or (listener != "e2b" and len(codes) == 1 and closed)))


a = raw(("GET %s HTTP/1.1\r\nHost: x\r\n\r\nGET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % (GET, GET))
        .encode())
first = a.split(b" ")[1] if a and a.startswith(b"HTTP/1.1 ") else b"?"
ok("two pipelined GETs on one connection: both answered alike (or the first, and closed), neither refused",
   first not in (b"400", b"501", b"?") and pipelined(a, first), a or b"")
if listener == "native":
    body = b'{"command":"echo chunked-ok"}'
    a = raw(b"POST /exec HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
            b"Connection: close\r\n\r\n%x\r\n%s\r\n0\r\n\r\n" % (len(body), body))
    ok("a chunked body alone still runs", a is not None and a.startswith(b"HTTP/1.1 200") and b"chunked-ok" in a, a)
    body = b'{"command":"echo cl-ok"}'
    a = raw(b"POST /exec HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
            b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % (len(body), body))
    ok("a POST with one Content-Length, a GET pipelined behind it: answered, never refused",
       a is not None and b"cl-ok" in a and pipelined(a, b"200"), a)
sys.exit(1 if failed else 0)
