#!/bin/bash
# tests/escape/tcp_localhost.sh — a TCP service on the host's 127.0.0.1
# (databases, admin ports, cloud metadata proxies) must be out of reach:
# the sandbox's loopback is its own.  The connect fails with --net none and
# --net loopback, and the host listener sees no connection.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/escape.inc"
esc_preflight

# A free port: a few tries, in case another test holds the first pick.
started=
for try in 1 2 3 4 5; do
	port=$((20000 + RANDOM % 20000))
	if host_listener tcp "$port" "$T/hits"; then started=yes; break; fi
	rm -f "$T/hits" "$T/hits.ready"
done
if [ -z "$started" ]; then
	fail "tcp localhost: host listener" "did not start (last port $port)"; exit 0
fi
/usr/bin/python3 -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 2)' "$port"
for i in $(seq 100); do [ -s "$T/hits" ] && break; sleep 0.1; done  # (up to 10 s)
expect_eq "tcp localhost: reachable from the host (calibration)" 1 "$(wc -l <"$T/hits" 2>/dev/null)"
for net in none loopback; do
	wrun --net "$net" -- /helpers/esc_proc tcp "$port"
	expect_clean "tcp localhost: --net $net: helper ran"
	expect_blocked "tcp localhost: --net $net: connect fails" "connect(127.0.0.1)"
done
sleep 0.3
expect_eq "tcp localhost: host listener saw only the calibration" 1 "$(wc -l <"$T/hits" 2>/dev/null)"
