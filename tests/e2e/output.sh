#!/bin/bash
# tests/e2e/output.sh — output caps (SPEC §2 --output-limit, §4): head and
# tail kept, the middle dropped, byte counts exact, the child never blocked
# or killed for output, ward's own memory small; live streaming without --json.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/e2e.inc"
wr() { OUT=$(timeout -k 2 "${WT:-60}" "$WARD" run "$@" 2>"$T/.err" </dev/null); RC=$?; ERR=$(cat "$T/.err"); }
RSS_MAX_KB=65536
[ "${WARD_ASAN:-0}" = 1 ] && RSS_MAX_KB=262144  # ASan's shadow and quarantine

# peak_rss_kb CMD... — runs CMD (stdout to $T/out) and prints the peak RSS
# of the largest process of its tree (ward: the sandbox's are small) in KiB,
# from the kernel's accounting (getrusage of the waited children: polling
# VmHWM of the first pid would see `timeout`, not ward); CMD's exit status
# in $T/rc.
peak_rss_kb() {
	/usr/bin/python3 -c 'import resource,subprocess,sys
with open(sys.argv[1],"wb") as out, open(sys.argv[2],"wb") as err:
    rc=subprocess.call(sys.argv[4:], stdout=out, stderr=err, stdin=subprocess.DEVNULL)
open(sys.argv[3],"w").write("%d\n" % rc)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' "$T/out" "$T/err" "$T/rc" "$@"
}

# 200 MB with --output-limit 1000: head and tail kept, middle dropped.
N=200000000
peak=$(peak_rss_kb timeout -k 2 60 "$WARD" run --timeout 40 --json --output-limit 1000 \
	--shell "printf HEAD-MARK; head -c $N /dev/zero | tr '\\0' x; printf TAIL-MARK; printf E >&2")
OUT=$(cat "$T/out")
expect_eq "200 MB: exit 0" 0 "$(cat "$T/rc")"
expect_eq "200 MB: status ok (not killed for output)" ok "$(jg "$OUT" 'd["status"]')"
expect_eq "200 MB: stdout_truncated" true "$(jg "$OUT" 'd["stdout_truncated"]')"
expect_eq "200 MB: stdout_bytes counts everything" $((N + 18)) "$(jg "$OUT" 'd["stdout_bytes"]')"
expect_eq "200 MB: stdout keeps the head" true "$(jg "$OUT" 'd["stdout"].startswith("HEAD-MARKxxx")')"
expect_eq "200 MB: stdout keeps the tail" true "$(jg "$OUT" 'd["stdout"].endswith("xxxTAIL-MARK")')"
len=$(jg "$OUT" 'len(d["stdout"].encode())')
if [ "$len" -ge 900 ] 2>/dev/null && [ "$len" -le 1200 ]; then pass "200 MB: kept about 1000 bytes ($len)"
else fail "200 MB: kept about 1000 bytes" "len=[$len]"; fi
expect_eq "200 MB: a marker shows where the middle went" true "$(jg "$OUT" 'len(d["stdout"].replace("x","").replace("HEAD-MARK","").replace("TAIL-MARK",""))>0')"
expect_eq "200 MB: stderr untouched" "E false 1" "$(jg "$OUT" 'd["stderr"]' 2>&1) $(jg "$OUT" 'd["stderr_truncated"]' 2>&1) $(jg "$OUT" 'd["stderr_bytes"]')"
if [ "$peak" -gt 0 ] && [ "$peak" -lt "$RSS_MAX_KB" ]; then pass "200 MB: ward's peak RSS stays small (${peak} KiB)"
else fail "200 MB: ward's peak RSS stays small" "max RSS ${peak} KiB (limit $RSS_MAX_KB)"; fi

# Exactly at the limit: not truncated; one byte over: truncated.
wr --timeout 10 --json --output-limit 1000 --shell 'head -c 1000 /dev/zero | tr "\0" y'
expect_eq "exactly the limit: not truncated" "false 1000 1000" "$(jg "$OUT" 'd["stdout_truncated"]' 2>&1) $(jg "$OUT" 'd["stdout_bytes"]' 2>&1) $(jg "$OUT" 'len(d["stdout"])')"
wr --timeout 10 --json --output-limit 1000 --shell 'head -c 1001 /dev/zero | tr "\0" y'
expect_eq "one byte over: truncated" "true 1001" "$(jg "$OUT" 'd["stdout_truncated"]' 2>&1) $(jg "$OUT" 'd["stdout_bytes"]')"
# stderr is capped on its own.
wr --timeout 20 --json --output-limit 1000 --shell 'head -c 5000000 /dev/zero | tr "\0" e >&2; echo out'
expect_eq "stderr capped separately" "true 5000000 false out" "$(jg "$OUT" 'd["stderr_truncated"]' 2>&1) $(jg "$OUT" 'd["stderr_bytes"]' 2>&1) $(jg "$OUT" 'd["stdout_truncated"]' 2>&1) $(jg "$OUT" 'd["stdout"].strip()')"
# Default output limit is 1 MiB.
wr --timeout 20 --json --shell 'head -c 3000000 /dev/zero | tr "\0" z'
len=$(jg "$OUT" 'len(d["stdout"])')
if [ "$len" -ge 1000000 ] 2>/dev/null && [ "$len" -le 1100000 ]; then pass "default output limit ~1 MiB ($len)"; else fail "default output limit ~1 MiB" "len=[$len]"; fi
# Truncation never splits a UTF-8 character into invalid JSON.
wr --timeout 20 --json --output-limit 1001 --shell 'i=0; while [ $i -lt 2000 ]; do printf "é"; i=$((i+1)); done'
expect_eq "truncated UTF-8 still parses" true "$(jg "$OUT" 'd["stdout_truncated"] and d["stdout"].startswith("éé") and d["stdout"].endswith("éé")')"

