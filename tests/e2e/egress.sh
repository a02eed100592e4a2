#!/bin/bash
# tests/e2e/egress.sh — ward run --net allow (SPEC §13): the sandbox reaches
# only the listed names, through ward's proxy, and the proxy survives hostile
# clients.  Upstreams are local servers on 127.0.0.1 reached by pinned names
# (--egress-resolve); nothing leaves the host.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/e2e.inc"
. "$ROOT/tests/egress.bash"
PY=/usr/bin/python3

EG_PID=
trap 'check_guard; [ -n "$EG_PID" ] && kill "$EG_PID" 2>/dev/null; rm -rf "$T"' EXIT
if ! egress_fixture "$T/fx"; then
	fail "egress: local upstreams start" "$(cat "$T/fx/servers.err" 2>/dev/null | head -5)"
	exit 0
fi
H=$EG_HTTP S=$EG_HTTPS L=$EG_SLOW U=$EG_UDP
PIN=(--egress-resolve pypi.test:127.0.0.1 --egress-resolve tls.test:127.0.0.1 --egress-resolve git.test:127.0.0.1
	--egress-resolve slow.test:127.0.0.1 --egress-resolve big.test:127.0.0.1)

# ew NAME ARGS... — ward run --json --net allow ARGS, the result in $T/NAME.json
ew() {
	local name=$1; shift
	timeout -k 2 "${WT:-60}" "$WARD" run --json --net allow "${PIN[@]}" --memory 1024 "$@" >"$T/$name.json" \
		2>"$T/$name.err" </dev/null
	RC=$?
	J=$T/$name.json
}
jq_() { egress_json "$J" "$1"; }

# --- the environment, and refusals before anything runs
ew env --allow-host pypi.test:$H -- /usr/bin/env
env_out=$(jq_ 'r["stdout"]')
for v in HTTP_PROXY=http://127.0.0.1:3128 HTTPS_PROXY=http://127.0.0.1:3128 http_proxy=http://127.0.0.1:3128 \
	https_proxy=http://127.0.0.1:3128 NO_PROXY=localhost,127.0.0.1 no_proxy=localhost,127.0.0.1; do
	expect_contains "egress: the command's environment has $v" "$env_out" "$v"
done
expect_eq "egress: a run that tried nothing lists nothing" "[] False" "$(jq_ 'r["egress"], r["egress_truncated"]' | tr -d '(),')"
wr --allow-host pypi.test -- true
expect_eq "egress: --allow-host without --net allow is refused (125)" 125 "$RC"
wr --net allow -- true
expect_eq "egress: --net allow without a host is refused (125)" 125 "$RC"
expect_contains "egress: ... and says to give --allow-host" "$ERR" "--allow-host"
wr --net allow --allow-host 'pypi.test:99999' -- true
expect_eq "egress: a bad pattern is refused (125)" 125 "$RC"

# --- what works unchanged: pip, curl over CONNECT (TLS), urllib, git
ew pip --timeout 120 --allow-host pypi.test:$H --shell "python3 -m pip install --no-deps --disable-pip-version-check \
--no-cache-dir --trusted-host pypi.test --target /work/t --index-url http://pypi.test:$H/simple/ wardpkg >/dev/null 2>&1;
PYTHONPATH=/work/t python3 -c 'import wardpkg; print(wardpkg.VALUE)'"
expect_eq "egress: pip install from a simple index through the proxy" 42 "$(jq_ 'r["stdout"].strip()')"
expect_eq "egress: pip's connections are listed, allowed, with bytes both ways" True \
	"$(jq_ 'len(r["egress"]) >= 2 and all(e["allowed"] and e["host"] == "pypi.test" and e["port"] == '$H' and e["bytes_out"] > 0 and e["bytes_in"] > 0 for e in r["egress"])')"

ew tls --allow-host tls.test:$S -- curl -sSk "https://tls.test:$S/hi.txt"
expect_eq "egress: curl over CONNECT to a TLS server" hello "$(jq_ 'r["stdout"].strip()')"
expect_eq "egress: ... one connection, allowed, bytes counted (the TLS handshake is more than the file)" True \
	"$(jq_ 'len(r["egress"]) == 1 and r["egress"][0]["allowed"] and r["egress"][0]["bytes_in"] > 500 and r["egress"][0]["bytes_out"] > 100')"

