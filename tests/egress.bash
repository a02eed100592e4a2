# tests/egress.bash — sourced by tests/e2e/egress.sh and tests/serve/egress.sh
# (not a test itself): the local upstreams a sandbox reaches through ward's
# egress proxy, all on 127.0.0.1 port 0, under a directory the caller made
# and removes.  egress_fixture DIR sets EG_HTTP, EG_HTTPS, EG_SLOW, EG_UDP
# (ports) and EG_PID (the servers' python, which the caller kills by pid).

# A wheel is a zip with NAME-VER.dist-info/{METADATA,WHEEL,RECORD}.
_egress_wheel() { # DIR
	/usr/bin/python3 - "$1" <<'PY'
import base64, hashlib, os, sys, zipfile
d = sys.argv[1]
files = {
    "wardpkg/__init__.py": b"VALUE = 42\n",
    "wardpkg-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: wardpkg\nVersion: 1.0\n",
    "wardpkg-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: ward-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
def h(b):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b"=").decode()
record = "".join("%s,%s,%d\n" % (k, h(v), len(v)) for k, v in files.items()) + "wardpkg-1.0.dist-info/RECORD,,\n"
os.makedirs(d + "/wheels", exist_ok=True)
whl = d + "/wheels/wardpkg-1.0-py3-none-any.whl"
with zipfile.ZipFile(whl, "w") as z:
    for k, v in files.items():
        z.writestr(k, v)
    z.writestr("wardpkg-1.0.dist-info/RECORD", record)
digest = hashlib.sha256(open(whl, "rb").read()).hexdigest()
os.makedirs(d + "/simple/wardpkg", exist_ok=True)
open(d + "/simple/index.html", "w").write('<html><body><a href="wardpkg/">wardpkg</a></body></html>\n')
open(d + "/simple/wardpkg/index.html", "w").write(
    '<html><body><a href="../../wheels/wardpkg-1.0-py3-none-any.whl#sha256=%s">'
    'wardpkg-1.0-py3-none-any.whl</a></body></html>\n' % digest)
PY
}

# A "dumb" http git repository: a bare repo with update-server-info.
_egress_git() { # DIR
	local src=$1/src
	mkdir -p "$src"
	git -C "$src" init -q
	echo egress-git-ok >"$src/README"
	git -C "$src" add README
	git -C "$src" -c user.name=t -c user.email=t@t commit -qm one
	git clone -q --bare "$src" "$1/www/repo.git"
	git -C "$1/www/repo.git" update-server-info
	rm -rf "$src"
}

egress_fixture() { # DIR
	local d=$1
	mkdir -p "$d/www"
	echo hello >"$d/www/hi.txt"
	head -c $((4 << 20)) /dev/zero >"$d/www/big.bin"
	_egress_wheel "$d/www" || return 1
	_egress_git "$d" || return 1
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=tls.test -keyout "$d/key.pem" \
		-out "$d/cert.pem" >/dev/null 2>&1 || return 1
	/usr/bin/python3 "$ROOT/tests/e2e/egress_servers.py" "$d/www" "$d/cert.pem" "$d/key.pem" >"$d/ports" 2>"$d/servers.err" &
	EG_PID=$!
	local _
	for _ in $(seq 100); do [ -s "$d/ports" ] && break; sleep 0.1; done
	read -r EG_HTTP EG_HTTPS EG_SLOW EG_UDP <"$d/ports" || return 1
	[ -n "$EG_UDP" ]
}

# egress_fixture_served DIR — for a script on tests/serve/lib.bash: the
# upstreams of egress_fixture, killed at the end beside its servers; 1
# (with a FAIL) when they do not start.
egress_fixture_served() {
	EG_PID=
	trap '[ -n "$EG_PID" ] && kill "$EG_PID" 2>/dev/null; _serve_cleanup' EXIT
	egress_fixture "$1" && return 0
	fail "egress: local upstreams start" "$(head -5 "$1/servers.err" 2>/dev/null)"
	return 1
}

# egress_json FILE EXPR — a python expression over the result object r.
egress_json() {
	/usr/bin/python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2" 2>&1
}
