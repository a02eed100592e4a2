#!/bin/bash
# tests/e2b/sizes.sh — an E2B sandbox's sizes (SPEC §18; issue 32.1): by
# default what an agent can live in (512 MB, 256 processes, 1 GiB of home
# and /tmp), and --e2b-memory, --e2b-pids, --e2b-disk within the maxima
# (beyond them the runner does not start), with the real SDK
# (tests/e2b/shared.mjs sizes, sizes2).
. "$(dirname "$0")/lib.bash"
node_ready || exit 0
start_alice sizes || exit 1
sdk_checked shared.mjs sizes
stop_e2b sizes
start_alice sizes2 --e2b-memory 256 --e2b-pids 32 --e2b-disk 100 || exit 1
sdk_checked shared.mjs sizes2
stop_e2b sizes2
out=$("$WARD" serve --listen 127.0.0.1:0 --e2b 127.0.0.1:0 --max-pids 100 --e2b-pids 200 2>&1 </dev/null)
check "e2b sizes: --e2b-pids above --max-pids: refused at start, naming both" \
	grep -q -- '--e2b-pids 200 is above --max-pids' <<<"$out"
