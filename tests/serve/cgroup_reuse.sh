#!/bin/bash
# Cgroups kept for the next sandbox (src/sandbox/cgroup.c, "recycling"): a
# server keeps an emptied run cgroup instead of removing it, resets its
# counters and gives it to the next sandbox.  Each run must still see only
# its own usage and its own limits: the CPU time, memory peak and OOM kill of
# the run before never show in the next one's result, a lower or higher
# limit asked by the next request holds, a cgroup left with memory charged
# is removed rather than kept, and a stopped server leaves no cgroup behind.
. "$(dirname "$0")/lib.bash"

cg_parent() {
	local p
	p=$(awk '$9 == "cgroup" && $NF ~ /(^|,)memory(,|$)/ {print $5; exit}' /proc/self/mountinfo)
	[ -n "$p" ] && [ -d "$p/ward" ] && { echo "$p/ward"; return; }
	[ -d /sys/fs/cgroup/ward ] && echo /sys/fs/cgroup/ward
}
made() { metric 'ward_cgroups_total{event="made"}'; }
reused() { metric 'ward_cgroups_total{event="reused"}'; }
discarded() { metric 'ward_cgroups_total{event="discarded"}'; }
# run JSON — POST /exec; the body
run() { body_of "$(post_exec "$1")"; }
py() { python3 -c 'import json,sys; print(json.dumps({"argv":["python3","-c",sys.argv[1]],"limits":json.loads(sys.argv[2])}))' "$1" "${2:-{\}}"; }
# settled — the last run's cgroup is back: none of the server's is in use
settled() { [ "$(metric ward_cgroups_idle)" -ge 1 ] 2>/dev/null; }

# One run at a time: each run gets the cgroup the last one gave back.
HOSTDIR=$(mktemp -d /tmp/ward-cgreuse.XXXXXX)
trap 'rm -rf "$HOSTDIR"; _serve_cleanup' EXIT
chmod 0777 "$HOSTDIR"
start_server cgreuse --max-concurrent 1 --allow-root "$HOSTDIR" || exit 0
if [ -z "$(metric ward_cgroups_idle)" ]; then
	fail "cgroup reuse: /metrics has ward_cgroups_idle" "$(curl -s "$URL/metrics" | grep -c ward_cgroups)"
	exit 0
fi
for _ in 1 2 3; do run '{"argv":["true"]}' >/dev/null; done
# cgroup v2 before Linux 6.12 cannot reset memory.peak: nothing is kept there.
kv=$(uname -r | cut -d- -f1)
if [ "$(stat -f -c %T /sys/fs/cgroup)" = cgroup2fs ] && [ "$(printf '%s\n6.12\n' "$kv" | sort -V | head -1)" != 6.12 ]; then
	expect_eq "cgroup reuse: on cgroup v2 before 6.12 (memory.peak cannot be reset) no cgroup is kept" \
		0 "$(reused)"
	exit 0
fi
wait_for settled
m0=$(made) u0=$(reused)
for _ in 1 2 3 4 5; do wait_for settled; run '{"argv":["true"]}' >/dev/null; done
wait_for settled
expect_eq "cgroup reuse: five runs in a row make no new cgroup" "$m0" "$(made)"
expect_eq "cgroup reuse: ... each reuses the one given back" "$((u0 + 5))" "$(reused)"
PARENT=$(cg_parent)
n=$(find "$PARENT" -maxdepth 1 -name "ward-$SRV_PID-*" | wc -l)
expect_eq "cgroup reuse: the server's run cgroups on the host are the ones it keeps idle (no run now)" \
	"$(metric ward_cgroups_idle)" "$n"

# --- usage: the run before never shows --------------------------------------
BURN='import time
x = bytearray(80 << 20)
t = time.process_time()
while time.process_time() - t < 0.4: pass
print("burnt")'
r=$(run "$(py "$BURN")")
expect_contains "cgroup reuse: a run burns 0.4 s of CPU and holds 80 MB" "$(jg "$r" 'd["stdout"]')" "burnt"
expect_eq "cgroup reuse: ... its usage says so" true \
	"$(jg "$r" 'd["usage"]["cpu_user_ms"] + d["usage"]["cpu_sys_ms"] >= 350 and d["usage"]["max_rss_kb"] >= 80000')"
wait_for settled
u1=$(reused)
r=$(run '{"argv":["true"]}')
expect_eq "cgroup reuse: the next run got that cgroup" "$((u1 + 1))" "$(reused)"
expect_eq "cgroup reuse: ... and its CPU time is its own (under 100 ms), not the 0.4 s before" true \
	"$(jg "$r" 'd["usage"]["cpu_user_ms"] + d["usage"]["cpu_sys_ms"] < 100')"
