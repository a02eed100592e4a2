#!/bin/bash
# tests/e2e/network.sh — --net none|loopback (SPEC §2, §3): own network
# namespace, lo down or up, never a route to the host.  Only 127.0.0.1.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/e2e.inc"
PY=/usr/bin/python3

# A TCP listener on the host's 127.0.0.1, killed by pid when the script ends.
port=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
(cd "$T" && echo host-page >index.html && exec timeout 120 $PY -m http.server --bind 127.0.0.1 "$port") >/dev/null 2>&1 &
srv=$!
trap 'kill $srv 2>/dev/null; wait $srv 2>/dev/null; rm -rf "$T"' EXIT
up=no
for _ in $(seq 50); do
	if $PY -c "import socket; socket.create_connection(('127.0.0.1',$port),0.2)" 2>/dev/null; then up=yes; break; fi
	sleep 0.1
done
expect_eq "control: host listener reachable from the host" yes "$up"

# connect probe: prints "connected" or the error's errno name.
CONNECT="import socket,errno
try:
    socket.create_connection(('127.0.0.1',$port),2).close(); print('connected')
except OSError as e:
    print(errno.errorcode.get(e.errno, str(e)))"

for mode in none loopback; do
	wr --timeout 15 --net $mode -- $PY -c "$CONNECT"
	expect_eq "net $mode: ran" 0 "$RC"
	case "$OUT" in connected|'') fail "net $mode: host 127.0.0.1:$port unreachable" "got [$OUT] $ERR" ;;
	*) pass "net $mode: host 127.0.0.1:$port unreachable ($OUT)" ;; esac
	wr --timeout 10 --net $mode -- cat /proc/net/dev
	ifs=$(printf '%s\n' "$OUT" | awk -F: 'NR>2{gsub(/ /,"",$1); print $1}' | tr '\n' ' ' | sed 's/ $//')
	expect_eq "net $mode: only lo" lo "$ifs"
	# No route anywhere but loopback (no default route, no host addresses).
	wr --timeout 10 --net $mode -- cat /proc/net/route
	# (the header line only, or nothing at all)
	if [ "$(printf '%s\n' "$OUT" | grep -c .)" -le 1 ]; then pass "net $mode: empty routing table"
	else fail "net $mode: empty routing table" "$(printf '%s\n' "$OUT" | tail -n +2 | head -3)"; fi
	wr --timeout 10 --net $mode -- $PY -c "import socket,errno
s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)
try:
    s.connect(('10.255.255.1',9)); print('route')
except OSError as e:
    print(errno.errorcode.get(e.errno))"
	expect_eq "net $mode: no route out (UDP connect to 10.255.255.1)" ENETUNREACH "$OUT"
done

# none: lo is down.
wr --timeout 10 --net none -- $PY -c 'import fcntl,socket,struct
s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)
r=fcntl.ioctl(s,0x8913,struct.pack("16sH14s",b"lo",0,b""))
print("up" if struct.unpack("16sH14s",r)[1] & 1 else "down")'
expect_eq "net none: lo is down" down "$OUT"
# Default is none.
wr --timeout 10 -- $PY -c 'import fcntl,socket,struct
s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)
r=fcntl.ioctl(s,0x8913,struct.pack("16sH14s",b"lo",0,b""))
print("up" if struct.unpack("16sH14s",r)[1] & 1 else "down")'
expect_eq "net default: lo is down" down "$OUT"

# loopback: lo is up and the sandbox can serve itself on 127.0.0.1.
SELF='import socket,threading
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1)
s.bind(("127.0.0.1",0)); s.listen(1); p=s.getsockname()[1]
def serve():
    c,_=s.accept(); c.sendall(b"self-ok"); c.close()
threading.Thread(target=serve,daemon=True).start()
c=socket.create_connection(("127.0.0.1",p),2); print(c.recv(16).decode())'
wr --timeout 15 --net loopback -- $PY -c "$SELF"
expect_eq "net loopback: listen and connect to itself" self-ok "$OUT"
wr --timeout 15 --net none -- $PY -c "$SELF"
if [ "$OUT" = self-ok ]; then fail "net none: loopback unusable" "self-connect worked"; else pass "net none: loopback unusable"; fi
# The sandbox can bind the same port the host listens on: separate namespaces.
wr --timeout 15 --net loopback -- $PY -c "import socket
s=socket.socket(); s.bind(('127.0.0.1',$port)); s.listen(1); print('bound')"
expect_eq "net loopback: host's port is free inside" bound "$OUT"
# Abstract unix sockets live in the network namespace: the host's are not reachable.
$PY - "$T" <<'PY' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind("\0ward-test-abstract-%s" % sys.argv[1].split(".")[-1]); s.listen(1); s.settimeout(8)
try:
    while True: s.accept()[0].close()
except Exception: pass
PY
ab=$!
for _ in $(seq 100); do  # until it listens (up to 10 s)
	ctl=$($PY -c "import socket
s=socket.socket(socket.AF_UNIX,socket.SOCK_STREAM)
s.connect('\0ward-test-abstract-${T##*.}'); print('connected')" 2>&1)
	[ "$ctl" = connected ] && break
	sleep 0.1
done
expect_eq "control: host abstract socket reachable from the host" connected "$ctl"
wr --timeout 10 --net loopback -- $PY -c "import socket
s=socket.socket(socket.AF_UNIX,socket.SOCK_STREAM)
try:
    s.connect('\0ward-test-abstract-${T##*.}'); print('connected')
except OSError as e: print('refused')"
expect_eq "host abstract unix socket unreachable" refused "$OUT"
kill $ab 2>/dev/null; wait $ab 2>/dev/null || true