# Output that JSON amplifies: each \x01 is six bytes on the wire (\u0001).
# 16 MiB of it with a 16 MiB limit is a 96 MiB answer; ward streams it to
# stdout, so its peak is the kept output (head, tail, one copy), not the
# answer (jansson's tree and doubling buffer took ~230 MB for this).
N=$((16 << 20)); AMP_MAX_KB=$((64 << 10))
[ "${WARD_ASAN:-0}" = 1 ] && AMP_MAX_KB=$((160 << 10))
peak=$(peak_rss_kb timeout -k 2 120 "$WARD" run --timeout 60 --json --output-limit $N \
	--shell "head -c $N /dev/zero | tr '\\0' '\\1'")
expect_eq "16 MiB of 0x01: exit 0" 0 "$(cat "$T/rc")"
expect_eq "16 MiB of 0x01: the answer is valid JSON of the whole output, each byte as \\u0001" \
	"ok $N $N False True $N True" \
	"$(/usr/bin/python3 -c 'import json,sys
raw=open(sys.argv[1],"rb").read(); d=json.loads(raw); s=d["stdout"]
print(d["status"], d["stdout_bytes"], len(s), d["stdout_truncated"], s==chr(1)*len(s), raw.count(b"\\u0001"), len(raw) > 6 * len(s))' "$T/out" 2>&1)"
if [ "$peak" -gt 0 ] && [ "$peak" -lt "$AMP_MAX_KB" ]; then pass "16 MiB of 0x01: ward's peak RSS stays below 64 MiB, under the 96 MiB answer (${peak} KiB)"
else fail "16 MiB of 0x01: ward's peak RSS stays below 64 MiB" "max RSS ${peak} KiB (limit $AMP_MAX_KB)"; fi

# Without --json: output streams live, the child is not blocked or killed.
t0=$(date +%s%N)
timeout -k 2 60 "$WARD" run --timeout 40 --shell 'head -c 100000000 /dev/zero; echo end >&2' </dev/null 2>"$T/err" | wc -c >"$T/n"
rc=${PIPESTATUS[0]}
expect_eq "100 MB live: exit 0" 0 "$rc"
expect_contains "100 MB live: the child reached its end" "$(cat "$T/err")" end
n=$(cat "$T/n")
if [ "$n" -ge 1000000 ] 2>/dev/null && [ "$n" -le 100000000 ]; then pass "100 MB live: output delivered, at most the total ($n bytes)"
else fail "100 MB live: output delivered" "bytes=[$n]"; fi
# Live means before the child ends: the second line comes 3 s after the
# first, which is awaited (up to 20 s: a loaded machine is slow to start).
timeout -k 2 40 "$WARD" run --timeout 30 --shell 'echo first; sleep 3; echo second' </dev/null >"$T/live" 2>&1 &
wpid=$!
for _ in $(seq 200); do [ -s "$T/live" ] && break; sleep 0.1; done
expect_eq "live: first line arrives before the child ends" first "$(cat "$T/live")"
wait "$wpid"
expect_eq "live: the rest follows" "first second" "$(echo $(cat "$T/live"))"
# stdout and stderr stay separate.
timeout -k 2 20 "$WARD" run --timeout 10 --shell 'echo to-out; echo to-err >&2' </dev/null >"$T/o" 2>"$T/e"
expect_eq "live: stdout to stdout" to-out "$(cat "$T/o")"
expect_contains "live: stderr to stderr" "$(cat "$T/e")" to-err
# A reader that closes early does not hang ward.
t0=$(date +%s%N)
timeout -k 2 30 "$WARD" run --timeout 20 --shell 'yes | head -c 50000000; exit 0' </dev/null 2>/dev/null | head -c 10 >/dev/null
rc=${PIPESTATUS[0]}; ms=$(( ($(date +%s%N) - t0) / 1000000 ))
if [ "$rc" -ne 124 ] && [ "$ms" -lt 15000 ]; then pass "live: closed reader does not hang ward (rc=$rc, $ms ms)"
else fail "live: closed reader does not hang ward" "rc=$rc after $ms ms"; fi

# A live reader that goes away ends an endless writer as a shell pipeline
# would (SIGPIPE), instead of leaving it running to its timeout.
t0=$(date +%s%N)
timeout -k 2 30 "$WARD" run --timeout 20 -- yes </dev/null 2>/dev/null | head -c 10 >/dev/null
rc=${PIPESTATUS[0]}; ms=$(( ($(date +%s%N) - t0) / 1000000 ))
expect_eq "live: \`ward run -- yes | head\` ends with the child's SIGPIPE (141)" 141 "$rc"
