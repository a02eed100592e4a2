#!/usr/bin/env python3
"""bench/image.py — images as the sandbox's root (SPEC §14) in `make bench`.

One run, on one machine, interleaved:
  * importing a real image (tests/image/build-image minbase: mmdebstrap
    --variant=minbase bookworm through umoci, cached under build/image-cache/)
    into a fresh store, and the first `ward run --image` after it;
  * `ward run --image NAME -- true` against `ward run -- true` (the host's
    directories), alternately, wall time of each;
  * POST /exec of `true` on the image against on the host's directories, one
    client, alternately, on one `ward serve --pool 2 --image NAME`.
Prints a markdown section on stdout; details on stderr.

  * with WARD_BEFORE (another ward binary, e.g. a build of main), its own
    `ward run` of both kinds in the same rounds, on the same store.
Also counts the mounts a sandbox on the image sees (its /proc/self/mountinfo).

Knobs (environment): WARD (default build/ward), WARD_BEFORE (none),
BENCH_IMAGE_N (40 of each).
Needs root (an image's root is an overlayfs mount); without the image
builder's tools it prints why and exits 0.
"""
import http.client
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

WARD = os.environ.get("WARD", "build/ward")
N = int(os.environ.get("BENCH_IMAGE_N", "40"))
BEFORE = os.environ.get("WARD_BEFORE", "")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def med(v):
    return statistics.median(v) * 1000


def timed(argv, env=None):
    t = time.perf_counter()
    r = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    d = time.perf_counter() - t
    if r.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(argv), r.returncode, r.stderr.decode()[-300:]))
    return d


def du(path):
    out = subprocess.run(["du", "-sb", path], capture_output=True, text=True).stdout.split()
    return int(out[0]) if out else 0


def main():
    if os.geteuid() != 0:
        print("## Images\n\nSkipped: an image's root needs root (overlayfs).\n")
        return 0
    try:
        layout = subprocess.run([os.path.join(ROOT, "tests/image/build-image"), "minbase"], capture_output=True,
                                text=True, check=True, timeout=900).stdout.strip()
    except (subprocess.SubprocessError, OSError) as e:
        print("## Images\n\nSkipped: the minbase image could not be built here (%s).\n" % e)
        return 0
    tmp = tempfile.mkdtemp(prefix="ward-bench-image.")
    store = os.path.join(tmp, "store")
    env = dict(os.environ, WARD_IMAGE_STORE=store)
    try:
        t_import = timed([WARD, "image", "import", "bench", "oci:%s:1" % layout], env)
        size = du(os.path.join(store, "layers"))
        packed = du(layout)
        t_first = timed([WARD, "run", "--image", "bench", "--", "true"], env)
        print("import %.2f s for %d MiB unpacked (%d MiB layout); first run %.1f ms" %
              (t_import, size >> 20, packed >> 20, t_first * 1000), file=sys.stderr)
        def mounts(ward):
            r = subprocess.run([ward, "run", "--image", "bench", "--", "cat", "/proc/self/mountinfo"],
                               capture_output=True, text=True, env=env)
            return len(r.stdout.splitlines())
        n_mounts = mounts(WARD)
        n_mounts_before = mounts(BEFORE) if BEFORE else 0
        host, image, b_host, b_image = [], [], [], []
        for _ in range(N):
            host.append(timed([WARD, "run", "--", "true"], env))
            image.append(timed([WARD, "run", "--image", "bench", "--", "true"], env))
            if BEFORE:
                b_host.append(timed([BEFORE, "run", "--", "true"], env))
                b_image.append(timed([BEFORE, "run", "--image", "bench", "--", "true"], env))
        # the server: one with a pool, both kinds of request alternately
        log = os.path.join(tmp, "serve.log")
        srv = subprocess.Popen([WARD, "serve", "--listen", "127.0.0.1:0", "--pool", "2", "--image", "bench",
                                "--image-store", store, "--log", log], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
        port = None
        for _ in range(200):
            time.sleep(0.05)
            try:
                for line in open(log):
                    if '"listening"' in line or "listening" in line:
                        d = json.loads(line)
                        port = int(str(d.get("message", d.get("msg", ""))).split()[0].rsplit(":", 1)[1])
                        break
            except (OSError, ValueError, IndexError, KeyError):
                pass
            if port:
                break
        ex_host, ex_image = [], []
        if port:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

            def post(body):
                t = time.perf_counter()
                c.request("POST", "/exec", body=json.dumps(body))
                r = c.getresponse()
                data = r.read()
                d = time.perf_counter() - t
                if r.status != 200 or json.loads(data).get("status") != "ok":
                    raise RuntimeError("POST /exec: %d %s" % (r.status, data[:300]))
                time.sleep(0.03)  # the pool refills between requests
                return d
            for _ in range(5):
                post({"argv": ["true"]})
                post({"argv": ["true"], "image": "bench"})
            for _ in range(N):
                ex_host.append(post({"argv": ["true"]}))
                ex_image.append(post({"argv": ["true"], "image": "bench"}))
        srv.terminate()
        srv.wait(timeout=60)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("## Images (SPEC §14)\n")
    print("An image's root is its layers merged read-only with overlayfs once (a detached mount), the store's "
          "layer of mount points on top, and bound whole as each sandbox's root; ward's generated `/etc` files, "
          "`/dev`, `/proc`, `/tmp` and `/work` are mounted on the points that layer holds. Image: mmdebstrap "
          "`--variant=minbase` bookworm through umoci, %d MiB unpacked. Medians of %d, alternated.\n" %
          (size >> 20, N))
    print("| measure | host's directories | on the image | ratio |")
    print("| --- | --- | --- | --- |")
    print("| `ward run -- true`, wall | %.2f ms | %.2f ms | %.2fx |" % (med(host), med(image), med(image) / med(host)))
    if ex_host:
        print("| `POST /exec` of `true`, one client, `--pool 2` | %.2f ms | %.2f ms | %.2fx |" %
              (med(ex_host), med(ex_image), med(ex_image) / med(ex_host)))
    if BEFORE:
        print("| before (WARD_BEFORE): `ward run -- true`, wall | %.2f ms | %.2f ms | %.2fx |" %
              (med(b_host), med(b_image), med(b_image) / med(b_host)))
    print("\nMounts a sandbox on the image sees (its /proc/self/mountinfo): %d%s." %
          (n_mounts, " (before: %d)" % n_mounts_before if BEFORE else ""))
    print("\nImporting it (`ward image import` from an OCI layout of %d MiB, sha256 checked, unpacked): "
          "%.2f s; the first `ward run --image` after it: %.1f ms.\n" % (packed >> 20, t_import, t_first * 1000))
    return 0


if __name__ == "__main__":
    sys.exit(main())
