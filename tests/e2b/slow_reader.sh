#!/bin/bash
# tests/e2b/slow_reader.sh — a code interpreter's output is never lost to a
# client that reads slowly (raw HTTP): the cell writes 16 MiB in 256 lines
# (eight times the output the session keeps of a kernel, more than the
# sockets hold) while the client reads nothing for 3 s, then reads on;
# every line arrives, whole and in order, with no "dropped" note.  The kernel's pipe waits for its stream
# (output_waits_reader); before, the kept window overflowed and lines
# were lost.
. "$(dirname "$0")/lib.bash"
start_alice slow || exit 1
PYTHONPATH=$E2B_DIR timeout -k 5 180 python3 - "$E2B_URL" <<'PY'
import json, socket, sys, time
from raw import checker, create, data_plane
url = sys.argv[1]
host, port = url.split("//")[1].rsplit(":", 1)
ok = checker("e2b slow reader")
sb = create(url)
N = 256   # lines of 64 KiB: 16 MiB
code = "import sys\nfor i in range(%d): sys.stdout.write('%%05d' %% i + 'x' * 65530 + '\\n')\n" % N
body = json.dumps({"code": code}).encode()
h = dict(data_plane(sb), **{"E2b-Sandbox-Port": "49999", "Content-Type": "application/json"})
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 16)   # before connect: no autotuning past it
s.settimeout(120)
s.connect((host, int(port)))
head = "POST /execute HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n" % (host, len(body))
head += "".join("%s: %s\r\n" % kv for kv in h.items()) + "Connection: close\r\n\r\n"
s.sendall(head.encode() + body)
time.sleep(3)   # reads nothing: the server's send buffer fills, its stream stops looking
data = b""
while True:
    b = s.recv(1 << 16)
    if not b:
        break
    data += b
s.close()
head, _, rest = data.partition(b"\r\n\r\n")
text = b""   # the chunked body, joined
while rest:
    size, _, rest = rest.partition(b"\r\n")
    n = int(size.split(b";")[0] or b"0", 16)
    if not n:
        break
    text, rest = text + rest[:n], rest[n + 2:]
# the body is chunked NDJSON: take the stdout events' text
out, notes = [], []
for line in text.split(b"\n"):
    line = line.strip()
    if not line.startswith(b"{"):
        continue
    try:
        ev = json.loads(line)
    except ValueError:
        continue
    if ev.get("type") == "stdout":
        out.append(ev.get("text", ""))
    if ev.get("type") == "stderr" and "dropped" in ev.get("text", ""):
        notes.append(ev["text"])
lines = "".join(out).split("\n")[:-1]
ok("every line of 16 MiB arrives to a client that read nothing for 3 s", len(lines) == N, (len(lines), N))
ok("... whole and in order", lines == ['%05d' % i + 'x' * 65530 for i in range(N)], [l[:8] for l in lines[:3]])
ok("... and nothing was dropped", not notes, notes[:2])
PY
stop_e2b slow