ew urllib --allow-host pypi.test:$H -- python3 -c "import urllib.request; print(urllib.request.urlopen('http://pypi.test:$H/hi.txt').read().decode())"
expect_eq "egress: Python's urllib through HTTP_PROXY" hello "$(jq_ 'r["stdout"].strip()')"
# hello\n is 6 bytes of body: what came in is the answer's head and those
expect_eq "egress: ... bytes_in is the answer (head and 6 bytes of body)" True \
	"$(jq_ '100 < r["egress"][0]["bytes_in"] < 1000 and r["egress"][0]["bytes_out"] > 50')"

ew git --allow-host git.test:$H --shell "git clone -q http://git.test:$H/repo.git /tmp/c && cat /tmp/c/README"
expect_eq "egress: git clone over http (a dumb repository)" egress-git-ok "$(jq_ 'r["stdout"].strip()')"

# A literal listed exactly (with its port) is reached as it is: the operator's word.
ew literal --allow-host 127.0.0.1:$H -- curl -sS "http://127.0.0.1:$H/hi.txt" --noproxy ''
expect_eq "egress: an address listed exactly with its port is allowed" hello "$(jq_ 'r["stdout"].strip()')"

# --- refusals (each a 403 from the proxy, and a record with the reason)
probe="curl -s -o /dev/null -w '%{http_code} ' --noproxy '' -x http://127.0.0.1:3128"
ew refuse --allow-host pypi.test:$H --allow-host localhost:$H --allow-host '*.test' --shell "
$probe http://evil.test:$H/; $probe http://localhost:$H/; $probe http://169.254.169.254/latest/meta-data/;
$probe 'http://[::1]:$H/'; $probe http://0.0.0.0:$H/; $probe http://pypi.test:$((H == 65535 ? 1 : H + 1))/;
$probe http://test/"
expect_eq "egress: unlisted name, unpinned loopback name, metadata, [::1], 0.0.0.0, wrong port, bare suffix: 403 each" \
	"403 403 403 403 403 403 403" "$(jq_ 'r["stdout"].strip()')"
expect_eq "egress: ... each recorded as refused" "False False False False False False False" \
	"$(jq_ '" ".join(str(e["allowed"]) for e in r["egress"])')"
reasons=$(jq_ '"|".join(e["host"] + ":" + e.get("reason", "") for e in r["egress"])')
expect_contains "egress: an unlisted name says so" "$reasons" "evil.test:not in the allow-list"
expect_contains "egress: a listed name that resolves to 127.0.0.1 unpinned is refused as loopback" "$reasons" \
	"localhost:resolves to a loopback address"
expect_contains "egress: the metadata address literal is refused" "$reasons" "169.254.169.254:not in the allow-list"

# --- a loop of refused CONNECTs: throttled, counted, listed (the first 64),
# its heads spend egress_bytes; the proxy's CPU is in usage.proxy_cpu_ms
LOOP="import socket, time
def ask(head, wait):
    s = socket.socket(); s.settimeout(wait)
    try:
        s.connect(('127.0.0.1', 3128)); s.sendall(head); return s.recv(200)
    except OSError:
        return b''
    finally:
        s.close()
t = time.monotonic(); n = answered = 0
while n < 2000 and time.monotonic() - t < 3:
    answered += ask(b'CONNECT evil.test:443 HTTP/1.1\\r\\n\\r\\n', 0.05).startswith(b'HTTP/1.1 403'); n += 1
print(n, answered, round(time.monotonic() - t, 2))"
ew refloop --timeout 30 --allow-host pypi.test:$H -- python3 -c "$LOOP"
read -r n answered secs <<<"$(jq_ 'r["stdout"].strip()')"
if [ "${answered:-9999}" -ge 64 ] && [ "$(egress_json "$J" "int($answered <= 128 + 50 * $secs + 8)")" = 1 ]; then
	pass "egress: a loop of refused CONNECTs is throttled ($answered of $n answered in $secs s)"
else fail "egress: a loop of refused CONNECTs is throttled" "$n $answered $secs: $(jq_ 'r["stderr"][-300:]')"; fi
expect_eq "egress: ... the first 64 listed, refused, each with its head's 34 bytes; egress_truncated" True \
	"$(jq_ 'len(r["egress"]) == 64 and r["egress_truncated"] and all(not e["allowed"] and e["bytes_out"] == 34 for e in r["egress"])')"
expect_eq "egress: ... usage.proxy_cpu_ms tells the proxy's CPU (ward's, outside the cgroup), under 200 ms" True \
	"$(jq_ '0 <= r["usage"]["proxy_cpu_ms"] < 200')"
