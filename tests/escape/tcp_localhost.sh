#!/bin/bash
# tests/escape/tcp_localhost.sh — a TCP service on the host's 127.0.0.1
# (databases, admin ports, cloud metadata proxies) must be out of reach:
# the sandbox's loopback is its own.  The connect fails with --net none and
# --net loopback, and the host listener sees no connection.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/escape.inc"
esc_preflight

port=$((20000 + RANDOM % 20000))
if ! host_listener tcp "$port" "$T/hits"; then
	fail "tcp localhost: host listener" "did not start on $port"; exit 0
fi
/usr/bin/python3 -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 2)' "$port"
for i in $(seq 20); do [ -s "$T/hits" ] && break; sleep 0.1; done
expect_eq "tcp localhost: reachable from the host (calibration)" 1 "$(wc -l <"$T/hits" 2>/dev/null)"
for net in none loopback; do
	wrun --net "$net" -- /helpers/esc_proc tcp "$port"
	expect_clean "tcp localhost: --net $net: helper ran"
	expect_blocked "tcp localhost: --net $net: connect fails" "connect(127.0.0.1)"
done
sleep 0.3
expect_eq "tcp localhost: host listener saw only the calibration" 1 "$(wc -l <"$T/hits" 2>/dev/null)"
