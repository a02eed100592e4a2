"""tests/image/flatten.py — an image's files as one table, to compare two
builders' results (tests/image/build_docker.sh).

    flatten.py oci DIR REF [LAYER.tar...]   # an OCI layout's layers, then more layers on top
    flatten.py tar FILE                     # a flat root (docker export)

prints, sorted, one line a path: type, mode, uid:gid, and a file's sha256
or a link's target.  Whiteouts (.wh.NAME, .wh..wh..opq) are applied; mtimes
are left out; so are the files a container runtime puts in every root
(/.dockerenv, /etc/hosts, /etc/hostname, /etc/resolv.conf, /etc/mtab,
/dev, /proc, /sys)."""
import hashlib
import json
import os
import sys
import tarfile

SKIP = {".dockerenv", "etc/hosts", "etc/hostname", "etc/resolv.conf", "etc/mtab"}
SKIP_UNDER = ("dev/", "proc/", "sys/")


def norm(name):
    while name.startswith("./") or name.startswith("/"):
        name = name[1:] if name.startswith("/") else name[2:]
    return "" if name == "." else name.rstrip("/")


def apply(tree, tf):
    for m in tf:
        name = norm(m.name)
        if not name:
            continue
        d, b = os.path.split(name)
        if b == ".wh..wh..opq":
            pre = d + "/"
            for k in [k for k in tree if k.startswith(pre)]:
                del tree[k]
            continue
        if b.startswith(".wh."):
            gone = os.path.join(d, b[4:])
            for k in [k for k in tree if k == gone or k.startswith(gone + "/")]:
                del tree[k]
            continue
        if m.isdir():
            row = ("dir", m.mode & 0o7777, m.uid, m.gid, "")
        elif m.issym():
            row = ("sym", 0, m.uid, m.gid, m.linkname)
        elif m.islnk():
            row = tree.get(norm(m.linkname), ("file", m.mode & 0o7777, m.uid, m.gid, "?"))
        elif m.isreg():
            h = hashlib.sha256(tf.extractfile(m).read()).hexdigest()[:16]
            row = ("file", m.mode & 0o7777, m.uid, m.gid, h)
        else:
            continue
        if name in tree and tree[name][0] == "dir" and row[0] != "dir":
            for k in [k for k in tree if k.startswith(name + "/")]:
                del tree[k]
        tree[name] = row


def oci_layers(layout, ref):
    idx = json.load(open(os.path.join(layout, "index.json")))
    m = [x for x in idx["manifests"] if x.get("annotations", {}).get("org.opencontainers.image.ref.name") == ref][0]
    blob = lambda d: os.path.join(layout, "blobs", "sha256", d.split(":")[1])
    man = json.load(open(blob(m["digest"])))
    return [blob(l["digest"]) for l in man["layers"]]


def main():
    tree = {}
    if sys.argv[1] == "oci":
        for p in oci_layers(sys.argv[2], sys.argv[3]) + sys.argv[4:]:
            with tarfile.open(p) as tf:
                apply(tree, tf)
    else:
        with tarfile.open(sys.argv[2]) as tf:
            apply(tree, tf)
    for k in sorted(tree):
        if k in SKIP or (k + "/").startswith(SKIP_UNDER):
            continue
        t, mode, u, g, x = tree[k]
        print("%s %s %o %d:%d %s" % (k, t, mode, u, g, x))


main()
