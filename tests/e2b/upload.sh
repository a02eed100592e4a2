#!/bin/bash
# tests/e2b/upload.sh — POST /files streams into the sandbox (SPEC §18,
# issue 32.1): an upload is bounded by the sandbox's disk, not by
# --max-body (1 MiB here: 20 MiB written whole, checked by sha256 inside;
# 130 MiB refused by --e2b-disk 100), with the real SDK (tests/e2b/shared.mjs
# upload); the server's memory holds no upload (its RSS stays below it).
. "$(dirname "$0")/lib.bash"
node_ready || exit 0
start_alice upload --max-body 1048576 --e2b-disk 100 || exit 1
sdk_checked shared.mjs upload
rss=$(awk '/^VmHWM/ {print $2}' "/proc/$SRV_PID/status")
check "e2b upload: the server's peak memory stays below what was uploaded (${rss} kB < 130 MiB)" test "$rss" -lt 133120
stop_e2b upload
