#!/bin/bash
# bench/e2b_life.sh — an E2B sandbox's pause, resume and fork through the real
# SDK (issue 32's speed section; bench/run runs it, or alone).  One server
# with --e2b and --e2b-state in a temporary directory on the disk;
# bench/e2b_life.mjs times the calls on a sandbox holding 100 MB of files and
# a 100 MB process.  Prints a markdown section on stdout; skips (exit 3)
# without node/npm.  The goals: pause <= 100 ms, resume <= 50 ms, fork <= 0.3 s,
# a snapshot <= 2 s and a second one of unchanged files no new layer bytes.
# Each round also times the kernel's copy of 100 MB from a tmpfs (/dev/shm)
# to the state directory's filesystem: the floor of a pause that writes
# the files.  WARD_BEFORE=PATH (another build's ward): a second server of
# it, its pause and resume interleaved with this one's (before and after).
. "$(dirname "$0")/e2b_node.bash" e2b_life.mjs
BEFORE_URL=
if [ -n "${WARD_BEFORE:-}" ]; then # (first: e2b_serve sets T)
	TB=$(mktemp -d /var/tmp/ward-bench-e2b-life-before.XXXXXX)
	WARD=$WARD_BEFORE e2b_serve "$TB" --e2b-state "$TB/state" --image-store "$TB/store"
	BEFORE_URL=http://$e
fi
T=$(mktemp -d /var/tmp/ward-bench-e2b-life.XXXXXX)
e2b_serve "$T" --e2b-state "$T/state" --image-store "$T/store"
[ "http://$e" != "$BEFORE_URL" ] || { echo "bench/e2b_life.sh: the two servers are one" >&2; exit 2; }
SHM=$(mktemp -d /dev/shm/ward-bench-floor.XXXXXX)
_E2B_DIRS+=("$SHM")
head -c 100000000 /dev/urandom >"$SHM/data"
j=$(cd "$NODE_DIR" && STORE=$T/store E2B_API_URL=http://$e E2B_SANDBOX_URL=http://$e E2B_API_KEY=bench-token-0123456789 \
	BEFORE_URL=$BEFORE_URL FLOOR_SRC=$SHM/data FLOOR_DST=$T timeout 600 node e2b_life.mjs) ||
	{ echo "bench/e2b_life.sh: e2b_life.mjs failed: $j" >&2; exit 2; }
python3 - "$j" <<'PY'
import json, sys
d = json.loads(sys.argv[1])
print("### An E2B sandbox's life: pause, resume, fork (issue 32.2, 32.4; bench/e2b_life.sh)\n")
print("The real `e2b` 2.51.0 SDK against `ward serve --e2b`, %d interleaved rounds, on a sandbox holding %d MB of files"
      " in its home and a process holding 100 MB of memory; --e2b-state on the disk; times as the SDK sees them (ms).\n"
      % (d["n"], d["data_bytes"] // 1000000))
print("| call | median | p90 | ratio to | goal |\n| --- | ---: | ---: | --- | --- |")
def row(name, k, base, goal):
    r = "%.2fx %s" % (d[k]["median"] / d[base]["median"], base) if base else ""
    print("| %s | %.1f | %.1f | %s | %s |" % (name, d[k]["median"], d[k]["p90"], r, goal))
row("`commands.run('true')`", "run", None, "")
row("`pause()` (frozen; the files written under --e2b-state)", "pause", "run", "<= 100 ms")
row("`Sandbox.connect()` of it (thaw)", "resume", "run", "<= 50 ms")
row("the kernel's copy of the 100 MB alone (tmpfs to the state directory's disk)", "copy_floor", None, "")
print("| `pause()` / the copy alone | %.2fx | %.2fx | | |" % (d["pause"]["median"] / d["copy_floor"]["median"],
      d["pause"]["p90"] / d["copy_floor"]["p90"]))
if "before_pause" in d:
    row("`pause()` of a twin that only pauses and resumes, here", "twin_pause", None, "")
    row("`pause()` of its twin on WARD_BEFORE's server, interleaved", "before_pause", "twin_pause", "")
    row("`Sandbox.connect()` of the twin here", "twin_resume", None, "")
    row("`Sandbox.connect()` of its twin on WARD_BEFORE's server", "before_resume", "twin_resume", "")
    print("| twin's `pause()` here / on WARD_BEFORE's | %.2fx | %.2fx | | |"
          % (d["twin_pause"]["median"] / d["before_pause"]["median"], d["twin_pause"]["p90"] / d["before_pause"]["p90"]))
row("`pause({keepMemory: false})` (files; the session ends)", "pause_files", "run", "")
row("`Sandbox.connect()` of it (a new session, the files restored)", "resume_files", "run", "")
row("`Sandbox.create()` + `kill()`", "create", None, "")
row("`fork({count: 1})` (the files copied)", "fork", "create", "<= 300 ms")
row("`createSnapshot()` (a file changed: a new layer)", "snapshot", "create", "<= 2000 ms")
row("`createSnapshot()` again, nothing changed", "snapshot_again", "create", "")
print("\nNew layer bytes written by the %d unchanged snapshots: %d (goal: 0)." % (d["n"], d["unchanged_snapshot_layer_bytes"]))
PY
