#!/bin/bash
# tests/e2e/freshness.sh — a run never observes its predecessor (issue 6):
# run N leaves behind everything it can, run N+1 looks for all of it.  Today
# every run is built from scratch; this test guards any future recycling of
# namespaces, cgroups or pre-built sandboxes.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

LEAVE='
import os, socket, fcntl, subprocess, ctypes, sys
open("/tmp/ward-fresh", "w").write("x")
open("/dev/shm/ward-fresh", "w").write("x")
libc = ctypes.CDLL(None, use_errno=True)
shm = libc.shmget(0x7761726, 4096, 0o1666)           # IPC_CREAT | 0666
msq = libc.msgget(0x7761726, 0o1666)
a = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); a.bind("\0ward-fresh"); a.listen()
t = socket.socket(); t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
t.bind(("127.0.0.1", 47311)); t.listen()
f = open("/tmp/ward-lock", "w"); fcntl.flock(f, fcntl.LOCK_EX)
subprocess.Popen(["sleep", "97.31"], start_new_session=True)
bytearray(64 << 20)                                      # a memory peak
print("left", shm >= 0, msq >= 0)
'
LOOK='
import os, socket, ctypes
libc = ctypes.CDLL(None, use_errno=True)
seen = []
for p in ("/tmp/ward-fresh", "/dev/shm/ward-fresh", "/tmp/ward-lock"):
    if os.path.exists(p): seen.append(p)
if libc.shmget(0x7761726, 0, 0) >= 0: seen.append("sysv-shm")
if libc.msgget(0x7761726, 0) >= 0: seen.append("sysv-msg")
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try: s.connect("\0ward-fresh"); seen.append("abstract-socket")
except OSError: pass
t = socket.socket()
try: t.connect(("127.0.0.1", 47311)); seen.append("tcp-listener")
except OSError: pass
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            if open("/proc/%s/cmdline" % pid, "rb").read() == b"sleep\x0097.31\x00": seen.append("process")
        except OSError: pass
print("seen:" + ",".join(seen))
'
out=$("$WARD" run --json --net loopback --timeout 20 -- /usr/bin/python3 -c "$LEAVE" 2>&1)
expect_contains "fresh: run N left its traces" "$(jget "$out" 'd["stdout"]')" "left True True"
peak=$(jget "$out" 'd["usage"]["max_rss_kb"]')
if [ "${peak:-0}" -ge 60000 ]; then pass "fresh: run N had a 64 MiB peak"; else fail "fresh: run N had a 64 MiB peak" "max_rss_kb=$peak"; fi

out=$("$WARD" run --json --net loopback --timeout 20 -- /usr/bin/python3 -c "$LOOK" 2>&1)
expect_eq "fresh: run N+1 sees nothing of run N" "seen:" "$(jget "$out" 'd["stdout"]' | tr -d '\n')"
peak2=$(jget "$out" 'd["usage"]["max_rss_kb"]')
if [ "${peak2:-0}" -lt 60000 ]; then pass "fresh: run N+1's memory peak is its own"; else fail "fresh: run N+1's memory peak is its own" "max_rss_kb=$peak2"; fi

# And nothing of either is left on the host.
left=$(for c in /proc/[0-9]*/cmdline; do [ "$(tr '\0' ' ' <"$c" 2>/dev/null)" = "sleep 97.31 " ] && echo "$c"; done)
expect_eq "fresh: no background process left on the host" "" "$left"
