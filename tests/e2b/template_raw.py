"""tests/e2b/template_raw.py URL KEY OUTSIDE — hostile uploads to E2B's
template build API on ward serve --e2b (SPEC §19), past the SDK: a tar whose
entry climbs out ("../"), one that writes through a link out of the context,
one with an absolute path, a hard link to a host file, and a gzip that is not a tar.  Each build fails
with a reason naming the entry, and nothing lands at OUTSIDE (a path that
the entries aim at).  Then a client's templates are bounded.  Prints PASS:/FAIL: lines."""
import io, json, sys, tarfile, time, urllib.request

URL, KEY, OUTSIDE = sys.argv[1], sys.argv[2], sys.argv[3]


def call(method, path, body=None, url=None):
    data = json.dumps(body).encode() if isinstance(body, dict) else body
    r = urllib.request.Request(url or URL + path, data=data, method=method, headers={"X-API-Key": KEY})
    try:
        with urllib.request.urlopen(r, timeout=60) as f:
            t = f.read()
            return f.status, json.loads(t) if t else None
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def tgz(entries):
    b = io.BytesIO()
    with tarfile.open(fileobj=b, mode="w:gz") as t:
        for name, kind, arg in entries:
            i = tarfile.TarInfo(name)
            if kind == "file":
                i.size = len(arg)
                t.addfile(i, io.BytesIO(arg))
            elif kind == "link":
                i.type, i.linkname = tarfile.SYMTYPE, arg
                t.addfile(i)
            elif kind == "hard":
                i.type, i.linkname = tarfile.LNKTYPE, arg
                t.addfile(i)
    return b.getvalue()


def build(alias, body):
    code, t = call("POST", "/v3/templates", {"name": alias})
    tid, bid = t["templateID"], t["buildID"]
    h = ("%064x" % abs(hash(alias)))[-64:]
    code, link = call("GET", "/templates/%s/files/%s" % (tid, h))
    code, _ = call("PUT", None, body, url=link["url"])
    steps = [{"type": "COPY", "args": ["ctx", "/dst", "", ""], "force": False, "filesHash": h}]
    call("POST", "/v2/templates/%s/builds/%s" % (tid, bid), {"fromImage": "debian:stable", "steps": steps})
    for _ in range(600):
        code, st = call("GET", "/templates/%s/builds/%s/status?logsOffset=0" % (tid, bid))
        if st["status"] in ("ready", "error"):
            return st
        time.sleep(0.2)
    return st


cases = [
    ("climb", tgz([("ctx/../../../../../../.." + OUTSIDE, "file", b"planted")]), "a path out of the context"),
    ("through-link", tgz([("ctx/l", "link", OUTSIDE.rsplit("/", 1)[0]), ("ctx/l/" + OUTSIDE.rsplit("/", 1)[1], "file", b"planted")]), "cannot unpack"),
    ("absolute", tgz([(OUTSIDE, "file", b"planted")]), "a path out of the context"),
    ("hard-link", tgz([("ctx/shadow", "hard", "/etc/shadow")]), "a hard link"),
    ("not-a-tar", __import__("gzip").compress(b"just bytes, no tar"), "gzip'd tar"),
]
failed = 0
for alias, body, want in cases:
    st = build("raw-" + alias, body)
    why = (st.get("reason") or {}).get("message", "")
    ok = st["status"] == "error" and want in why
    failed += not ok
    print("%s: e2b templates raw: %s upload: the build fails (%s)%s" % ("PASS" if ok else "FAIL", alias, want, "" if ok else ": " + json.dumps(st)[:600]))
# a client's templates are bounded (16): creates end in a 429 that says so
codes = [call("POST", "/v3/templates", {"name": "cap-%d" % i}) for i in range(40)]
refused = [t for c, t in codes if c == 429]
ok = refused and "a client" in refused[0]["message"] and sum(c == 202 for c, _ in codes) < 16
failed += not ok
print("%s: e2b templates raw: a client's templates are bounded (%d made, then 429)" % ("PASS" if ok else "FAIL", sum(c == 202 for c, _ in codes)))
import os
ok = not os.path.exists(OUTSIDE)
print("%s: e2b templates raw: nothing landed at %s" % ("PASS" if ok else "FAIL", OUTSIDE))
sys.exit(1 if failed or not ok else 0)
