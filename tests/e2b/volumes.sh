#!/bin/bash
# tests/e2b/volumes.sh — E2B volumes (SPEC §18, issue 32.5) with the real
# SDK (tests/e2b/volumes.mjs): the management and content APIs, two
# sandboxes of different uids sharing one volume, the byte cap inside a
# sandbox and through an upload, hostile paths and mount paths, another
# key's volume, a volume across a runner restart, and mount points beneath
# an image template's read-only directories.  Off without --e2b-volumes
# (403, E2B's "not enabled").
. "$(dirname "$0")/lib.bash"
node_ready || exit 0
KEY_BOB=sekrit-bob-0123456789abc
printf 'alice %s\nbob %s\n' "$KEY_ALICE" "$KEY_BOB" >"$SERVE_TMP/tokens"
VOLS=$SERVE_TMP/vols
# every volume mounted by the runs below is unmounted when the script ends,
# whatever they did (by path: only ours)
_vol_cleanup() {
	local m
	for m in "$VOLS"/*/root; do
		[ -d "$m" ] && mountpoint -q "$m" && umount -l "$m"
	done
}
trap '_vol_cleanup; _serve_cleanup' EXIT

start_e2b off --token-file "$SERVE_TMP/tokens" || exit 1
out=$(curl -s -w ' %{http_code}' -X POST -H "X-API-KEY: $KEY_ALICE" -d '{"name":"v"}' "$E2B_URL/volumes")
expect_contains "e2b volumes: without --e2b-volumes, create is 403 (E2B: not enabled)" "$out" "not enabled"
expect_contains "e2b volumes: ... and its status is 403" "$out" " 403"
stop_e2b off

VARGS=(--token-file "$SERVE_TMP/tokens" --e2b-volumes "$VOLS" --e2b-volume-max-bytes 33554432 --e2b-max-volumes 3)
start_e2b main "${VARGS[@]}" || exit 1
out=$(KEY=$KEY_ALICE sdk volumes.mjs main)
echo "$out" | grep -v '^VOL '
read -r id name token < <(sed -n 's/^VOL //p' <<<"$out")
check "e2b volumes: main printed its volume" test -n "$id"
check "e2b volumes: a volume is DIR/ID/{image,volume.json}, DIR 0700, volume.json (its token) 0600" \
	test -f "$VOLS/$id/image" -a "$(stat -c %a "$VOLS") $(stat -c %a "$VOLS/$id/volume.json")" = "700 600"
check "e2b volumes: its files are owned on disk by the volumes' uid, not a sandbox's" \
	test "$(stat -c %u "$VOLS/$id/root/x")" = 2999999
check "e2b volumes: a deleted volume's directory is gone" test "$(ls "$VOLS" | wc -l)" = 1
KEY=$KEY_BOB sdk volumes.mjs other "$id" "$name" "$token"
stop_e2b main
check "e2b volumes: the runner's stop unmounts its volumes" bash -c "! mountpoint -q '$VOLS/$id/root'"
check "e2b volumes: its image is --e2b-volume-max-bytes long" test "$(stat -c %s "$VOLS/$id/image")" = 33554432

# a runner killed outright leaves its volumes mounted; the next one keeps
# those mounts (never a second mount of one file system)
start_e2b crash "${VARGS[@]}" || exit 1
disown "$SRV_PID" 2>/dev/null # (no "Killed" line from the shell)
kill -KILL "$SRV_PID"
wait_for bash -c "! kill -0 $SRV_PID 2>/dev/null"
check "e2b volumes: a runner killed by SIGKILL leaves its volume mounted" mountpoint -q "$VOLS/$id/root"
start_e2b after "${VARGS[@]}" || exit 1
check "e2b volumes: the next runner keeps that mount (one loop device for the image)" \
	test "$(losetup -j "$VOLS/$id/image" | wc -l)" = 1
KEY=$KEY_ALICE sdk volumes.mjs after "$id" "$name"
check "e2b volumes: destroyed after the restart: its directory is gone" test ! -e "$VOLS/$id"
stop_e2b after

# an image template (busybox; /bin/bash a script, the SDK runs commands
# with it) whose /mnt, /opt and /srv lack the mount points asked for
python3 - "$SERVE_TMP/bb" <<'PY'
import os, sys
sys.path.insert(0, os.path.join(os.environ["ROOT"], "tests/image"))
import oci
bb = open("/bin/busybox", "rb").read()
t = (oci.T().dir("bin").file("bin/busybox", bb, 0o755).symlink("bin/sh", "busybox")
     .symlink("bin/cat", "busybox").symlink("bin/touch", "busybox").symlink("bin/ls", "busybox").symlink("bin/wc", "busybox")
     .file("bin/bash", b'#!/bin/sh\nexec /bin/busybox sh "$@"\n', 0o755)
     .dir("mnt").file("mnt/keep", b"keep\n").dir("srv").symlink("srv/link", "/etc")
     .dir("opt").file("opt/file", b"file\n").dir("opt/dir").dir("opt/dir/deep").file("opt/dir/deep/f", b"deep\n"))
oci.layout(sys.argv[1], [t.bytes()], ref="1")
PY
out=$("$WARD" image import --image-store "$SERVE_TMP/store" bb "oci:$SERVE_TMP/bb:1" 2>&1) || fail "import the busybox image" "$out"
start_e2b img "${VARGS[@]}" --image bb --image-store "$SERVE_TMP/store" || exit 1
KEY=$KEY_ALICE sdk volumes.mjs image
stop_e2b img
