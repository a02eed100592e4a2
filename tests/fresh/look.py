# tests/fresh/look.py — run N+1 of a freshness test: look for everything
# tests/fresh/leave.py left.  Prints "seen:" and a comma list (empty: fresh).
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
