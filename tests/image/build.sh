#!/bin/bash
# `ward image build` (SPEC §19): a Dockerfile built on a real Debian base
# (tests/image/build-image, cached), run with `ward run --image`; the step
# cache; multi-stage COPY --from; .dockerignore; a failing step; refusals
# before any step; and hostile input, each at the smallest load that shows
# its bound: COPY of links out of the context, a RUN that fills its layer, a
# layer over its cap, too many files, a RUN past --timeout or --memory.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lib.bash"
[ "$(id -u)" = 0 ] || { echo "PASS: image build skipped (needs root)"; exit 0; }
P=$("$ROOT/tests/image/build-image" python3 python3) || { fail "build: base image"; exit 0; }
wimg import py:1 "oci:$P:1"
[ "$RC" -eq 0 ] || { fail "build: import the base" "$OUT"; exit 0; }

# build CTX NAME [OPTIONS...] — JSON result in OUT, status in RC.
build() {
	local ctx=$1 name=$2
	shift 2
	OUT=$("$WARD" image build --image-store "$S" --json -t "$name" "$@" "$ctx" 2>"$T/build.err")
	RC=$?
	ERR=$(cat "$T/build.err")
}
# wrun NAME CMD... — ward run --image NAME -- CMD, output and status.
wrun() {
	local name=$1
	shift
	ROUT=$("$WARD" run --image-store "$S" --image "$name" ${1:+--} "$@" 2>&1)
}
nothing_left() { # tmp/ of the store is empty (a failed build leaves nothing but its cache)
	[ -z "$(ls -A "$S/tmp" 2>/dev/null)" ]
}
listed() { "$WARD" image ls --json --image-store "$S" | jg "$(cat)" '" ".join(sorted(i["name"] for i in d))'; }

C=$T/ctx
mkdir -p "$C/sub"
echo hello >"$C/hello.txt"
echo secret >"$C/secret.key"
echo nested >"$C/sub/n.txt"
printf 'secret.key\n**/*.tmp\n' >"$C/.dockerignore"
echo junk >"$C/sub/x.tmp"
cat >"$C/Dockerfile" <<'EOF'
# a comment
ARG GREETING=hi
FROM py:1
ARG GREETING
ENV WHO=world \
    GREETING=${GREETING}
RUN echo "$GREETING $WHO from $(id -u)" > /greet && chmod 4755 /greet && \
    mkdir -p /app && chown 1000:1000 /app && rm -f /etc/motd
COPY --chmod=0604 hello.txt /app/
COPY sub /app/sub/
WORKDIR /app
USER 1000
RUN stat -c '%u:%g %a' /app /app/hello.txt > /app/owners && id -u > /app/whoami
USER root
RUN stat -c %G /etc/shadow > /app/shadow-group && useradd -m someone && stat -c %G /etc/shadow >> /app/shadow-group
LABEL org.example.k="v 1"
EXPOSE 8080
STOPSIGNAL SIGINT
CMD ["python3", "-c", "print(open('/greet').read().strip())"]
EOF
build "$C" app:1 --build-arg GREETING=hello
if [ "$RC" -eq 0 ]; then pass "build: a Dockerfile of every instruction builds"; else fail "build: builds" "$OUT $ERR"; fi
expect_eq "build: --json says steps and none cached" "16 0" "$(jg "$OUT" 'd["steps"]') $(jg "$OUT" 'd["cached"]')"
wrun app:1
expect_eq "build: CMD runs, ARG and ENV expanded, RUN as uid 0" "hello world from 0" "$ROUT"
wrun app:1 sh -c 'cat /app/owners /app/whoami; cat /app/hello.txt /app/sub/n.txt; ls /app/sub; ls /etc/motd 2>&1 | grep -c "No such"'
expect_eq "build: chown seen by a later step, USER runs as it, COPY --chmod, dir contents, whiteout" \
	"1000:1000 755 0:0 604 1000 hello nested n.txt 1" "$(echo $ROUT)"
wrun app:1 sh -c 'ls /app/secret.key /app/sub/x.tmp 2>&1 | grep -c "No such"'
expect_eq "build: .dockerignore leaves out a name and a ** pattern" "2" "$ROUT"
wrun app:1 cat /app/shadow-group
expect_eq "build: a RUN sees the base's owners (the store's sidecar), and useradd keeps them" "shadow shadow" "$(echo $ROUT)"
cfg=$("$WARD" image inspect --image-store "$S" app:1)
expect_eq "build: WorkingDir and Env in the config" "/app hello" \
	"$(jg "$cfg" 'd["config"]["WorkingDir"]') $(jg "$cfg" '[e for e in d["config"]["Env"] if e.startswith("GREETING=")][0][9:]')"
conf=$(cat "$S/blobs/sha256/$(jg "$cfg" 'd["config_digest"][7:]')")
expect_eq "build: Labels, ExposedPorts, StopSignal, User in the image's config" \
	'v 1 ["8080/tcp"] SIGINT root' \
	"$(jg "$conf" 'd["config"]["Labels"]["org.example.k"]') $(jg "$conf" 'sorted(d["config"]["ExposedPorts"])') $(jg "$conf" 'd["config"]["StopSignal"]') $(jg "$conf" 'd["config"]["User"]')"
