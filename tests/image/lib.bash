# tests/image/lib.bash — sourced by tests/image/*.sh, after tests/lib.sh.
# A scratch directory per script (removed at exit, mounts in it unmounted
# first), a store in it, and the checks every image test shares.
T=$(mktemp -d /tmp/ward-image-test.XXXXXX)
S=$T/store
MOUNTS=()
cleanup_image_test() {
	local m
	for m in "${MOUNTS[@]}"; do umount "$m" 2>/dev/null; done
	rm -rf "$T"
}
trap cleanup_image_test EXIT
OCI=$ROOT/tests/image/oci.py

# wimg CMD ARGS... — `ward image CMD --image-store $S ARGS`; output in OUT,
# status in RC.
wimg() {
	OUT=$("$WARD" image "$1" --image-store "$S" "${@:2}" 2>&1)
	RC=$?
}

# store_clean — nothing listed, no layer, no blob, nothing in tmp/.
store_clean() {
	local ls
	ls=$("$WARD" image ls --json --image-store "$S" 2>&1)
	[ "$ls" = "[]" ] && [ -z "$(ls -A "$S/layers/sha256" 2>/dev/null)" ] &&
		[ -z "$(ls -A "$S/blobs/sha256" 2>/dev/null)" ] && [ -z "$(ls -A "$S/tmp" 2>/dev/null)" ]
}

# layer_dir NAME N — the Nth layer directory (1: the bottom) of image NAME.
layer_dir() {
	"$WARD" image inspect "$1" --image-store "$S" 2>/dev/null |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["layers"][int(sys.argv[1])-1]["path"])' "$2"
}

# xattr PATH NAME — the value of an xattr, or "none".
xattr() {
	python3 -c 'import os,sys
try: print(os.getxattr(sys.argv[1], sys.argv[2], follow_symlinks=False).decode())
except OSError: print("none")' "$1" "$2"
}
