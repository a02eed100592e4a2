#!/bin/bash
# tests/e2e/limits.sh — --pids, --memory, --cpu, --fsize and core dumps
# (SPEC §2, §3).  Every attack is a capped probe (tests/helpers/probe_*.c):
# bounded even when ward enforces nothing.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/e2e.inc"
wr() { OUT=$(timeout -k 2 "${WT:-60}" "$WARD" run "$@" 2>"$T/.err" </dev/null); RC=$?; ERR=$(cat "$T/.err"); }
P=(--ro-bind "$HELPERS:/probe")
for h in probe_forks probe_mem probe_spin; do
	[ -x "$HELPERS/$h" ] || { fail "helper $h built" "run make helpers"; exit 0; }
done

# ---- --pids: a fork loop (at most 200) gets at most N processes.
wr --timeout 20 --pids 16 "${P[@]}" -- /probe/probe_forks 200
k=$(printf '%s\n' "$OUT" | sed -n 's/^forks=\([0-9]*\).*/\1/p')
if [ -n "$k" ] && [ "$k" -lt 16 ]; then pass "--pids 16: fork loop stopped at $k"
else fail "--pids 16: fork loop stopped below 16" "out=[$OUT] err=$ERR"; fi
expect_contains "--pids 16: fork fails with EAGAIN" "$OUT" "errno=EAGAIN"
# Threads count too (each waits until all are started: none ends early).
wr --timeout 20 --pids 16 -- /usr/bin/python3 -c 'import threading
go=threading.Event(); n=0
try:
    for i in range(100):
        threading.Thread(target=go.wait,args=(15,),daemon=True).start(); n+=1
except RuntimeError: pass
print(n); go.set()'
if [ -n "$OUT" ] && [ "$OUT" -lt 16 ] 2>/dev/null; then pass "--pids 16: threads capped ($OUT)"; else fail "--pids 16: threads capped" "threads=[$OUT] err=$(printf %s "$ERR" | tail -1)"; fi
# The default (64) also caps the tree.
wr --timeout 20 "${P[@]}" -- /probe/probe_forks 200
k=$(printf '%s\n' "$OUT" | sed -n 's/^forks=\([0-9]*\).*/\1/p')
if [ -n "$k" ] && [ "$k" -lt 64 ]; then pass "default pids: fork loop stopped at $k"
else fail "default pids: fork loop stopped below 64" "out=[$OUT]"; fi
# The limit is whole-tree, not per uid-less process: two forkers (separate
# subtrees) splitting the work still share it.  probe_forks -n holds every
# child until both forkers are done, so the two counts are of children alive
# at once, whichever forker runs first.
wr --timeout 20 --pids 20 "${P[@]}" -- /probe/probe_forks -n 2 15
tot=$(printf '%s\n' "$OUT" | sed -n 's/^forks=\([0-9]*\).*/\1/p' | awk '{s+=$1} END{print s+0}')
if [ "$(grep -c '^forks=' <<<"$OUT")" = 2 ] && [ "$tot" -lt 20 ] && [ "$tot" -ge 8 ]; then pass "--pids 20: two fork loops share the limit ($tot)"; else fail "--pids 20: two fork loops share the limit" "total=$tot out=[$OUT]"; fi

