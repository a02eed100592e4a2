#!/bin/bash
# Network namespaces of --net none sandboxes (src/system/netns.c): ward makes
# them as the host's root, so a sandbox holds no capability over its own; a
# server reuses one for the next sandbox only when it comes back untouched.
# Every trace a run can leave in a network namespace without capabilities —
# a socket held in flight past its process, an IPv6 flow label (it outlives
# its socket), a counted refusal — must make the server destroy that
# namespace, so that the next run finds none of it.
. "$(dirname "$0")/lib.bash"

made() { metric 'ward_netns_total{event="made"}'; }
reused() { metric 'ward_netns_total{event="reused"}'; }
discarded() { metric 'ward_netns_total{event="discarded"}'; }
# py CODE — POST /exec of python3 -c CODE (network none, the default); the body
py() { body_of "$(post_exec "$(python3 -c 'import json,sys; print(json.dumps({"argv":["python3","-c",sys.argv[1]],"limits":{"timeout_s":20}}))' "$1")")"; }

# One run at a time, so that each run gets the namespace the last one gave back.
start_server netns --max-concurrent 1 || exit 0

# --- whose namespace -----------------------------------------------------------
OWNER='import fcntl, os
fd = os.open("/proc/self/ns/net", os.O_RDONLY)
try:
    fcntl.ioctl(fd, 0xb701)   # NS_GET_USERNS
    print("own")
except PermissionError:
    print("host")'
expect_eq "netns: a --net none sandbox's network namespace belongs to the host's user namespace, not the sandbox's" \
	"host" "$(jg "$(py "$OWNER")" 'd["stdout"].strip()')"
r=$(post_exec "$(python3 -c 'import json,sys; print(json.dumps({"argv":["python3","-c",sys.argv[1]],"network":"loopback"}))' "$OWNER")")
expect_eq "netns: a loopback sandbox still makes its own (it brings lo up)" "own" "$(jg "$(body_of "$r")" 'd["stdout"].strip()')"

# --- an untouched namespace serves the next run ----------------------------------
# (a run's sandbox is torn down just after its answer, so each run waits for
# the namespace of the one before to be back: idle again)
idle_is() { [ "$(metric ward_netns_idle)" = "$1" ]; }
# quiet RUNS — that many runs of true, each once the last one's namespace is back
quiet() { for _ in $(seq "$1"); do wait_for idle_is 1; post_exec '{"argv":["true"]}' >/dev/null; done; wait_for idle_is 1; }
quiet 3
m0=$(made); u0=$(reused)
quiet 5
d0=$(discarded)
expect_eq "netns: five quiet runs in a row make no new namespace" "$m0" "$(made)"
expect_eq "netns: ... they reuse the one given back" "$((u0 + 5))" "$(reused)"
expect_eq "netns: /metrics shows it kept, idle (at most --max-concurrent + --pool are)" "1" "$(metric ward_netns_idle)"
r=$(py 'import socket
s = socket.socket(); s.bind(("0.0.0.0", 47312)); s.listen()
u = socket.socket(socket.AF_UNIX); u.bind("\0ward-netns"); u.listen()
print("bound")')
expect_contains "netns: a run binds a TCP listener and an abstract socket, and exits" "$(jg "$r" 'd["stdout"]')" "bound"
wait_for idle_is 1
expect_eq "netns: ... its sockets closed with it, so its namespace is kept" "$d0" "$(discarded)"
LOOKS='import socket
seen = []
u = socket.socket(socket.AF_UNIX)
try:
    u.connect("\0ward-netns"); seen.append("abstract")
except OSError: pass
if open("/proc/net/ip6_flowlabel").read().count("\n") > 1: seen.append("flowlabel")
snmp = open("/proc/net/snmp").read().split("\n")
ip = dict(zip(snmp[0].split()[1:], snmp[1].split()[1:]))
if ip.get("OutNoRoutes") != "0": seen.append("counter")
s = socket.socket()
try:
    s.bind(("0.0.0.0", 47312))
except OSError: seen.append("port")
print("seen:" + ",".join(seen))'
expect_eq "netns: the next run finds no socket of it (closed with its process)" "seen:" "$(jg "$(py "$LOOKS")" 'd["stdout"].strip()')"

# --- what outlives a process makes the namespace go ------------------------------
# A socket whose only reference is in flight on its own queue lives on after
# its process, until the kernel's garbage collector finds the cycle.
r=$(py 'import socket, array
u = socket.socket(socket.AF_UNIX); u.bind("\0ward-netns"); u.listen()
a, b = socket.socketpair()
a.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [u.fileno(), a.fileno(), b.fileno()]))])
print("in flight")')
expect_contains "netns: a run leaves an abstract socket in flight" "$(jg "$r" 'd["stdout"]')" "in flight"
expect_eq "netns: the next run cannot reach it" "seen:" "$(jg "$(py "$LOOKS")" 'd["stdout"].strip()')"

