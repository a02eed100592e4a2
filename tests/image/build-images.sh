#!/bin/bash
# tests/image/build-images.sh NAME [PACKAGE...] — a real image, made the way
# users make them with Debian's own tools: `mmdebstrap --variant=minbase
# bookworm` (with PACKAGEs) turned into an OCI layout with umoci.  Built once
# and cached under build/image-cache/NAME-KEY/ (KEY: this script and its
# arguments), so only a fresh checkout pays the minutes; prints the layout's
# directory (its one image is tagged "1").  Needs root and the Debian archive.
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
name=$1
shift
key=$({ cat "$0"; echo "$name $*"; } | sha256sum | cut -c1-16)
cache=$ROOT/build/image-cache
dir=$cache/$name-$key
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9
if [ -e "$dir/done" ]; then
	echo "$dir/oci"
	exit 0
fi
rm -rf "$dir"
mkdir -p "$dir"
inc=()
[ $# -gt 0 ] && inc=(--include="$(IFS=,; echo "$*")")
mmdebstrap --quiet --variant=minbase "${inc[@]}" --mode=root --format=directory bookworm "$dir/rootfs" >&2
umoci init --layout "$dir/oci" >&2
umoci new --image "$dir/oci:1" >&2
umoci unpack --image "$dir/oci:1" "$dir/bundle" >&2
rmdir "$dir/bundle/rootfs"
mv "$dir/rootfs" "$dir/bundle/rootfs"
umoci repack --image "$dir/oci:1" "$dir/bundle" >&2
umoci config --image "$dir/oci:1" --config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	--config.cmd /bin/sh >&2
umoci gc --layout "$dir/oci" >&2
rm -rf "$dir/bundle"
touch "$dir/done"
echo "$dir/oci"
