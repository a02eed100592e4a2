# tests/fresh/leave.py — run N of a freshness test (tests/e2e/freshness.sh,
# tests/serve/pool.sh): leave behind everything a run can leave.  Sent into
# the sandbox as `python3 -c`; prints "left SHM MSQ" and what else it made.
import os, socket, fcntl, subprocess, ctypes, sys
open("/tmp/ward-fresh", "w").write("x")
open("/dev/shm/ward-fresh", "w").write("x")
libc = ctypes.CDLL(None, use_errno=True)
shm = libc.shmget(0x7761726, 4096, 0o1666)           # IPC_CREAT | 0666
msq = libc.msgget(0x7761726, 0o1666)
a = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); a.bind("\0ward-fresh"); a.listen()
t = socket.socket(); t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
try:
    t.bind(("127.0.0.1", 47311)); t.listen(); tcp = "tcp"
except OSError:
    tcp = "no-loopback"                                  # --net none: lo is down
f = open("/tmp/ward-lock", "w"); fcntl.flock(f, fcntl.LOCK_EX)
subprocess.Popen(["sleep", "97.31"], start_new_session=True)
bytearray(64 << 20)                                      # a memory peak
print("left", shm >= 0, msq >= 0, tcp)