# ---- --memory: a memory bomb (at most 1 GiB touched) is OOM-killed.
wr --timeout 30 --json --memory 64 "${P[@]}" -- /probe/probe_mem 1024
expect_eq "--memory 64: exit 137" 137 "$RC"
expect_eq "--memory 64: status memory" memory "$(jg "$OUT" 'd["status"]')"
expect_eq "--memory 64: oom_killed" true "$(jg "$OUT" 'd["oom_killed"]')"
expect_eq "--memory 64: exit_code 137" 137 "$(jg "$OUT" 'd["exit_code"]')"
expect_eq "--memory 64: error empty" "" "$(jg "$OUT" 'd["error"]')"
expect_eq "--memory 64: did not finish" false "$(jg "$OUT" '"allocated=" in d["stdout"]')"
wr --timeout 30 --memory 64 "${P[@]}" -- /probe/probe_mem 1024
expect_eq "--memory 64 without --json: exit 137" 137 "$RC"
# Under the limit it runs.
wr --timeout 30 --memory 128 "${P[@]}" -- /probe/probe_mem 48
expect_eq "--memory 128: 48 MiB fits" "0 allocated=48" "$RC $OUT"
# Whole tree: two 40 MiB children cannot both hold their memory under
# --memory 64.  probe_mem -n counts the children that still held it at one
# moment after both had allocated or died, so which one the OOM killer takes
# (perhaps one that had finished already) does not matter; under --memory
# 128 both hold at once, which shows the count can see two.
wr --timeout 45 --json --memory 64 "${P[@]}" -- /probe/probe_mem -n 2 40
held=$(jg "$OUT" 'd["stdout"].strip()')
case "$held" in
"held_at_once=0 of 2" | "held_at_once=1 of 2") pass "--memory is whole-tree: two 40 MiB holders never alive at once ($held)" ;;
*) fail "--memory is whole-tree: two 40 MiB holders never alive at once" "[$held] $(jg "$OUT" '"enforced.memory=%s oom_killed=%s wall_ms=%s max_rss_kb=%s" % (d["enforced"]["memory"], d["oom_killed"], d["usage"]["wall_ms"], d["usage"]["max_rss_kb"])')" ;;
esac
wr --timeout 45 --memory 128 "${P[@]}" -- /probe/probe_mem -n 2 40
expect_eq "--memory 128: two 40 MiB holders fit at once (the count sees both)" "0 held_at_once=2 of 2" "$RC $OUT"

# ---- --cpu: a busy loop (at most 30 s of wall time) is stopped after ~1 s of CPU.
# (The wall-clock bounds are generous: on a loaded machine 1 s of CPU takes
# longer than 1 s; under 20 s, the 30 s --timeout did not stop it.)
t0=$(date +%s%N)
WT=45 wr --timeout 30 --cpu 1 --json "${P[@]}" -- /probe/probe_spin 30
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
expect_eq "--cpu 1: exit 124" 124 "$RC"
expect_eq "--cpu 1: status timeout" timeout "$(jg "$OUT" 'd["status"]')"
expect_eq "--cpu 1: timed_out" true "$(jg "$OUT" 'd["timed_out"]')"
if [ "$ms" -lt 20000 ] && [ "$ms" -ge 800 ]; then pass "--cpu 1: stopped by the CPU limit ($ms ms)"; else fail "--cpu 1: stopped by the CPU limit" "took $ms ms"; fi
cpu=$(jg "$OUT" 'd["usage"]["cpu_user_ms"]+d["usage"]["cpu_sys_ms"]')
if [ "$cpu" -ge 700 ] 2>/dev/null && [ "$cpu" -le 3000 ]; then pass "--cpu 1: ~1 s of CPU used ($cpu ms)"; else fail "--cpu 1: ~1 s of CPU used" "cpu=[$cpu]"; fi
# Tree-wide: two spinners share the budget (rlimit alone would allow 1 s each).
t0=$(date +%s%N)
WT=45 wr --timeout 30 --cpu 1 --json "${P[@]}" --shell '/probe/probe_spin 30 & /probe/probe_spin 30 & /probe/probe_spin 30 & wait'
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
expect_eq "--cpu 1 tree-wide: exit 124" 124 "$RC"
if [ "$ms" -lt 20000 ] && [ "$ms" -ge 400 ]; then pass "--cpu 1 tree-wide: stopped by the CPU limit ($ms ms)"; else fail "--cpu 1 tree-wide: stopped by the CPU limit" "took $ms ms"; fi
cpu=$(jg "$OUT" 'd["usage"]["cpu_user_ms"]+d["usage"]["cpu_sys_ms"]')
if [ "$cpu" -le 2500 ] 2>/dev/null; then pass "--cpu 1 tree-wide: total CPU ~1 s ($cpu ms)"; else fail "--cpu 1 tree-wide: total CPU ~1 s" "cpu=[$cpu]"; fi
# A sleeping command is not charged CPU: --cpu 1 with sleep 1.5 finishes.
wr --timeout 5 --cpu 1 --shell 'sleep 1.5; echo slept'
expect_eq "--cpu 1: sleeping 1.5 s is fine" "0 slept" "$RC $OUT"

