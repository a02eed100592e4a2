#!/usr/bin/env python3
"""bench/stream.py — streamed answers (SPEC §12) in `make bench` (run by bench/run, or alone).

One server, one run, interleaved:
  * time to first byte of the program's output for a program that prints a
    line at once and then runs 2 s: POST /exec with Accept: application/x-ndjson
    (the line's event) against the plain answer (which can only come at the end);
  * requests per second of POST /exec of `true`, one client, keep-alive, with
    and without streaming, in alternating rounds.
Prints a markdown section on stdout; details on stderr.

Knobs (environment): WARD (default build/ward), BENCH_STREAM_TTFB (5 requests
of each kind), BENCH_STREAM_SECS (2 s per throughput round; 3 rounds of each).
"""
import http.client
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

WARD = os.environ.get("WARD", "build/ward")
TTFB_N = int(os.environ.get("BENCH_STREAM_TTFB", "5"))
SECS = float(os.environ.get("BENCH_STREAM_SECS", "2"))
ROUNDS = 3
ND = {"Content-Type": "application/json", "Accept": "application/x-ndjson"}
PLAIN = {"Content-Type": "application/json"}


def start_server(tmp):
    log = os.path.join(tmp, "stream.log")
    open(log, "w").close()
    p = subprocess.Popen([WARD, "serve", "--listen", "127.0.0.1:0", "--log", log, "--max-concurrent", "2"],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(400):
        m = re.search(r'"event":"listening","message":"([^ ]*) ', open(log).read())
        if m:
            host, port = m.group(1).rsplit(":", 1)
            return p, host, int(port)
        if p.poll() is not None:
            break
        time.sleep(0.05)
    sys.exit("bench/stream.py: ward serve did not start (%s)" % open(log).read()[-300:])


def first_output_s(host, port, streamed):
    """Seconds from sending the request to holding the program's first line."""
    c = http.client.HTTPConnection(host, port, timeout=60)
    body = json.dumps({"command": "echo first; sleep 2; echo done"})
    t0 = time.perf_counter()
    c.request("POST", "/exec", body=body, headers=ND if streamed else PLAIN)
    r = c.getresponse()
    first = None
    if streamed:
        for line in r:
            if first is None and b'"data":"first\\n"' in line:
                first = time.perf_counter() - t0
    else:
        d = json.loads(r.read())
        if d.get("stdout", "").startswith("first"):
            first = time.perf_counter() - t0
    c.close()
    if first is None:
        sys.exit("bench/stream.py: no first line (streamed=%s)" % streamed)
    return first


def rps(host, port, streamed, secs):
    c = http.client.HTTPConnection(host, port, timeout=60)
    body = json.dumps({"command": "true"})
    n = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < secs:
        c.request("POST", "/exec", body=body, headers=ND if streamed else PLAIN)
        r = c.getresponse()
        data = r.read()
        if r.status != 200 or b'"status":"ok"' not in data:
            sys.exit("bench/stream.py: POST /exec answered %d: %r" % (r.status, data[:200]))
        n += 1
    dt = time.perf_counter() - t0
    c.close()
    return n / dt


def main():
    with tempfile.TemporaryDirectory(prefix="ward-bench-stream.") as tmp:
        p, host, port = start_server(tmp)
        try:
            first_output_s(host, port, True)  # warm up
            ttfb = {True: [], False: []}
            for _ in range(TTFB_N):
                for s in (True, False):
                    ttfb[s].append(first_output_s(host, port, s))
            thr = {True: [], False: []}
            for _ in range(ROUNDS):
                for s in (False, True):
                    thr[s].append(rps(host, port, s, SECS))
        finally:
            p.terminate()
            p.wait(30)
    print("ttfb streamed %r plain %r; req/s streamed %r plain %r" % (ttfb[True], ttfb[False], thr[True], thr[False]),
          file=sys.stderr)
    print("## Streaming (SPEC §12)\n")
    print("bench/stream.py: one server (--max-concurrent 2), one client, interleaved.\n")
    print("| measure | streamed (Accept: application/x-ndjson) | plain answer |")
    print("| --- | ---: | ---: |")
    print("| first line of `echo first; sleep 2; echo done`, median of %d | %.0f ms | %.0f ms |"
          % (TTFB_N, statistics.median(ttfb[True]) * 1000, statistics.median(ttfb[False]) * 1000))
    print("| POST /exec of `true`, one client, keep-alive, median of %d rounds of %g s | %.0f req/s | %.0f req/s |"
          % (ROUNDS, SECS, statistics.median(thr[True]), statistics.median(thr[False])))


if __name__ == "__main__":
    main()