ew refbytes --egress-bytes 3400 --allow-host pypi.test:$H -- python3 -c "${LOOP/n < 2000/n < 100}
print(ask(b'GET http://pypi.test:$H/hi.txt HTTP/1.1\\r\\n\\r\\n', 5).split(b'\\r\\n\\r\\n')[-1].decode().strip())"
expect_eq "egress: 100 refused heads (3400 bytes) spend --egress-bytes 3400: then an allowed name is refused for it" \
	"ward egress: egress_bytes limit reached" "$(jq_ 'r["stdout"].splitlines()[-1] if r["stdout"] else r["stderr"][-300:]')"
expect_eq "egress: ... and 100 tries recorded, the 64 listed refused with their bytes" True \
	"$(jq_ 'len(r["egress"]) == 64 and r["egress_truncated"] and sum(e["bytes_out"] for e in r["egress"]) == 64 * 34')"

# --- the netns has no route: raw TCP to a host listener, DNS, UDP
ew raw --allow-host pypi.test:$H -- python3 -c "
import socket, errno, time
try:
    socket.create_connection(('127.0.0.1', $H), 3); print('connected')
except OSError as e:
    print(errno.errorcode.get(e.errno, 'err'))
t = time.monotonic()
try:
    socket.getaddrinfo('pypi.test', 80); print('resolved')
except OSError as e:
    print('noname', time.monotonic() - t < 10)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for _ in range(20):
    try:
        s.sendto(b'x', ('127.0.0.1', $U))
    except OSError:
        pass
print('sent')"
out=$(jq_ 'r["stdout"].split()')
expect_eq "egress: raw TCP to a host listener's 127.0.0.1 port fails (no route out)" ECONNREFUSED "$(jq_ 'r["stdout"].split()[0]')"
expect_eq "egress: names do not resolve inside, and fail fast" "noname True" "$(jq_ '" ".join(r["stdout"].split()[1:3])')"
sleep 0.5
expect_eq "egress: a UDP listener on the host's 127.0.0.1 received nothing" 0 "$(cat "$T/fx/udp_count" 2>/dev/null | tr -d '\n')"
expect_eq "egress: ... and the proxy saw no connection" 0 "$(jq_ 'len(r["egress"])')"

# --- egress_bytes: a download past it is cut there
ew bytes --egress-bytes 1000000 --allow-host big.test:$H -- curl -s -o /tmp/b "http://big.test:$H/big.bin" -w '%{size_download}'
got=$(jq_ 'int(r["stdout"] or 0)')
if [ "$got" -gt 0 ] && [ "$got" -le 1000000 ]; then pass "egress: a 4 MiB download past egress_bytes 1000000 is cut ($got bytes)"
else fail "egress: a 4 MiB download past egress_bytes 1000000 is cut" "got $got: $(jq_ 'r["stderr"], r["egress"]')"; fi
expect_eq "egress: ... the record says why, and bytes both ways add up to the limit exactly" True \
	"$(jq_ 'r["egress"][0]["reason"] == "egress_bytes limit reached" and r["egress"][0]["bytes_in"] + r["egress"][0]["bytes_out"] == 1000000')"

# --- hostile clients: malformed heads, a header flood; then the proxy still serves
HOSTILE="import socket
def ask(data):
    s = socket.create_connection(('127.0.0.1', 3128), 5); s.settimeout(10)
    s.sendall(data); b = b''
    try:
        while True:
            c = s.recv(4096)
            if not c: break
            b += c
    except OSError:
        pass
    return b.split(b' ')[1].decode() if b.startswith(b'HTTP/1.') else 'none'
print(ask(b'CONNECT\r\n\r\n'), ask(b'CONNECT pypi.test HTTP/1.1\r\n\r\n'), ask(b'CONNECT pypi.test:0 HTTP/1.1\r\n\r\n'),
      ask(b'GET / HTTP/1.1\r\nHost: pypi.test\r\n\r\n'), ask(b'\x00\xff\x16\x03\x01junk\r\n\r\n'),
      ask(b'GET http://a@pypi.test:$H/ HTTP/1.1\r\n\r\n'), ask(b'GET http://pypi.test:$H/ HTTP/9\r\n\r\n'),
      ask(b'GET http://pypi.test:$H/hi.txt HTTP/1.1\r\nX: ' + b'a' * 20000 + b'\r\n\r\n'))