expect_eq "build: setuid stripped in the store" "755" "$(echo $("$WARD" run --image-store "$S" --image app:1 -- stat -c %a /greet))"

# The cache: the same build again takes every RUN and COPY from it.
build "$C" app:1 --build-arg GREETING=hello
expect_eq "cache: a rebuild takes every RUN and COPY from the cache" "0 5" "$RC $(jg "$OUT" 'd["cached"]')"
plain=$("$WARD" image build --image-store "$S" -t app:1 --build-arg GREETING=hello "$C" 2>&1 >/dev/null)
expect_contains "progress: one line a step, cached ones said, with its time" "$plain" \
	"[6/16] COPY --chmod=0604 hello.txt /app/"
expect_contains "progress: cached steps said" "$plain" " cached 0."
echo changed >"$C/sub/n.txt"
build "$C" app:1 --build-arg GREETING=hello
expect_eq "cache: a changed file misses its COPY and what follows" "0 2" "$RC $(jg "$OUT" 'd["cached"]')"
wrun app:1 cat /app/sub/n.txt
expect_eq "cache: the new content is in" "changed" "$ROUT"
build "$C" app:1 --build-arg GREETING=other
expect_eq "cache: another ARG value misses the RUN that sees it" "0 0" "$RC $(jg "$OUT" 'd["cached"]')"
build "$C" app:1 --build-arg GREETING=hello --no-cache
expect_eq "cache: --no-cache runs every step" "0 0" "$RC $(jg "$OUT" 'd["cached"]')"

# Multi-stage: a file made in one stage, copied into the next.
M=$T/multi
mkdir -p "$M"
cat >"$M/Dockerfile" <<'EOF'
FROM py:1 AS build
RUN mkdir /out && echo built > /out/artifact && python3 -c 'print(6*7)' > /out/answer
FROM py:1
COPY --from=build /out/ /opt/
RUN cat /opt/artifact /opt/answer > /opt/both
EOF
build "$M" multi:1
wrun multi:1 cat /opt/both
expect_eq "multi-stage: COPY --from an earlier stage" "0 built 42" "$RC $(echo $ROUT)"

# A failing step: its status and output; nothing listed, nothing left.
F=$T/fail
mkdir -p "$F"
printf 'FROM py:1\nRUN echo before; echo to-stderr >&2; exit 3\nRUN echo never\n' >"$F/Dockerfile"
build "$F" failed:1
expect_eq "failure: exit 1, the step's status and line" "1 3 2" "$RC $(jg "$OUT" 'd["status"]') $(jg "$OUT" 'd["line"]')"
expect_contains "failure: its output" "$(jg "$OUT" 'd["output"]')" "to-stderr"
expect_eq "failure: nothing half-built is listed" "app multi py" "$(listed </dev/null)"
if nothing_left; then pass "failure: nothing left in tmp/"; else fail "failure: nothing left in tmp/" "$(ls "$S/tmp")"; fi

# Refused before any step: the line and the instruction named.
R=$T/refused
mkdir -p "$R"
printf 'FROM py:1\nRUN touch /ran\nVOLUME /data\n' >"$R/Dockerfile"
build "$R" refused:1
expect_eq "refusal: before any step ran" "125 0" "$RC $(jg "$OUT" 'd["steps"]')"
expect_contains "refusal: names the line and the instruction" "$(jg "$OUT" 'd["error"]')" "line 3: VOLUME"
printf 'FROM nosuch:1\n' >"$R/Dockerfile"
build "$R" refused:1
expect_contains "refusal: an unknown base says how to provide it" "$(jg "$OUT" 'd["error"]')" "import or pull it first"

# Hostile: COPY never follows a link out of the context.
H=$T/hostile
mkdir -p "$H/dir"
echo mine >"$H/etc-passwd-of-ctx"
ln -s /etc/passwd "$H/abs"
ln -s ../../../../../../etc/passwd "$H/rel"
ln -s /etc "$H/etcdir"
ln -s /etc/shadow "$H/dir/inner"
for src in abs rel etcdir/passwd ../../../../etc/passwd; do
	printf 'FROM py:1\nCOPY %s /x\n' "$src" >"$H/Dockerfile"
	build "$H" hostile:1
	if [ "$RC" -ne 0 ]; then pass "links: COPY $src refused"; else fail "links: COPY $src refused" "$(wrun hostile:1 cat /x; echo "$ROUT" | head -c 80)"; fi
done
printf 'FROM py:1\nCOPY dir /d/\n' >"$H/Dockerfile"
build "$H" hostile:1
wrun hostile:1 readlink /d/inner
expect_eq "links: a symlink inside a copied directory stays a symlink" "0 /etc/shadow" "$RC $ROUT"

