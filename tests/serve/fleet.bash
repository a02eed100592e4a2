# tests/serve/fleet.bash — sourced by the fleet scripts (fleet.sh,
# fleet_sessions.sh) after lib.bash: the balancers' binaries, their own
# directory, cleaning up the balancers they start, and free ports.
# FLEET_NAME (set before sourcing) names the script in its messages.

NGINX=${NGINX:-/usr/sbin/nginx}
HAPROXY=${HAPROXY:-/usr/sbin/haproxy}
for b in "$NGINX" "$HAPROXY"; do
	if [ ! -x "$b" ]; then
		fail "$FLEET_NAME: $b present" "not installed (scripts/install-deps: nginx-light, haproxy)"
		exit 0
	fi
done

# The balancers' own directory: nginx's workers run as nobody and must
# reach their temp dirs, which SERVE_TMP (0700) would not allow.
LB=$(mktemp -d /tmp/ward-fleet.XXXXXX)
chmod 0711 "$LB"
_LB_PIDS=""
_fleet_cleanup() {
	# shellcheck disable=SC2086
	stop_pids $_LB_PIDS
	rm -rf "$LB"
	_serve_cleanup
}
trap _fleet_cleanup EXIT
# tests/run's timeout sends SIGTERM: clean up then too
trap 'exit 143' TERM INT

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