# ---- --fsize: a 4 MiB write with --fsize 1 fails.
guard "/tmp/$X-f"
wr --timeout 20 --fsize 1 --env X=$X --shell '(head -c 4194304 /dev/zero >/tmp/$X-f) 2>/dev/null; echo rc=$?; stat -c %s /tmp/$X-f'
rc=$(printf '%s\n' "$OUT" | sed -n 's/^rc=//p'); sz=$(printf '%s\n' "$OUT" | tail -1)
if [ -n "$rc" ] && [ "$rc" != 0 ]; then pass "--fsize 1: 4 MiB write fails (rc=$rc)"; else fail "--fsize 1: 4 MiB write fails" "out=[$OUT]"; fi
if [ -n "$sz" ] && [ "$sz" -le 1048576 ] 2>/dev/null; then pass "--fsize 1: file stays <= 1 MiB ($sz)"; else fail "--fsize 1: file stays <= 1 MiB" "size=[$sz]"; fi
wr --timeout 20 --fsize 1 --env X=$X -- /usr/bin/python3 -c 'import signal,errno,os
signal.signal(signal.SIGXFSZ,signal.SIG_IGN)
f=open("/tmp/%s-f" % os.environ["X"],"wb")
try:
    for i in range(64): f.write(b"x"*65536); f.flush()
    print("wrote")
except OSError as e: print(errno.errorcode[e.errno])'
expect_eq "--fsize 1: EFBIG when SIGXFSZ is ignored" EFBIG "$OUT"
# Default 64 MiB: a 2 MiB file is fine.
wr --timeout 20 --env X=$X --shell 'head -c 2097152 /dev/zero >/tmp/$X-f && stat -c %s /tmp/$X-f'
expect_eq "default fsize: 2 MiB file fine" 2097152 "$OUT"

# ---- the defaults of SPEC §2: --memory 512, --fsize 64, --tmp-size 64.
wr --timeout 30 --json "${P[@]}" -- /probe/probe_mem 1024
expect_eq "default memory 512: a 1 GiB bomb is OOM-killed" "137 memory" "$RC $(jg "$OUT" 'd["status"]')"
wr --timeout 30 "${P[@]}" -- /probe/probe_mem 400
expect_eq "default memory 512: 400 MiB fits" "0 allocated=400" "$RC $OUT"
guard "/tmp/$X-big"
wr --timeout 30 --tmp-size 100 --env X=$X --shell '(head -c 73400320 /dev/zero >/tmp/$X-big) 2>/dev/null; stat -c %s /tmp/$X-big'
expect_eq "default fsize 64: a 70 MiB file stops at 64 MiB" 67108864 "$OUT"
wr --timeout 30 --fsize 100 --env X=$X --shell '(head -c 73400320 /dev/zero >/tmp/$X-big) 2>&1; stat -c %s /tmp/$X-big; stat -f -c "%b %S" /tmp'
expect_contains "default tmp-size 64: ENOSPC past 64 MiB" "$OUT" "No space left on device"
expect_eq "default tmp-size 64: /tmp is 64 MiB" 65536 "$(printf '%s\n' "$OUT" | tail -1 | awk '{print $1*$2/1024}')"

# ---- core dumps off.
wr --timeout 10 --shell 'ulimit -c; awk "/core file/{print \$5, \$6}" /proc/self/limits'
expect_eq "core dumps off (ulimit -c 0, soft and hard)" "0 0 0" "$(echo $OUT)"
# Only meaningful where the kernel writes cores into the cwd.
case "$(cat /proc/sys/kernel/core_pattern)" in
"|"*|/*) ;;
*)	W=$T/w; mkdir -p "$W"; chmod 0777 "$W"
	wr --timeout 10 --workdir "$W" --shell 'ulimit -c unlimited 2>/dev/null; sh -c "kill -SEGV \$\$"; ls; echo ran'
	expect_eq "SIGSEGV leaves no core file" "ran " "$OUT $(ls "$W")" ;;
esac

# ---- the limits hold for what the child cannot raise: setrlimit up fails.
wr --timeout 10 --fsize 1 --shell 'ulimit -f unlimited 2>/dev/null && echo raised || echo kept'
expect_eq "--fsize rlimit cannot be raised" kept "$OUT"
