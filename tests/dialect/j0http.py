"""One Judge0 call for the tests/dialect scripts: call(BASE, METHOD, PATH,
BODY, TOKEN) -> (status, parsed JSON or text).  TOKEN goes as X-Auth-Token."""
import json, urllib.request, urllib.error


def call(base, method, path, body=None, token=None):
    h = {"Content-Type": "application/json"}
    if token:
        h["X-Auth-Token"] = token
    req = urllib.request.Request(base + path, data=json.dumps(body).encode() if body is not None else None,
                                 method=method, headers=h)
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        raw = e.read()
        try:
            return e.code, json.loads(raw)
        except ValueError:
            return e.code, raw.decode(errors="replace")
