#!/bin/bash
# Hostile tests (SPEC §15), each with its own verdict, and the next test
# runs normally: a fork bomb, a disk fill, printing forever, sleeping past
# the wall limit, spinning past the CPU limit (and extra_cpu_seconds), a
# memory hog, a daemon left behind (gone before the next test), a crash.
# Every test is bounded by the job's limits (pids 16, 64 MB, 8 MB files,
# 2 s wall, 1 s CPU); the spinners get 30 s of wall, so that their CPU
# limit is what ends them however loaded the machine is.
. "$(dirname "$0")/judge.bash"

start_server hostile --max-concurrent 2 || exit 0
T=$SERVE_TMP
lim='{"timeout_s": 2, "cpu_seconds": 1, "memory_mb": 64, "pids": 16, "fsize_mb": 8, "max_output_bytes": 65536}'
tests='[{"id":"forkbomb","stdin":"forkbomb","limits":{"memory_mb":512}}, {"id":"after-forkbomb","stdin":"1 2","expected_stdout":"3\n"},
 {"id":"disk","stdin":"disk"}, {"id":"after-disk","stdin":"3 4","expected_stdout":"7\n"},
 {"id":"print","stdin":"print"}, {"id":"after-print","stdin":"5 6","expected_stdout":"11\n"},
 {"id":"sleep","stdin":"sleep"}, {"id":"spin","stdin":"spin","limits":{"timeout_s":30}},
 {"id":"spin-extra","stdin":"spin","limits":{"cpu_seconds":0.5,"extra_cpu_seconds":1,"timeout_s":30}},
 {"id":"alloc","stdin":"alloc"}, {"id":"after-alloc","stdin":"1 1","expected_stdout":"2\n"},
 {"id":"daemon","stdin":"daemon","expected_stdout":"ok\n"}, {"id":"look","stdin":"look","expected_stdout":"clean\n"},
 {"id":"segv","stdin":"segv"}, {"id":"exit3","stdin":"exit3"}]'
job c "$JDIR/hostile.c" "$tests" '{"run": {"limits": '"$lim"'}, "parallel": 2}' >"$T/h.json"
start=$(date +%s)
post_judge "$T/h.json"; ans=$ANS
took=$(($(date +%s) - start))
expect_eq "hostile: the job is answered" 200 "$CODE"
v() { jg "$ans" '[t for t in d["tests"] if t["id"]=="'"$1"'"][0]["'"${2:-verdict}"'"]'; }
expect_eq "hostile: a fork bomb is held by pids and ends TLE" TLE "$(v forkbomb)"
expect_eq "hostile: the test after the fork bomb runs normally" AC "$(v after-forkbomb)"
expect_eq "hostile: filling the disk is RE (SIGXFSZ at fsize)" RE "$(v disk)"
expect_contains "hostile: ... said so" "$(v disk message)" "SIGXFSZ"
expect_eq "hostile: the test after the disk fill runs normally" AC "$(v after-disk)"
expect_eq "hostile: printing forever is OLE" OLE "$(v print)"
expect_contains "hostile: ... killed at max_output_bytes, said so" "$(v print message)" "stdout passed max_output_bytes (65536 bytes)"
wall=$(jg "$ans" '[t for t in d["tests"] if t["id"]=="print"][0]["usage"]["wall_ms"]')
check "hostile: ... killed at once, not at the time limit (${wall} ms)" test "$wall" -lt 1500
expect_eq "hostile: the test after OLE runs normally" AC "$(v after-print)"
expect_eq "hostile: sleeping past the wall limit is TLE" TLE "$(v sleep)"
expect_contains "hostile: ... by the wall clock" "$(v sleep message)" "wall time"
expect_eq "hostile: spinning past the CPU limit is TLE" TLE "$(v spin)"
expect_contains "hostile: ... by CPU time, said so" "$(v spin message)" "CPU time"
expect_contains "hostile: ... against the limit" "$(v spin message)" "> 1 s"
expect_eq "hostile: extra_cpu_seconds: still TLE" TLE "$(v spin-extra)"
cpu=$(jg "$ans" '[t for t in d["tests"] if t["id"]=="spin-extra"][0]["usage"]["cpu_ms"]')
check "hostile: ... its CPU time measured past the limit (${cpu} ms > 1200)" test "$cpu" -gt 1200
expect_contains "hostile: ... held to cpu_seconds" "$(v spin-extra message)" "> 0.5 s"
expect_eq "hostile: allocating past the memory limit is MLE (the cgroup's OOM kill)" MLE "$(v alloc)"
expect_eq "hostile: the test after MLE runs normally" AC "$(v after-alloc)"
expect_eq "hostile: a test that leaves a daemon is AC" AC "$(v daemon)"
expect_eq "hostile: the next test sees nothing of another's files" AC "$(v look)"
check "hostile: the daemon is gone (no sleep 4242 on the host)" test -z "$(marker_pids 4242)"
expect_eq "hostile: a crash is RE" RE "$(v segv)"
expect_eq "hostile: ... killed by SIGSEGV" "killed by SIGSEGV" "$(v segv message)"
expect_eq "hostile: exit 3 is RE" "exit status 3" "$(v exit3 message)"
expect_eq "hostile: the job's verdict is the first failure's" TLE "$(jg "$ans" 'd["verdict"]')"
expect_eq "hostile: first_failed" forkbomb "$(jg "$ans" 'd["summary"]["first_failed"]')"
check "hostile: bounded (${took} s)" test "$took" -lt 60

# a compile that runs forever or fills the disk: CE within its own limits
printf '#include "/dev/zero"\n' >"$T/zero.c"
job c "$T/zero.c" '[{"stdin":"1 2","expected_stdout":"3\n"}]' '{"compile": {"limits": {"timeout_s": 4, "memory_mb": 256}}}' >"$T/z.json"
start=$(date +%s)
post_judge "$T/z.json"; ans=$ANS
expect_eq "hostile: a compile that never ends is CE" CE "$(jg "$ans" 'd["verdict"]')"
expect_eq "hostile: ... and no test runs" "[]" "$(jg "$ans" 'd["tests"]')"
check "hostile: ... within its limit" test $(($(date +%s) - start)) -lt 20
printf 'char big[1 << 28] = {[0 ... (1 << 28) - 1] = 1};\nint main(void) { return big[7]; }\n' >"$T/big.c"
job c "$T/big.c" '[{"stdin":"1 2"}]' '{"compile": {"limits": {"timeout_s": 20, "fsize_mb": 16, "tmp_size_mb": 32}}}' >"$T/b.json"
post_judge "$T/b.json"; ans=$ANS
expect_eq "hostile: a compile that fills the disk is CE" CE "$(jg "$ans" 'd["verdict"]')"
expect_contains "hostile: ... said so" "$(jg "$ans" 'd["compile"]["message"]')" "compile:"
