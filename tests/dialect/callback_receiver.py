"""Listeners that count every connection, for tests/dialect/judge0_callback.sh.
argv: DIR ADDR:PORT:MODE...  MODE is ok (read one HTTP request, record it,
answer 200; a path starting /redirect answers 302 to a private address
instead), close (record the connection, close it at once) or hang (record
it, answer nothing for 30 s).  Each connection appends one JSON line to
DIR/events.jsonl; DIR/ready-PID appears once every socket listens."""
import json, os, socket, sys, threading, time

DIR = sys.argv[1]
lock = threading.Lock()


def record(listener, **kw):
    with lock, open(os.path.join(DIR, "events.jsonl"), "a") as f:
        f.write(json.dumps({"listener": listener, "t": time.time(), **kw}) + "\n")


def read_request(c):
    c.settimeout(10)
    data = b""
    while b"\r\n\r\n" not in data and len(data) < 65536:
        chunk = c.recv(4096)
        if not chunk:
            break
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, path = (lines[0].split(" ") + ["", ""])[:2]
    headers = {k.strip().lower(): v.strip() for k, _, v in (l.partition(":") for l in lines[1:])}
    want = int(headers.get("content-length", "0") or 0)
    while len(body) < want and len(body) < (8 << 20):
        chunk = c.recv(65536)
        if not chunk:
            break
        body += chunk
    return method, path, headers, body.decode("utf-8", "replace")


def serve(c, listener, mode):
    try:
        if mode == "close":
            record(listener)
        elif mode == "hang":
            record(listener)
            time.sleep(30)
        else:
            method, path, headers, body = read_request(c)
            record(listener, method=method, path=path, headers=headers, body=body)
            if path.startswith("/redirect"):
                c.sendall(b"HTTP/1.1 302 Found\r\nLocation: http://10.9.9.9:8080/followed\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            else:
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
    except OSError:
        pass
    finally:
        c.close()


def listen(spec):
    addr, port, mode = spec.rsplit(":", 2)
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, int(port)))
    s.listen(64)
    def loop():
        while True:
            c, _ = s.accept()
            threading.Thread(target=serve, args=(c, f"{addr}:{port}", mode), daemon=True).start()
    threading.Thread(target=loop, daemon=True).start()


for spec in sys.argv[2:]:
    listen(spec)
open(os.path.join(DIR, f"ready-{os.getpid()}"), "w").close()
time.sleep(600)
