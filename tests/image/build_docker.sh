#!/bin/bash
# `ward image build` against `docker build` (SPEC §19, issue 33 item 4): the
# same Dockerfiles, on the same Debian base (tests/image/build-image, loaded
# into Docker through skopeo's docker-archive), give images whose files,
# types, modes, owners, contents and config match.  ward's side is its base
# layer and the layers its build made (the step cache keeps each as the tar
# the image's manifest names); Docker's is `docker export` of the image.
# Both flattened by tests/image/flatten.py.
# The base's owners (the store's layers have none; its sidecars list them)
# are seen by RUN: useradd rewrites /etc/shadow keeping its group shadow.
#
# Docker: a daemon of this test's own (its --data-root, --exec-root and
# socket under a temp directory; stopped at the end, and only it), the
# classic builder (Debian's docker.io has no buildx), --network none.
# Skips with a message where dockerd cannot start; under CI that is a
# failure when dockerd is installed.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lib.bash"
[ "$(id -u)" = 0 ] || { echo "PASS: docker comparison skipped (needs root)"; exit 0; }
skip() {
	if [ -n "${CI:-}" ] && command -v dockerd >/dev/null; then fail "docker comparison" "$1"; else echo "PASS: docker comparison skipped: $1"; fi
	exit 0
}

. "$(dirname "$0")/dockerd.bash"
trap 'dockerd_stop; cleanup_image_test' EXIT
command -v skopeo >/dev/null || skip "skopeo is not installed"
dockerd_start || skip "$DOCKERD_WHY"
D=$DD
P=$("$ROOT/tests/image/build-image" python3 python3) || { fail "docker comparison: base image"; exit 0; }
wimg import py:1 "oci:$P:1"
dockerd_load_oci "$P" 1 py:1 || { fail "docker comparison: load the base into docker"; exit 0; }

# ward's flattened tree of image NAME: the base's layers, then its own.
ward_tree() {
	local cfg tars=() d f
	cfg=$("$WARD" image inspect --image-store "$S" "$1")
	for d in $(jg "$cfg" '" ".join(l["diff_id"][7:] for l in d["layers"][1:])'); do
		f=$(grep -l "\"diff_id\":\"$d\"" "$S"/build-cache/*/meta.json | head -1)
		tars+=("$(dirname "$f")/layer.tar")
	done
	python3 "$ROOT/tests/image/flatten.py" oci "$P" 1 "${tars[@]}"
}
docker_tree() {
	local id
	id=$("${DK[@]}" create "$1" /bin/true) || return 1
	"${DK[@]}" export "$id" >"$D/export.tar"
	"${DK[@]}" rm "$id" >/dev/null
	python3 "$ROOT/tests/image/flatten.py" tar "$D/export.tar"
}
# The config fields both builders record, normalised.
config_of() { # JSON of the config object
	python3 -c 'import json,sys
c=json.load(sys.stdin)
keys=["Env","Cmd","Entrypoint","WorkingDir","User","Labels","ExposedPorts","StopSignal"]
print(json.dumps({k:(c.get(k) or None) for k in keys}, sort_keys=True))'
}

compare() { # NAME CTX
	local name=$1 ctx=$2 wt dt
	"$WARD" image build --image-store "$S" -t "$name:1" "$ctx" >"$D/ward.out" 2>&1 ||
		{ fail "$name: ward builds" "$(tail -5 "$D/ward.out")"; return; }
	DOCKER_BUILDKIT=0 "${DK[@]}" build --network none -q -t "$name:1" "$ctx" >"$D/docker.out" 2>&1 ||
		{ fail "$name: docker builds" "$(tail -5 "$D/docker.out")"; return; }
	wt=$(ward_tree "$name:1")
	dt=$(docker_tree "$name:1")
	if [ "$wt" = "$dt" ] && [ -n "$wt" ]; then
		pass "$name: the same files, types, modes, owners and contents ($(echo "$wt" | wc -l) paths)"
	else
		fail "$name: the same files" "$(diff <(echo "$dt") <(echo "$wt") | head -20 | tr '\n' '|')"
	fi
	local wc dc
	wc=$(jg "$("$WARD" image inspect --image-store "$S" "$name:1")" 'd["config_digest"][7:]')
	wc=$(python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["config"]))' "$S/blobs/sha256/$wc" | config_of)
	dc=$("${DK[@]}" image inspect "$name:1" | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)[0]["Config"]))' | config_of)
	expect_eq "$name: the same config" "$dc" "$wc"
}

C=$T/cmp
mkdir -p "$C/basic" "$C/copy/sub" "$C/multi" "$C/delete"
cat >"$C/basic/Dockerfile" <<'EOF'
FROM py:1
ARG V=1
ENV APP=/srv/app VERSION=$V
RUN mkdir -p $APP/bin $APP/work && echo "v$VERSION" > $APP/version && chmod 600 $APP/version && \
    useradd -u 1234 -m builder && chown -R builder:builder $APP && \
    cp /bin/true $APP/bin/suid && chmod 4755 $APP/bin/suid && ln -s version $APP/latest
WORKDIR $APP/work
USER builder
RUN echo made-by-builder > mine && id -u > uid
USER root
LABEL org.example.name="basic test" org.example.v=$V
EXPOSE 8080 53/udp
STOPSIGNAL SIGTERM
ENTRYPOINT ["python3"]
CMD ["-c", "print(1)"]
EOF
compare basic "$C/basic"

echo one >"$C/copy/one.txt"
echo two >"$C/copy/sub/two.txt"
echo ignored >"$C/copy/sub/skip.log"
ln -s one.txt "$C/copy/sub/link"
chmod 0755 "$C/copy/one.txt"
printf '*.log\n' >"$C/copy/.dockerignore"
cat >"$C/copy/Dockerfile" <<'EOF'
FROM py:1
COPY one.txt /opt/
COPY --chown=1000:1000 sub /opt/sub/
COPY ["one.txt", "sub/two.txt", "/opt/both/"]
RUN stat -c '%n %a %u:%g' /opt/* /opt/sub/* > /opt/listing
EOF
compare copy "$C/copy"

cat >"$C/multi/Dockerfile" <<'EOF'
FROM py:1 AS build
RUN mkdir /out && python3 -c 'print(6*7)' > /out/answer && chmod 640 /out/answer
FROM py:1
COPY --from=build /out/answer /srv/answer
CMD ["cat", "/srv/answer"]
EOF
compare multi "$C/multi"

cat >"$C/delete/Dockerfile" <<'EOF'
FROM py:1
RUN rm -rf /usr/share/doc /etc/motd && mkdir -p /usr/share/doc && echo fresh > /usr/share/doc/README
RUN rm -rf /var/cache/apt && mkdir /var/cache/apt && touch /var/cache/apt/keep
EOF
compare delete "$C/delete"
