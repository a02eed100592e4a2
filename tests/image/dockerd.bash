# tests/image/dockerd.bash — a Docker daemon of the caller's own, for
# comparisons with `docker build` (tests/image/build_docker.sh,
# bench/build.sh): its --data-root, --exec-root and socket in a temp
# directory, no bridge, no iptables; stopped by dockerd_stop, which stops
# only it.  Another daemon on the host (another helper's, the system's) is
# never touched.
#
# dockerd_start: 0 with DK=(docker -H unix://...) and DD (its directory) set;
# 1 with DOCKERD_WHY saying why not.
dockerd_start() {
	DD=$(mktemp -d /tmp/ward-dockerd.XXXXXX)
	DPID=
	if ! command -v dockerd >/dev/null || ! command -v docker >/dev/null; then
		DOCKERD_WHY="docker.io is not installed (apt-get install docker.io)"
		return 1
	fi
	dockerd --data-root "$DD/data" --exec-root "$DD/exec" --pidfile "$DD/pid" -H "unix://$DD/sock" \
		--bridge=none --iptables=false --ip-masq=false >"$DD/log" 2>&1 &
	DPID=$!
	DK=(docker -H "unix://$DD/sock")
	for _ in $(seq 1 300); do
		"${DK[@]}" info >/dev/null 2>&1 && return 0
		kill -0 "$DPID" 2>/dev/null || break
		sleep 0.1
	done
	DOCKERD_WHY="dockerd did not start: $(tail -3 "$DD/log" | tr '\n' ' ')"
	return 1
}

dockerd_stop() {
	if [ -n "${DPID:-}" ]; then
		kill "$DPID" 2>/dev/null
		for _ in $(seq 1 100); do kill -0 "$DPID" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$DPID" 2>/dev/null
		DPID=
	fi
	if [ -n "${DD:-}" ]; then
		umount -R "$DD" 2>/dev/null
		rm -rf "$DD"
	fi
}

# dockerd_load_oci LAYOUT REF NAME — an OCI layout's image loaded as NAME
# (through skopeo's docker-archive).
dockerd_load_oci() {
	skopeo copy --quiet "oci:$1:$2" "docker-archive:$DD/load.tar:$3" >/dev/null 2>&1 &&
		"${DK[@]}" load -i "$DD/load.tar" >/dev/null 2>&1 && rm -f "$DD/load.tar"
}
