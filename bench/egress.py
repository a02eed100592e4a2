#!/usr/bin/env python3
"""bench/egress.py — egress through ward's proxy (SPEC §13) in `make bench` (run by
bench/run, or alone).

One run, on one machine, interleaved:
  * throughput of a download (BENCH_EGRESS_MB, default 100 MiB) from a local HTTP
    server on 127.0.0.1, by curl inside a sandbox through the proxy (a pinned
    name) against the same curl on the host; curl's own time_total, so the
    sandbox's start-up is not in it; the ratio is proxy / host throughput;
  * the same download by curl on the host through tinyproxy and squid (from the
    distribution, forward proxies on 127.0.0.1, when installed): their throughput
    and CPU per MiB (their processes' CPU from /proc) beside ward's proxy's;
  * start-up of `ward run -- /bin/true` with --net allow (PID 1 makes the proxy's
    socket, ward starts its thread) against --net none.
Prints a markdown section on stdout; details on stderr.

The proxy's CPU per MiB is the result's usage.proxy_cpu_ms (the proxy thread's
CPU time, ward's) over the download's size, the sandbox's is curl's (cpu_user_ms +
cpu_sys_ms): the kernel's work for the bytes falls on both, and a change to the
proxy can move it from one to the other.  With WARD_BEFORE (another ward binary), its
downloads are interleaved with the others' and reported beside them.

Knobs (environment): WARD (default build/ward), WARD_BEFORE (none), BENCH_EGRESS_MB
(100), BENCH_EGRESS_N (5 downloads of each kind), BENCH_EGRESS_STARTS (40 starts of
each).
"""
import json
import http.server
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from procstat import tree_cpu_ms

WARD = os.path.abspath(os.environ.get("WARD", "build/ward"))
MB = int(os.environ.get("BENCH_EGRESS_MB", "100"))
N = int(os.environ.get("BENCH_EGRESS_N", "5"))
STARTS = int(os.environ.get("BENCH_EGRESS_STARTS", "40"))
BEFORE = os.environ.get("WARD_BEFORE", "")
BEFORE = os.path.abspath(BEFORE) if BEFORE and os.access(BEFORE, os.X_OK) else ""
PEERS = ("tinyproxy", "squid")  # forward proxies from the distribution, rows when installed


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a):
        pass


def serve(root):
    os.chdir(root)
    s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    s.daemon_threads = True
    threading.Thread(target=s.serve_forever, daemon=True).start()
    return s.server_address[1]


def host_download(port):
    out = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{time_total}", "http://127.0.0.1:%d/big" % port],
                         capture_output=True, text=True, check=True)
    return float(out.stdout)


def proxy_download(port, ward=WARD):
    """curl's time_total through ward's proxy, the proxy's CPU and the sandbox's (ms)."""
    cmd = [ward, "run", "--json", "--net", "allow", "--allow-host", "big.test:%d" % port, "--egress-resolve",
           "big.test:127.0.0.1", "--egress-bytes", str((MB + 16) << 20), "--timeout", "120", "--", "curl", "-s",
           "-o", "/dev/null", "-w", "%{time_total} %{size_download}", "http://big.test:%d/big" % port]
    out = subprocess.run(cmd, capture_output=True, text=True)
    try:
        r = json.loads(out.stdout)
        t, size = r["stdout"].split()
    except (ValueError, KeyError):
        raise SystemExit("bench/egress.py: no result from %s: %s" % (ward, (out.stdout + out.stderr)[-300:]))
    if int(size) != MB << 20:
        raise SystemExit("bench/egress.py: the download through the proxy got %s bytes of %d: %s" %
                         (size, MB << 20, r.get("stderr", "")[-300:]))
    u = r["usage"]
    return float(t), float(u.get("proxy_cpu_ms", 0)), float(u.get("cpu_user_ms", 0) + u.get("cpu_sys_ms", 0))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def peer_start(kind, d):
    """tinyproxy or squid from the distribution as a forward proxy on 127.0.0.1, in the foreground;
    (process, port) or None when it is not installed or does not start."""
    exe = shutil.which(kind) or shutil.which(kind, path="/usr/sbin:/usr/local/sbin")
    if not exe:
        return None
    port = free_port()
    w = os.path.join(d, kind)
    os.mkdir(w)
    os.chmod(w, 0o777)  # both drop root to a user of their own
    conf = os.path.join(w, "conf")
    if kind == "tinyproxy":
        text = ("User nobody\nGroup nogroup\nPort %d\nListen 127.0.0.1\nTimeout 600\nMaxClients 16\n"
                "Allow 127.0.0.1\nDisableViaHeader Yes\nLogLevel Critical\nPidFile \"%s/pid\"\n" % (port, w))
        argv = [exe, "-d", "-c", conf]
    else:
        text = ("http_port 127.0.0.1:%d\nhttp_access allow all\ncache deny all\ncache_mem 8 MB\n"
                "access_log none\ncache_log %s/cache.log\npid_filename %s/pid\ncoredump_dir %s\n"
                "shutdown_lifetime 0 seconds\n" % (port, w, w, w))
        argv = [exe, "-N", "-f", conf]
    with open(conf, "w") as f:
        f.write(text)
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return p, port
        except OSError:
            if p.poll() is not None:
                return None
            time.sleep(0.05)
    p.terminate()
    p.wait()
    return None


