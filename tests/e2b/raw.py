"""tests/e2b/raw.py — helpers of the raw-HTTP E2B checks in tests/e2b/*.sh
(imported with PYTHONPATH=tests/e2b): PASS:/FAIL: lines, a sandbox made
over the control plane, a command started in it, a native /metrics
figure.  Every call bounded by its timeout."""
import json, struct, urllib.request

KEY = "sekrit-alice-0123456789"


def checker(prefix):
    def ok(name, cond, why=""):
        print(("PASS: " if cond else "FAIL: ") + prefix + ": " + name + ("" if cond else ": " + str(why)), flush=True)
    return ok


def create(url, timeout_s=120):
    r = urllib.request.Request(url + "/v2/sandboxes", data=json.dumps({"timeout": timeout_s}).encode(),
                               headers={"X-API-KEY": KEY, "Content-Type": "application/json"})
    return json.loads(urllib.request.urlopen(r, timeout=60).read())


def data_plane(sb):
    return {"E2b-Sandbox-Id": sb["sandboxID"], "X-Access-Token": sb["envdAccessToken"]}


def envelope(msg):
    m = json.dumps(msg).encode()
    return b"\0" + struct.pack(">I", len(m)) + m


def run(url, sb, cmd):
    """cmd run by /bin/sh in sb, to its end (its stream read whole)"""
    body = envelope({"process": {"cmd": "/bin/sh", "args": ["-c", cmd]}})
    h = dict(data_plane(sb), **{"Content-Type": "application/connect+json", "Connect-Protocol-Version": "1"})
    urllib.request.urlopen(urllib.request.Request(url + "/process.Process/Start", data=body, headers=h), timeout=60).read()


def metric(native, name):
    r = urllib.request.Request(native + "/metrics", headers={"Authorization": "Bearer " + KEY})
    for line in urllib.request.urlopen(r, timeout=10).read().decode().splitlines():
        if line.split(" ")[0] == name:
            return int(float(line.split()[1]))
    return -1
