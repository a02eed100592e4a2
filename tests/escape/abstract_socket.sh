#!/bin/bash
# tests/escape/abstract_socket.sh — abstract UNIX sockets have no file and so
# no mount or permission to stop them: a host service listening on @name
# (X11, D-Bus, containerd-shim in CVE-2020-15257) is reachable from any
# process in the same network namespace.  The sandbox's own network
# namespace (and, from Landlock ABI 6, socket scoping) keeps it out: the
# connect fails with --net none and --net loopback, and the host listener
# sees no connection.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/escape.inc"
esc_preflight

name="ward-esc-$$-$RANDOM"
if ! host_listener abstract "$name" "$T/hits"; then
	fail "abstract socket: host listener" "did not start"; exit 0
fi
# The listener is reachable from the host itself (the test can see a hit).
/usr/bin/python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect("\0"+sys.argv[1])' "$name"
for i in $(seq 100); do [ -s "$T/hits" ] && break; sleep 0.1; done  # (up to 10 s)
expect_eq "abstract socket: reachable from the host (calibration)" 1 "$(wc -l <"$T/hits" 2>/dev/null)"
for net in none loopback; do
	wrun --net "$net" -- /helpers/esc_proc abstract "$name"
	expect_clean "abstract socket: --net $net: helper ran"
	expect_blocked "abstract socket: --net $net: connect fails" "connect(abstract)"
done
sleep 0.3
expect_eq "abstract socket: host listener saw only the calibration" 1 "$(wc -l <"$T/hits" 2>/dev/null)"