# An IPv6 flow label lingers 60 s after its socket is closed.
d0=$(discarded)
r=$(py 'import socket, struct
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
req = struct.pack("16sIBBHHHI", socket.inet_pton(socket.AF_INET6, "2001:db8::1"), socket.htonl(0x12345), 0, 255, 1, 0, 60, 0)
s.setsockopt(41, 32, req)   # IPV6_FLOWLABEL_MGR: get, create, linger 60 s
print("labels", open("/proc/net/ip6_flowlabel").read().count("\n") - 1)')
expect_eq "netns: a run makes an IPv6 flow label" "labels 1" "$(jg "$r" 'd["stdout"].strip()')"
discarded_is() { [ "$(discarded)" = "$1" ]; }
check "netns: the namespace it lingers in is destroyed, not reused" wait_for discarded_is "$((d0 + 1))"
expect_eq "netns: the next run sees no flow label" "seen:" "$(jg "$(py "$LOOKS")" 'd["stdout"].strip()')"

# A refused connect is counted (Ip OutNoRoutes): traffic, even refused, is a trace.
d0=$(discarded)
r=$(py 'import socket
try:
    socket.create_connection(("127.0.0.1", 9), timeout=2)
except OSError as e:
    print("refused", e.errno)')
expect_eq "netns: inside, 127.0.0.1 is unreachable (lo is down)" "refused 101" "$(jg "$r" 'd["stdout"].strip()')"
check "netns: a namespace with traffic counted is destroyed" wait_for discarded_is "$((d0 + 1))"
expect_eq "netns: the next run's counters start at zero" "seen:" "$(jg "$(py "$LOOKS")" 'd["stdout"].strip()')"

# Multicast groups: their report timers outlive the socket and its process,
# so a join is refused (seccomp), at either level.
r=$(py 'import socket, struct
res = []
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
for g in ("ff05::1", "ff05::2", "ff05::3"):
    try:
        s.setsockopt(41, 20, socket.inet_pton(socket.AF_INET6, g) + struct.pack("I", 1)); res.append("joined")
    except OSError as e: res.append(str(e.errno))
t = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for opt, val in ((35, socket.inet_aton("239.1.1.1") + socket.inet_aton("0.0.0.0")),
                 (42, struct.pack("I", 1) + b"\0" * 132)):
    try:
        t.setsockopt(0, opt, val); res.append("joined")
    except OSError as e: res.append(str(e.errno))
print(" ".join(res))')
expect_eq "netns: multicast joins are refused (EPERM), IPv6 and IPv4" "1 1 1 1 1" "$(jg "$r" 'd["stdout"].strip()')"
r=$(py 'import time; time.sleep(2.5)
snmp6 = dict(l.split() for l in open("/proc/net/snmp6") if l.strip())
print("Ip6OutRequests", snmp6["Ip6OutRequests"])')
expect_eq "netns: 2.5 s later, the next run's namespace has sent nothing" "Ip6OutRequests 0" "$(jg "$r" 'd["stdout"].strip()')"

# --- the freshness scripts, through reused namespaces -----------------------------
LEAVE=$(cat "$ROOT/tests/fresh/leave.py")
LOOK=$(cat "$ROOT/tests/fresh/look.py")
expect_contains "netns fresh: run N left its traces" "$(jg "$(py "$LEAVE")" 'd["stdout"]')" "left True True"
expect_eq "netns fresh: run N+1 sees nothing of run N" "seen:" "$(jg "$(py "$LOOK")" 'd["stdout"].strip()')"