def peer_download(port, peer):
    """curl's time_total on the host through a peer proxy, and the proxy's CPU (ms)."""
    c0 = tree_cpu_ms(peer[0].pid)
    out = subprocess.run(["curl", "-s", "-x", "http://127.0.0.1:%d" % peer[1], "-o", "/dev/null", "-w",
                          "%{time_total} %{size_download}", "http://127.0.0.1:%d/big" % port],
                         capture_output=True, text=True)
    t, size = out.stdout.split()
    if int(size) != MB << 20:
        raise SystemExit("bench/egress.py: the download through a peer proxy got %s bytes of %d" % (size, MB << 20))
    return float(t), tree_cpu_ms(peer[0].pid) - c0


def start(net):
    cmd = [WARD, "run", "--net", net] + (["--allow-host", "bench.invalid"] if net == "allow" else []) + \
          ["--", "/bin/true"]
    t = time.perf_counter()
    subprocess.run(cmd, check=True)
    return (time.perf_counter() - t) * 1000


def main():
    with tempfile.TemporaryDirectory(prefix="ward-bench-egress.") as d:
        with open(os.path.join(d, "big"), "wb") as f:
            f.truncate(MB << 20)
        port = serve(d)
        host_download(port)  # warm the page cache and the server
        peers = {}
        for kind in PEERS:
            pr = peer_start(kind, d)
            if pr:
                peers[kind] = pr
                peer_download(port, pr)  # warm
        host, proxy, before = [], [], []
        via = {k: [] for k in peers}
        try:
            for _ in range(N):
                host.append(host_download(port))
                proxy.append(proxy_download(port))
                if BEFORE:
                    before.append(proxy_download(port, BEFORE))
                for k, pr in peers.items():
                    via[k].append(peer_download(port, pr))
        finally:
            for pr in peers.values():
                pr[0].terminate()
                pr[0].wait()
        for net in ("none", "allow"):
            start(net)
        none, allow = [], []
        for _ in range(STARTS):
            none.append(start("none"))
            allow.append(start("allow"))
    mh, mp = statistics.median(host), statistics.median(t for t, _, _ in proxy)
    cpu = statistics.median(ms for _, ms, _ in proxy) / MB
    inside = statistics.median(ms for _, _, ms in proxy) / MB
    rate = lambda s: MB / s  # MiB/s
    print("## Egress (`--net allow`): the proxy's throughput and start-up cost\n")
    print("bench/egress.py: a %d MiB download from a local HTTP server on 127.0.0.1 (Python's http.server), "
          "curl's time_total, median of %d each, interleaved; and `ward run -- /bin/true`, median of %d "
          "each.\n" % (MB, N, STARTS))
    print("| what | figure |\n| --- | --- |")
    print("| host curl | %.0f MiB/s (%.3f s) |" % (rate(mh), mh))
    print("| curl in a sandbox through ward's proxy | %.0f MiB/s (%.3f s) |" % (rate(mp), mp))
    print("| proxy / host throughput | %.2fx (goal >= 0.9x) |" % (mh / mp))
    print("| the proxy's CPU per MiB (usage.proxy_cpu_ms) | %.3f ms |" % cpu)
    print("| the sandbox's CPU per MiB (curl: usage.cpu_user_ms + cpu_sys_ms) | %.3f ms |" % inside)
    if before:
        mb = statistics.median(t for t, _, _ in before)
        print("| before (WARD_BEFORE): through its proxy | %.0f MiB/s (%.3f s), %.2fx the host's |" %
              (rate(mb), mb, mh / mb))
        print("| before: its proxy's CPU per MiB | %.3f ms |" % (statistics.median(ms for _, ms, _ in before) / MB))
        print("| before: the sandbox's CPU per MiB | %.3f ms |" % (statistics.median(ms for _, _, ms in before) / MB))
    for k in PEERS:
        if k not in via:
            print("| %s | not installed here (Debian: apt-get install %s) |" % (k, "tinyproxy-bin" if k == "tinyproxy" else k))
            continue
        mt = statistics.median(t for t, _ in via[k])
        mc = statistics.median(c for _, c in via[k]) / MB
        print("| host curl through %s (its own process, from the distribution) | %.0f MiB/s (%.3f s); ward's proxy "
              "%.2fx its throughput |" % (k, rate(mt), mt, mt / mp))
        print("| %s's CPU per MiB (/proc, 10 ms ticks) | %.3f ms; ward's proxy uses %.2fx its CPU per MiB |" % (k, mc, cpu / mc if mc else 0))
    print("| start-up, --net none | %.2f ms |" % statistics.median(none))
    print("| start-up, --net allow | %.2f ms |" % statistics.median(allow))
    print("| start-up cost of allow | %+.2f ms (goal <= +1 ms) |" %
          (statistics.median(allow) - statistics.median(none)))
    print("host %s proxy %s before %s" % (host, proxy, before), file=sys.stderr)


if __name__ == "__main__":
    main()
