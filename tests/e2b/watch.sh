#!/bin/bash
# tests/e2b/watch.sh — WatchDir on a shared runner (issue 30.5), with the
# real SDK (tests/e2b/shared.mjs watch): events found by one merge of two
# sorted listings; a directory past 10000 entries refused; 8 watches a
# sandbox; a watch whose client left ends within a poll, and a command
# stream within a wait (raw sockets: their requests' log lines come, long
# before the 15 s keepalive that would otherwise be the first write to
# fail; the commands live on).  Streams are parked connections of the
# server's I/O threads (issue 30.4): six watches hold no thread, and 20
# idle command streams hold none beyond what the library keeps for each
# running command (one).
. "$(dirname "$0")/lib.bash"
node_ready || exit 0
start_alice watch || exit 1
sdk_checked shared.mjs watch
# watches whose clients leave without a word
PYTHONPATH=$E2B_DIR timeout -k 5 120 python3 - "$E2B_URL" "$SRV_PID" "$SRV_LOG" <<'PY'
import json, os, socket, sys, time, urllib.request
from raw import checker, create, data_plane, envelope
url, pid, log = sys.argv[1], sys.argv[2], sys.argv[3]
host, port = url.split("//")[1].rsplit(":", 1)
ok = checker("e2b watch")
def threads():
    return len(os.listdir("/proc/%s/task" % pid))
sb = create(url)
def settled():   # the create's connection thread has ended: the same count for 0.5 s
    last, same = threads(), 0
    for _ in range(50):
        time.sleep(0.1)
        n = threads()
        same = same + 1 if n == last else 0
        last = n
        if same >= 5:
            break
    return last
base = settled()
def ended(path):
    """requests of path logged: a request's line is written when it ends"""
    with open(log) as f:
        return sum(1 for l in f if '"path":"%s"' % path in l)
def streams(path, msg, n=6, sb=sb):
    """n Connect streams of path opened on raw sockets"""
    body, out = envelope(msg), []
    for i in range(n):
        s = socket.create_connection((host, int(port)), timeout=10)
        s.sendall(b"POST %s HTTP/1.1\r\nHost: x\r\nE2b-Sandbox-Id: %s\r\nX-Access-Token: %s\r\n"
                  b"Content-Type: application/connect+json\r\nConnect-Protocol-Version: 1\r\nContent-Length: %d\r\n\r\n"
                  % (path.encode(), sb["sandboxID"].encode(), sb["envdAccessToken"].encode(), len(body)) + body)
        out.append(s)
    return out
socks = streams("/filesystem.Filesystem/WatchDir", {"path": "/home/user"})
def started(s):
    data = b""
    while b"start" not in data:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    return b"start" in data
ok("six watches start", all(started(s) for s in socks))
during = threads()
ok("six watches hold no thread of their own", during <= base, (base, during))
for s in socks:
    s.close()
W = "/filesystem.Filesystem/WatchDir"
for _ in range(50):   # a poll is 0.2 s: they end within it; the keepalive would take 15 s
    if ended(W) >= 6:
        break
    time.sleep(0.1)
ok("watches whose clients left end within a poll, not at the next write", ended(W) >= 6, ended(W))
# command streams too: the commands live on, their streams end within a wait
P = "/process.Process/Start"
sb2 = create(url)   # a session runs 16 commands at once: 10 in each of two
base = settled()
sleeper = {"process": {"cmd": "/bin/sh", "args": ["-c", "sleep 60"]}}
socks = streams(P, sleeper, 10) + streams(P, sleeper, 10, sb2)
ok("20 command streams start", all(started(s) for s in socks))
during = settled()   # what the session keeps for its running commands: one thread each, none for a stream
ok("20 idle command streams hold no thread of their own", during <= base + 20, (base, during))
for s in socks:
    s.close()
for _ in range(50):   # they end at the next look (0.1 s); the keepalive would take 15 s
    if ended(P) >= 20:
        break
    time.sleep(0.1)
ok("command streams whose clients left end within a wait, not at the next write", ended(P) >= 20, ended(P))
h = dict(data_plane(sb), **{"Content-Type": "application/json", "Connect-Protocol-Version": "1"})
procs = json.loads(urllib.request.urlopen(urllib.request.Request(url + "/process.Process/List", data=b"{}", headers=h),
                                          timeout=30).read())["processes"]
ok("their commands live on", len(procs) >= 10, procs)
PY
stop_e2b watch
