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
vols_unmounted_at_exit "$VOLS"

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

# A volume upload is written by a pump thread ("e2b-vol-upload"), never
# on an I/O thread: with the volume's file system frozen (fsfreeze), the
# upload's writer blocks (state D) and it is that thread; other requests
# answer meanwhile; the pump's buffers count in --max-body-total (256 KiB
# here: a second upload meanwhile is 503), and the upload ends whole once
# thawed.
start_e2b frozen "${VARGS[@]}" --max-body 65536 --max-body-total 262144 || exit 1
read -r fid ftok < <(curl -s -X POST -H "X-API-KEY: $KEY_ALICE" -d '{"name":"frozen"}' "$E2B_URL/volumes" |
	python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["volumeID"], j["token"])')
check "e2b volumes frozen: a volume" test -n "$fid"
head -c 4194304 /dev/urandom >"$SERVE_TMP/big"
vput() { # vput FILE PATH: the status of a PUT of FILE at PATH in the frozen volume
	curl -s -o /dev/null -w '%{http_code}' -m 120 -X PUT -T "$1" -H "Authorization: Bearer $ftok" \
		-H 'Content-Type: application/octet-stream' "$E2B_URL/volumecontent/$fid/file?path=%2F$2"
}
FROZEN=$VOLS/$fid/root
fsfreeze -f "$FROZEN"
vput "$SERVE_TMP/big" big >"$SERVE_TMP/put.code" &
PUT_PID=$!
# blocked_as NAME: a thread of the runner blocked (D) on the frozen volume is named NAME
blocked_as() {
	local t
	for t in /proc/"$SRV_PID"/task/*; do
		[ "$(sed 's/.*) //' "$t/stat" 2>/dev/null | cut -d' ' -f1)" = D ] && [ "$(cat "$t/comm")" = "$1" ] && return 0
	done
	return 1
}
check "e2b volumes frozen: the upload's writer, blocked on the frozen volume, is its pump thread" wait_for blocked_as e2b-vol-upload
ok=0
for _ in 1 2 3 4 5 6 7 8; do
	[ "$(curl -s -o /dev/null -w '%{http_code}' -m 30 -H "X-API-KEY: $KEY_ALICE" "$E2B_URL/volumes")" = 200 ] && ok=$((ok + 1))
done
expect_eq "e2b volumes frozen: meanwhile 8 other requests (each its own connection) answer" 8 "$ok"
printf small >"$SERVE_TMP/small"
expect_eq "e2b volumes frozen: a second upload meanwhile: 503 (its pump's buffers past --max-body-total)" \
	503 "$(vput "$SERVE_TMP/small" small)"
fsfreeze -u "$FROZEN"
FROZEN=
wait "$PUT_PID"
expect_eq "e2b volumes frozen: thawed, the upload ends: 201" 201 "$(cat "$SERVE_TMP/put.code")"
check "e2b volumes frozen: ... its file whole" cmp -s "$SERVE_TMP/big" "$VOLS/$fid/root/big"
curl -s -o /dev/null -X DELETE -H "X-API-KEY: $KEY_ALICE" "$E2B_URL/volumes/$fid"
stop_e2b frozen
