#!/bin/bash
# tests/e2e/result_json.sh — the result object of `ward run --json` (SPEC §4).
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/e2e.inc"

# schema JSON — prints "ok" or what is wrong with the object's keys and types.
schema() {
	/usr/bin/python3 - "$1" <<'PY'
import json, sys
try:
    d = json.loads(sys.argv[1])
except Exception as e:
    print("not one JSON object on stdout: %s" % e); sys.exit()
bad = []
def want(obj, key, types, where=""):
    if key not in obj:
        bad.append("missing %s%s" % (where, key)); return
    v = obj[key]
    # bool is an int in python: keep them apart.
    if bool in types and not isinstance(v, bool) or (isinstance(v, bool) and bool not in types) \
       or not isinstance(v, types):
        bad.append("%s%s has type %s" % (where, key, type(v).__name__))
want(d, "status", (str,))
if d.get("status") not in ("ok", "nonzero", "signal", "timeout", "memory", "error"):
    bad.append("status %r not in the enum" % d.get("status"))
want(d, "exit_code", (int,))
want(d, "signal", (int, type(None)))
for k in ("timed_out", "oom_killed", "stdout_truncated", "stderr_truncated"):
    want(d, k, (bool,))
for k in ("stdout", "stderr", "error", "isolation"):
    want(d, k, (str,))
for k in ("stdout_bytes", "stderr_bytes"):
    want(d, k, (int,))
want(d, "enforced", (dict,))
want(d, "usage", (dict,))
if isinstance(d.get("enforced"), dict):
    for k in ("memory", "pids", "cpu", "time"):
        want(d["enforced"], k, (str,), "enforced.")
if isinstance(d.get("usage"), dict):
    for k in ("wall_ms", "cpu_user_ms", "cpu_sys_ms", "max_rss_kb"):
        want(d["usage"], k, (int,), "usage.")
        if isinstance(d["usage"].get(k), int) and d["usage"][k] < 0:
            bad.append("usage.%s negative" % k)
print("ok" if not bad else "; ".join(bad))
PY
}

# status ok
wr --timeout 10 --json --shell 'echo out; echo err >&2'
expect_eq "ok: exit 0" 0 "$RC"
expect_eq "ok: schema" ok "$(schema "$OUT")"
expect_eq "ok: status" ok "$(jg "$OUT" 'd["status"]')"
expect_eq "ok: exit_code" 0 "$(jg "$OUT" 'd["exit_code"]')"
expect_eq "ok: signal null" null "$(jg "$OUT" 'd["signal"]')"
expect_eq "ok: stdout" "out" "$(jg "$OUT" 'd["stdout"].rstrip("\n")')"
expect_eq "ok: stderr" "err" "$(jg "$OUT" 'd["stderr"].rstrip("\n")')"
expect_eq "ok: stdout_bytes" 4 "$(jg "$OUT" 'd["stdout_bytes"]')"
expect_eq "ok: stderr_bytes" 4 "$(jg "$OUT" 'd["stderr_bytes"]')"
expect_eq "ok: not truncated" "false false" "$(jg "$OUT" 'd["stdout_truncated"]' 2>&1) $(jg "$OUT" 'd["stderr_truncated"]')"
expect_eq "ok: error empty" "" "$(jg "$OUT" 'd["error"]')"
expect_eq "ok: isolation system" system "$(jg "$OUT" 'd["isolation"]')"
expect_eq "ok: timed_out false" false "$(jg "$OUT" 'd["timed_out"]')"
expect_eq "ok: oom_killed false" false "$(jg "$OUT" 'd["oom_killed"]')"
expect_eq "ok: nothing but the object on stderr" "" "$ERR"

# enforced: names a known mechanism; on a root host with cgroups mounted,
# memory and pids are the cgroup's.
known='("cgroup-v2","cgroup-v1","rlimit","ward","landlock","seccomp","none")'
expect_eq "enforced: known mechanisms" true "$(jg "$OUT" "all(v in $known for v in (d['enforced'][k] for k in ('memory','pids','cpu','time')))")"
expect_eq "enforced.time is ward" ward "$(jg "$OUT" 'd["enforced"]["time"]')"
if [ "$(id -u)" = 0 ]; then
	if [ -e /sys/fs/cgroup/cgroup.controllers ]; then cg=cgroup-v2
	elif [ -d /sys/fs/cgroup/memory ]; then cg=cgroup-v1; else cg=""; fi
	if [ -n "$cg" ]; then
		expect_eq "enforced.memory on this host" "$cg" "$(jg "$OUT" 'd["enforced"]["memory"]')"
		expect_eq "enforced.pids on this host" "$cg" "$(jg "$OUT" 'd["enforced"]["pids"]')"
	fi
fi

# status nonzero; error stays empty when the child fails.
wr --timeout 10 --json --shell 'echo bad >&2; exit 3'
expect_eq "nonzero: exit 3" 3 "$RC"
expect_eq "nonzero: schema" ok "$(schema "$OUT")"
expect_eq "nonzero: status" nonzero "$(jg "$OUT" 'd["status"]')"
expect_eq "nonzero: exit_code" 3 "$(jg "$OUT" 'd["exit_code"]')"
expect_eq "nonzero: error empty" "" "$(jg "$OUT" 'd["error"]')"
expect_eq "nonzero: signal null" null "$(jg "$OUT" 'd["signal"]')"

