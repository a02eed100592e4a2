#!/bin/bash
# Real images, made here the way users make them: mmdebstrap (a minimal
# Debian bookworm from the Debian archive) turned into an OCI image with
# umoci (tests/image/build-image, cached under build/image-cache/), then
# skopeo between oci:, oci-archive:, docker-archive: and a local
# docker-registry on 127.0.0.1 (started and stopped here, by pid); `ward
# image import` and `pull` from each.  The unpacked python3 image is mounted
# (overlayfs) and chrooted into, to prove the layers are whole.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lib.bash"
[ "$(id -u)" = 0 ] || { echo "PASS: real images skipped (needs root)"; exit 0; }
for t in mmdebstrap umoci skopeo docker-registry; do
	command -v "$t" >/dev/null || { fail "real images: $t is missing (scripts/install-deps installs it)"; exit 0; }
done
M=$("$ROOT/tests/image/build-image" minbase) || { fail "real images: build minbase"; exit 0; }
P=$("$ROOT/tests/image/build-image" python3 python3) || { fail "real images: build python3"; exit 0; }

start=$(date +%s.%N)
wimg import minbase:oci "oci:$M:1"
secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
check "minbase: oci: imported" [ "$RC" -eq 0 ]
size=$(jg "$("$WARD" image ls --json --image-store "$S")" 'd[0]["size"]')
echo "minbase: imported in $secs s, $((size / 1048576)) MiB unpacked" >&2
pass "minbase: oci: $secs s, $((size / 1048576)) MiB unpacked"
expect_contains "minbase: devices of its /dev dropped and named" "$OUT" "dropped 'dev/null' (a device node)"
L=$(layer_dir minbase:oci 1)
expect_eq "minbase: no setuid file left (su, passwd...)" "" "$(find "$L" -perm /6000 | head -3)"
check "minbase: /bin/sh is there" [ -e "$L/usr/bin/dash" ]

skopeo copy --quiet "oci:$M:1" "oci-archive:$T/m-oci.tar" >/dev/null 2>&1
wimg import minbase:oci-archive "oci-archive:$T/m-oci.tar"
check "minbase: oci-archive: imported" [ "$RC" -eq 0 ]
skopeo copy --quiet "oci:$M:1" "docker-archive:$T/m-docker.tar:ward/minbase:1" >/dev/null 2>&1
wimg import minbase:docker-archive "docker-archive:$T/m-docker.tar"
check "minbase: docker-archive (through skopeo): imported" [ "$RC" -eq 0 ]

# A registry of our own on a free port of 127.0.0.1.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$T/registry.yml" <<EOF
version: 0.1
storage:
  filesystem:
    rootdirectory: $T/registry
http:
  addr: 127.0.0.1:$port
EOF
docker-registry serve "$T/registry.yml" >"$T/registry.log" 2>&1 &
reg=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/v2/" >/dev/null && break; sleep 0.1; done
skopeo copy --quiet --dest-tls-verify=false "oci:$M:1" "docker://127.0.0.1:$port/ward/minbase:1" >/dev/null 2>&1
wimg pull "127.0.0.1:$port/ward/minbase:1" -- --src-tls-verify=false
check "pull: from a registry, options after -- passed to skopeo" [ "$RC" -eq 0 ] || echo "$OUT" >&2
wimg pull "127.0.0.1:$port/ward/minbase:1" --name mb:pulled -- --src-tls-verify=false
check "pull: --name" [ "$RC" -eq 0 ]
wimg pull "127.0.0.1:$port/ward/nosuch:1" -- --src-tls-verify=false
expect_contains "pull: a missing image is skopeo's error" "$OUT" "skopeo copy docker://127.0.0.1:$port/ward/nosuch:1 failed"
kill "$reg"
wait "$reg" 2>/dev/null
expect_eq "pull: default name is the reference's last part and tag" \
	'["minbase", "1"]' "$(jg "$("$WARD" image ls --json --image-store "$S")" '[[x["name"], x["tag"]] for x in d if x["name"] == "minbase" and x["tag"] == "1"][0]')"
expect_eq "five imports from four sources, one layer kept" "5 1" \
	"$(jg "$("$WARD" image ls --json --image-store "$S")" 'len(d)') $(ls "$S/layers/sha256" | grep -vc '\.owners$')"
expect_eq "store: nothing left in tmp/" "0" "$(ls -A "$S/tmp" | wc -l)"

mkdir -p "$T/empty"
# python3: imported, its layers mounted as the runtime will, and run.
wimg import py "oci:$P:1"
check "python3: imported" [ "$RC" -eq 0 ]
L=$(layer_dir py 1)
out=$(unshare -m sh -c 'mkdir -p "$2" && mount -t overlay overlay -o "lowerdir=$1:$3" "$2" &&
	chroot "$2" /usr/bin/python3 -c "import json, sqlite3; print(json.dumps(sqlite3.sqlite_version > \"3\"))"' \
	sh "$L" "$T/root" "$T/empty" 2>&1)
expect_eq "python3: runs from its unpacked layers" "true" "$out"

# numpy, when it was built (tests/image/build-image numpy python3-numpy).
N=$(ls -d "$ROOT"/build/image-cache/numpy-*/done 2>/dev/null | head -1)
if [ -n "$N" ]; then
	wimg import numpy "oci:$(dirname "$N")/oci:1"
	check "numpy: imported" [ "$RC" -eq 0 ]
	L=$(layer_dir numpy 1)
	out=$(unshare -m sh -c 'mkdir -p "$2" && mount -t overlay overlay -o "lowerdir=$1:$3" "$2" &&
		chroot "$2" /usr/bin/python3 -c "import numpy; print(numpy.arange(4).sum())"' sh "$L" "$T/root2" "$T/empty" 2>&1)
	expect_eq "numpy: imports from its unpacked layers" "6" "$out"
fi