print(ask(b'GET http://pypi.test:$H/hi.txt HTTP/1.1\r\nHost: evil.test\r\n\r\n'))
import random, time
random.seed(15)
for i in range(300):
    junk = bytes(random.getrandbits(8) for _ in range(random.randint(0, 2048)))
    if i % 3 == 0:
        junk = random.choice([b'CONNECT ', b'GET http://', b'GET http://pypi.test:$H/']) + junk
    s = socket.create_connection(('127.0.0.1', 3128), 5)
    try:
        s.sendall(junk + random.choice([b'\r\n\r\n', b'', b'\r\n']))
    except OSError:
        pass
    s.close()
time.sleep(0.5)
print(ask(b'GET http://pypi.test:$H/hi.txt HTTP/1.1\r\n\r\n'))"
ew hostile --allow-host pypi.test:$H -- python3 -c "$HOSTILE"
expect_eq "egress: malformed request lines answer 400, a 20 KiB head 431" "400 400 400 400 400 400 400 431" \
	"$(jq_ 'r["stdout"].splitlines()[0] if r["stdout"] else r["stderr"]')"
expect_eq "egress: ... and the proxy still serves (a Host header naming another host is replaced)" 200 \
	"$(jq_ 'r["stdout"].splitlines()[1] if r["stdout"].count(chr(10)) > 1 else r["stderr"]')"
expect_eq "egress: 300 random heads later, the proxy still serves" 200 \
	"$(jq_ 'r["stdout"].splitlines()[2] if r["stdout"].count(chr(10)) > 2 else r["stderr"][-300:]')"

# --- a client that sends no request head is closed (after 10 s; bounds 10x generous)
ew silent --timeout 60 --allow-host pypi.test:$H -- python3 -c "import socket, time
s = socket.create_connection(('127.0.0.1', 3128), 5); s.settimeout(55); t = time.monotonic()
try:
    print(s.recv(1) == b'', round(time.monotonic() - t))
except OSError as e:
    print('error', e)"
read -r closed secs <<<"$(jq_ 'r["stdout"].strip()')"
if [ "$closed" = True ] && [ "${secs:-0}" -ge 5 ] && [ "${secs:-99}" -le 40 ]; then
	pass "egress: a client that sends no request head is closed by the head timeout (after $secs s)"
else fail "egress: a client that sends no request head is closed by the head timeout" "$(jq_ 'r["stdout"], r["stderr"]')"; fi

# --- 1000 connections at once: at most 64 held, the rest closed; others unaffected
FLOOD="import socket, time
held = []
for i in range(1000):
    s = socket.socket(); s.settimeout(2)
    try:
        s.connect(('127.0.0.1', 3128)); held.append(s)
    except OSError:
        s.close()
time.sleep(2)
alive = 0
for s in held:
    s.setblocking(False)
    try:
        alive += s.recv(1) != b''
    except BlockingIOError:
        alive += 1
    except OSError:
        pass
print(alive <= 64, alive)
for s in held:
    s.close()
time.sleep(0.5)
s = socket.create_connection(('127.0.0.1', 3128), 5)
s.sendall(b'GET http://pypi.test:$H/hi.txt HTTP/1.1\r\n\r\n'); s.settimeout(10)
print(s.recv(12).decode().split()[-1])"
WT=90 ew flood --timeout 60 --nofile 2048 --pids 64 --allow-host pypi.test:$H -- python3 -c "$FLOOD" &
flood=$!
sleep 1
ew other --allow-host tls.test:$S -- curl -sSk "https://tls.test:$S/hi.txt"
expect_eq "egress: another sandbox is unaffected by a flood of its neighbour's proxy" hello "$(jq_ 'r["stdout"].strip()')"
wait $flood
J=$T/flood.json
expect_eq "egress: 1000 connections: the proxy holds at most 64 of them" True "$(jq_ 'r["stdout"].split()[0] if r["stdout"] else r["stderr"]')"
expect_eq "egress: ... and once they close, answers a new one" 200 "$(jq_ '" ".join(r["stdout"].split()[2:3]) or r["stderr"][-300:]')"

# --- a slow-loris upstream never holds the run: its wall clock lands
t0=$(date +%s)
ew slow --timeout 3 --allow-host slow.test:$L -- curl -s "http://slow.test:$L/"
t1=$(date +%s)
expect_eq "egress: a run waiting on a silent upstream ends at its timeout" timeout "$(jq_ 'r["status"]')"
if [ $((t1 - t0)) -lt 30 ]; then pass "egress: ... within a bound ($((t1 - t0)) s for a 3 s timeout)"
else fail "egress: ... within a bound" "$((t1 - t0)) s"; fi
expect_eq "egress: ... its connection is listed as allowed" True "$(jq_ 'r["egress"][0]["allowed"]')"