expect_eq "cgroup reuse: ... its memory peak its own (under 20 MB), not the 80 MB before" true \
	"$(jg "$r" 'd["usage"]["max_rss_kb"] < 20000')"

# --- limits: each request's own, up or down ------------------------------------
wait_for settled
r=$(run "$(py 'x = bytearray(100 << 20); print("got 100")' '{"memory_mb":48}')")
expect_eq "cgroup reuse: a run limited to 48 MB is stopped at 100 MB" "memory" "$(jg "$r" 'd["status"]')"
expect_eq "cgroup reuse: ... as an OOM kill" true "$(jg "$r" 'd["oom_killed"]')"
wait_for settled
r=$(run "$(py 'x = bytearray(100 << 20); print("got 100")' '{"memory_mb":256}')")
expect_contains "cgroup reuse: the next run, limited to 256 MB, holds 100 MB (the limit was raised)" \
	"$(jg "$r" 'd["stdout"]')" "got 100"
expect_eq "cgroup reuse: ... and the OOM kill before is not its own" false "$(jg "$r" 'd["oom_killed"]')"
wait_for settled
r=$(run "$(py 'x = bytearray(100 << 20); print("got 100")' '{"memory_mb":48}')")
expect_eq "cgroup reuse: and lowered again, 48 MB holds" "memory" "$(jg "$r" 'd["status"]')"
wait_for settled
FORK='import os, time
kids = []
for i in range(40):
    try:
        p = os.fork()
    except OSError:
        print("refused at", i); break
    if p == 0:
        time.sleep(3); os._exit(0)
    kids.append(p)
else:
    print("forked 40")'
r=$(run "$(py "$FORK" '{"pids":8}')")
expect_contains "cgroup reuse: a run limited to 8 pids cannot fork 40" "$(jg "$r" 'd["stdout"]')" "refused at"
wait_for settled
r=$(run "$(py "$FORK" '{"pids":64}')")
expect_contains "cgroup reuse: the next, limited to 64, forks 40 (the pids limit was raised)" \
	"$(jg "$r" 'd["stdout"]')" "forked 40"

# --- a cgroup left with memory charged is not kept ----------------------------
# Page cache of a file the run wrote on the host (a writable mount) stays
# charged to its cgroup after its processes are gone.
wait_for settled
d0=$(discarded)
r=$(run "$(python3 -c 'import json,sys; print(json.dumps({"argv":["sh","-c","head -c 8000000 /dev/zero > /data/f && echo wrote"],"mounts":[{"host_path":sys.argv[1],"sandbox_path":"/data","read_only":False}]}))' "$HOSTDIR")")
expect_contains "cgroup reuse: a run writes 8 MB to a host directory" "$(jg "$r" 'd["stdout"]')" "wrote"
wait_for settled
expect_eq "cgroup reuse: ... its cgroup, left with the file's page cache charged, is removed, not kept" \
	"$((d0 + 1))" "$(discarded)"

# --- no growth, and nothing left after a stop -------------------------------------
fds_cg() { local f n=0; for f in /proc/"$SRV_PID"/fd/*; do case "$(readlink "$f")" in /sys/fs/cgroup/*) n=$((n + 1)) ;; esac; done; echo "$n"; }
run '{"argv":["true"]}' >/dev/null
wait_for settled
f0=$(fds_cg)
for _ in $(seq 10); do wait_for settled; run '{"argv":["true"]}' >/dev/null; done
wait_for settled
expect_eq "cgroup reuse: ten more runs hold no more cgroup files open" "$f0" "$(fds_cg)"

# --- another ward that cannot see this server's pid ---------------------------------
# Any ward removes the empty run cgroups of a ward that is gone (its pid not
# there, the directory 30 s old); one in another PID namespace cannot see this
# server's pid, so only the lock a live ward holds on its cgroups keeps them.
wait_for settled
kept=$(find "$PARENT" -maxdepth 1 -name "ward-$SRV_PID-*" | head -1)
age=$(($(date +%s) - $(stat -c %Y "$kept")))
[ "$age" -le 31 ] && sleep $((32 - age))
unshare -p -f "$WARD" run -- true >/dev/null 2>&1
expect_eq "cgroup reuse: a ward in another PID namespace (this server's pid unseen) leaves its idle cgroup" \
	yes "$([ -d "$kept" ] && echo yes || echo gone)"
r=$(run '{"argv":["true"]}')
expect_eq "cgroup reuse: ... and the next run takes it" ok "$(jg "$r" 'd["status"]')"

pid=$SRV_PID
stop_server "$SRV_PID"
n=$(find "$PARENT" -maxdepth 1 -name "ward-$pid-*" | wc -l)
expect_eq "cgroup reuse: a stopped server leaves none of its cgroups behind" 0 "$n"