# Hostile: a RUN that fills the disk stops at its layer's cap (16 MiB),
# which bounds its tmpfs; the build fails and lists nothing.
printf 'FROM py:1\nRUN head -c 64M /dev/zero > /big\n' >"$H/Dockerfile"
build "$H" fill:1 --max-layer-bytes 16M
expect_eq "disk: a RUN writing 64 MiB under a 16 MiB layer cap fails" "1" "$RC"
expect_contains "disk: the tmpfs is full" "$(jg "$OUT" 'd["output"]')" "No space left"
# ... and a layer over its cap from COPY: 2 MiB of context under 1 MiB.
head -c 2M /dev/urandom >"$H/two-mib"
printf 'FROM py:1\nCOPY two-mib /\n' >"$H/Dockerfile"
build "$H" big:1 --max-layer-bytes 1M
expect_contains "cap: a COPY over the layer cap is refused" "$(jg "$OUT" 'd["error"]')" "over 1048576 bytes"
# ... and the whole image: a 208 MB base under a 100 MB image cap.
printf 'FROM py:1\nRUN echo x > /x\n' >"$H/Dockerfile"
build "$H" big:1 --max-image-bytes 100M
expect_contains "cap: an image over --max-image-bytes is refused" "$(jg "$OUT" 'd["error"]')" "max-image-bytes"

# Hostile: many small files stop at the entry cap (1000 here, 1M by default).
printf 'FROM py:1\nRUN mkdir /m && cd /m && seq 1 1500 | xargs touch\n' >"$H/Dockerfile"
build "$H" many:1 --max-image-inodes 1000
expect_contains "files: a RUN making 1500 files under a 1000-entry cap is refused" "$(jg "$OUT" 'd["error"]')" \
	"more than 1000 entries"
mkdir -p "$H/many"
(cd "$H/many" && seq 1 1500 | xargs touch)
printf 'FROM py:1\nCOPY many /m/\n' >"$H/Dockerfile"
build "$H" many:1 --max-image-inodes 1000
expect_contains "files: a COPY of 1500 files under a 1000-entry cap is refused" "$(jg "$OUT" 'd["error"]')" \
	"more than 1000 files"
rm -rf "$H/many"

# Hostile: --timeout and --memory per step.
printf 'FROM py:1\nRUN sleep 30\n' >"$H/Dockerfile"
build "$H" slow:1 --timeout 1
expect_eq "timeout: a RUN past --timeout 1 is killed" "1 true" "$RC $(jg "$OUT" 'd["timed_out"]')"
printf 'FROM py:1\nRUN python3 -c "b = bytearray(400 << 20); print(len(b))"\n' >"$H/Dockerfile"
build "$H" fat:1 --memory 64M --max-layer-bytes 16M
expect_eq "memory: a RUN of 400 MiB under --memory 64M fails" "1" "$RC"
# Network: none by default; with --net allow, only the allow-list's names,
# through ward's egress proxy (a server of this test's on the host's
# loopback, reached by a pinned name).
mkdir -p "$T/www"
echo from-the-allowed-host >"$T/www/f"
python3 -c 'import http.server, functools, sys
h = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), h)
print(s.server_address[1], flush=True)
s.serve_forever()' "$T/www" >"$T/www.port" 2>/dev/null &
WWW=$!
for _ in $(seq 1 50); do [ -s "$T/www.port" ] && break; sleep 0.1; done
port=$(cat "$T/www.port")
N=$T/net
mkdir -p "$N"
printf 'FROM py:1\nRUN python3 -c "import urllib.request as u; open(\x27/got\x27, \x27wb\x27).write(u.urlopen(\x27http://files.test:%s/f\x27, timeout=5).read())"\n' "$port" >"$N/Dockerfile"
build "$N" net:1
expect_eq "net: none by default: the fetch fails" "1" "$RC"
build "$N" net:1 --net allow --egress-allow "files.test:$port" --egress-resolve "files.test:127.0.0.1"
wrun net:1 cat /got
expect_eq "net: allow reaches a listed name through the proxy" "0 from-the-allowed-host" "$RC $ROUT"
# The network is part of a RUN's cache key: the step cached above is not
# served to a build without the network, nor to one with another list.
build "$N" net3:1
expect_eq "cache: a RUN cached with --net allow is not reused without network" "1" "$RC"
build "$N" net4:1 --net allow --egress-allow "other.test:$port" --egress-resolve "files.test:127.0.0.1"
expect_eq "cache: ... nor with another allow-list" "1" "$RC"
build "$N" net2:1 --no-cache --net allow --egress-allow "other.test:$port" --egress-resolve "files.test:127.0.0.1"
expect_eq "net: allow refuses a name not listed" "1" "$RC"
build "$N" net2:1 --net allow
expect_contains "net: allow without a list is refused" "$(jg "$OUT" 'd["error"]')" "--egress-allow"
kill "$WWW" 2>/dev/null
wait "$WWW" 2>/dev/null

expect_eq "after all: only the good images are listed" "app hostile multi net py" "$(listed </dev/null)"
if nothing_left; then pass "after all: nothing left in tmp/"; else fail "after all: nothing left in tmp/" "$(ls "$S/tmp")"; fi