# A missing program is the child's failure, not the sandbox's.
wr --timeout 10 --json -- /nonexistent/prog-$$
expect_eq "missing program --json: exit 127" 127 "$RC"
expect_eq "missing program --json: schema" ok "$(schema "$OUT")"
expect_eq "missing program --json: exit_code 127" 127 "$(jg "$OUT" 'd["exit_code"]')"

# status signal
wr --timeout 10 --json --shell 'kill -INT $$'
expect_eq "signal INT: exit 130" 130 "$RC"
expect_eq "signal INT: schema" ok "$(schema "$OUT")"
expect_eq "signal INT: status/signal" "signal 2" "$(jg "$OUT" 'd["status"]' 2>&1) $(jg "$OUT" 'd["signal"]')"
expect_eq "signal INT: error empty" "" "$(jg "$OUT" 'd["error"]')"

# status timeout (2 s: the timeout counts the setup, and "before" must come
# first even on a loaded machine)
wr --timeout 2 --json --shell 'echo before; sleep 20'
expect_eq "timeout: exit 124" 124 "$RC"
expect_eq "timeout: schema" ok "$(schema "$OUT")"
expect_eq "timeout: status" timeout "$(jg "$OUT" 'd["status"]')"
expect_eq "timeout: exit_code 124" 124 "$(jg "$OUT" 'd["exit_code"]')"
expect_eq "timeout: timed_out" true "$(jg "$OUT" 'd["timed_out"]')"
expect_eq "timeout: output before the kill kept" before "$(jg "$OUT" 'd["stdout"].strip()')"
expect_eq "timeout: error empty" "" "$(jg "$OUT" 'd["error"]')"
wall=$(jg "$OUT" 'd["usage"]["wall_ms"]')
if [ "$wall" -ge 1900 ] 2>/dev/null && [ "$wall" -le 20000 ]; then pass "timeout: usage.wall_ms ~2000 ($wall)"
else fail "timeout: usage.wall_ms ~2000" "wall_ms=$wall"; fi

# usage: CPU time and RSS are measured (at least ~what the child itself
# measured of its own CPU time).
wr --timeout 10 --json -- /usr/bin/python3 -c 'import time
t=time.process_time()
b=bytearray(40<<20)
while time.process_time()-t<0.3: pass
print(int(time.process_time()*1000))'
expect_eq "usage: python ran" 0 "$RC"
own=$(jg "$OUT" 'd["stdout"].strip()')
cpu=$(jg "$OUT" 'd["usage"]["cpu_user_ms"]+d["usage"]["cpu_sys_ms"]')
if [ "$cpu" -ge $((own * 3 / 4)) ] 2>/dev/null && [ "$cpu" -le 5000 ]; then pass "usage: cpu ms ($cpu) >= ~the child's own ($own)"
else fail "usage: cpu ms >= ~the child's own" "cpu_user+sys=$cpu, child measured $own ms"; fi
rss=$(jg "$OUT" 'd["usage"]["max_rss_kb"]')
if [ "$rss" -ge 40000 ] 2>/dev/null && [ "$rss" -le 1000000 ]; then pass "usage: max_rss_kb sees a 40 MiB buffer ($rss)"
else fail "usage: max_rss_kb sees a 40 MiB buffer" "max_rss_kb=$rss"; fi

# Output encoding: invalid UTF-8 becomes U+FFFD, valid UTF-8 is kept,
# byte counts are of the raw bytes.
wr --timeout 10 --json --shell 'printf "a\377b\n"; printf "\303\251\342\202\254\n"; printf "x\300\257y" >&2'
expect_eq "utf8: schema" ok "$(schema "$OUT")"
expect_eq "utf8: invalid byte -> U+FFFD, valid kept" "'a\\ufffdb\\n\\xe9\\u20ac\\n'" "$(jg "$OUT" 'ascii(d["stdout"])')"
expect_eq "utf8: stdout_bytes are raw bytes" 10 "$(jg "$OUT" 'd["stdout_bytes"]')"
expect_eq "utf8: overlong sequence on stderr replaced" true "$(jg "$OUT" 'd["stderr"].startswith("x\ufffd") and d["stderr"].endswith("y") and "/" not in d["stderr"]')"
# The raw stdout of ward is valid UTF-8 itself.
if printf '%s' "$OUT" | /usr/bin/python3 -c 'import sys; sys.stdin.buffer.read().decode("utf-8")' 2>/dev/null
then pass "utf8: ward's JSON output is valid UTF-8"; else fail "utf8: ward's JSON output is valid UTF-8"; fi

# Output that looks like JSON or holds quotes and control bytes stays data.
wr --timeout 10 --json --shell 'printf "\"}\\\\\n\t\001{\"status\":\"ok\"}"; exit 4'
expect_eq "escaping: schema" ok "$(schema "$OUT")"
expect_eq "escaping: stdout round-trips" true "$(jg "$OUT" 'd["stdout"] == chr(34)+"}"+chr(92)+chr(10)+chr(9)+chr(1)+"{"+chr(34)+"status"+chr(34)+":"+chr(34)+"ok"+chr(34)+"}"')"
expect_eq "escaping: status not spoofed" nonzero "$(jg "$OUT" 'd["status"]')"

# The exit status of ward equals exit_code in every case above; check one more.
wr --timeout 10 --json -- /bin/sh -c 'exit 42'
expect_eq "argv --json exit 42" "42 42" "$RC $(jg "$OUT" 'd["exit_code"]')"
