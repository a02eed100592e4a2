#!/usr/bin/python3
"""oci.py — OCI image layouts for tests/image/, hostile ones included.

    oci.py layout OUT [--ref R] [--gzip] [--bad-blob|--bad-diff|--bad-config|--bad-manifest] TAR...
        wraps TARs (uncompressed layer tars, bottom first) into an OCI layout at OUT
    oci.py case NAME OUT [ARG]
        writes the layer tar(s) of a hostile case and wraps them: see CASES
    oci.py bomb OUT SIZE_MB
        a gzip bomb: one file of SIZE_MB MiB of zeros, gzip'd, as a layout
    oci.py random OUT SIZE_MB
        one layer holding SIZE_MB MiB of random (incompressible) bytes
    oci.py tar OUT.tar NAME=CONTENT...
        a plain tar of small files (for rootfs:)

The digests are real (sha256 of each blob, diff_ids of the uncompressed
tars), unless a --bad-* flag spoils one on purpose.
"""
import gzip
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile


def sha(b):
    return hashlib.sha256(b).hexdigest()


def blob(out, data):
    d = sha(data)
    os.makedirs(os.path.join(out, "blobs", "sha256"), exist_ok=True)
    with open(os.path.join(out, "blobs", "sha256", d), "wb") as f:
        f.write(data)
    return d


def layout(out, tars, ref="latest", gz=False, bad=None, diff_ids=None, raw_layers=None):
    """tars: list of uncompressed tar bytes.  raw_layers: (blob bytes, diff_id) pairs used as they are."""
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "oci-layout"), "w") as f:
        json.dump({"imageLayoutVersion": "1.0.0"}, f)
    layers, ids = [], []
    pairs = raw_layers or []
    for t in tars:
        pairs.append((gzip.compress(t, 1) if gz else t, sha(t)))
    for data, diff in pairs:
        if bad == "blob":
            d = blob(out, data)
            # the blob's file holds other bytes than its name says
            with open(os.path.join(out, "blobs", "sha256", d), "ab") as f:
                f.write(b"\0" * 1024)
        else:
            d = blob(out, data)
        layers.append({"mediaType": "application/vnd.oci.image.layer.v1.tar" + ("+gzip" if gz or data[:2] == b"\x1f\x8b" else ""),
                       "digest": "sha256:" + d, "size": len(data)})
        ids.append("sha256:" + ("0" * 64 if bad == "diff" else diff))
    cfg = {"created": "2024-01-02T03:04:05Z", "architecture": "amd64", "os": "linux",
           "config": {"Env": ["PATH=/usr/bin:/bin", "LANG=C.UTF-8"], "Cmd": ["/bin/sh"],
                      "WorkingDir": "/nonexistent/../etc", "User": "0:0", "Volumes": {"/host": {}}},
           "rootfs": {"type": "layers", "diff_ids": diff_ids or ids}}
    cb = json.dumps(cfg).encode()
    cd = blob(out, cb)
    if bad == "config":
        with open(os.path.join(out, "blobs", "sha256", cd), "wb") as f:
            f.write(cb.replace(b"C.UTF-8", b"C.UTF-9"))
    m = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
         "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": "sha256:" + cd, "size": len(cb)},
         "layers": layers}
    mb = json.dumps(m).encode()
    md = blob(out, mb)
    if bad == "manifest":
        with open(os.path.join(out, "blobs", "sha256", md), "wb") as f:
            f.write(mb + b" ")
    idx = {"schemaVersion": 2, "manifests": [
        {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": "sha256:" + md, "size": len(mb),
         "annotations": {"org.opencontainers.image.ref.name": ref}}]}
    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump(idx, f)
    return md


class T:
    """A tar built entry by entry."""

    def __init__(self, fmt=tarfile.PAX_FORMAT):
        self.buf = io.BytesIO()
        self.t = tarfile.open(fileobj=self.buf, mode="w", format=fmt)

    def _info(self, name, type_, mode=0o644, **kw):
        i = tarfile.TarInfo(name)
        i.type = type_
        i.mode = mode
        i.mtime = 1700000000
        for k, v in kw.items():
            setattr(i, k, v)
        return i

    def file(self, name, data=b"x", mode=0o644, pax=None):
        i = self._info(name, tarfile.REGTYPE, mode)
        i.size = len(data)
        if pax:
            i.pax_headers = pax
        self.t.addfile(i, io.BytesIO(data))
        return self

    def dir(self, name, mode=0o755, pax=None):
        i = self._info(name, tarfile.DIRTYPE, mode)
        if pax:
            i.pax_headers = pax
        self.t.addfile(i)
        return self

    def symlink(self, name, target):
        self.t.addfile(self._info(name, tarfile.SYMTYPE, 0o777, linkname=target))
        return self

    def hardlink(self, name, target):
        self.t.addfile(self._info(name, tarfile.LNKTYPE, 0o644, linkname=target))
        return self

    def dev(self, name, type_, major=0, minor=0, mode=0o666):
        self.t.addfile(self._info(name, type_, mode, devmajor=major, devminor=minor))
        return self

    def bytes(self):
        self.t.close()
        return self.buf.getvalue()


def case(name, arg):
    """The layers of hostile case NAME; arg is a host path the case aims at."""
    a = arg or "/tmp/ward-image-target"
    if name == "absolute":
        return [T().file(a + "/abs", b"abs").bytes()]
    if name == "dotdot":
        return [T().file("ok", b"ok").file("../../../../../../.." + a + "/dotdot", b"x").bytes()]
    if name == "symlink-parent":
        return [T().symlink("evil", a).file("evil/pwned", b"x").bytes()]
    if name == "symlink-parent-relative":
        return [T().dir("d").symlink("d/up", "../../../../../../../.." + a).file("d/up/pwned", b"x").bytes()]
    if name == "symlink-dot":  # umoci CVE-2021-29136: a symlink named "."
        return [T().symlink(".", a).file("pwned", b"x").bytes()]
    if name == "symlink-replaced":  # a symlink, then a file of the same name
        return [T().symlink("s", a + "/replaced").file("s", b"mine").bytes()]
    if name == "hardlink-passwd":
        return [T().hardlink("pw", "/etc/passwd").bytes()]
    if name == "hardlink-own-passwd":  # /etc/passwd of the layer itself: fine
        return [T().dir("etc").file("etc/passwd", b"root:x:0:0::/:/bin/sh\n").hardlink("pw", "/etc/passwd").bytes()]
    if name == "hardlink-dotdot":
        return [T().hardlink("x", "../../x").bytes()]
    if name == "hardlink-via-symlink":
        return [T().symlink("s", "/etc").hardlink("h", "s/passwd").bytes()]
    if name == "longname":
        return [T().file("a" * 5000, b"x").bytes()]
    if name == "longpart":
        return [T().file("d/" + "b" * 300, b"x").bytes()]
    if name == "nul":
        return [T().file("ok", b"x", pax={"path": "nul\0/../../../../.." + a + "/nul"}).bytes()]
    if name == "devices":
        return [T().dev("null", tarfile.CHRTYPE, 1, 3).dev("sda", tarfile.BLKTYPE, 8, 0)
                .dev("fifo", tarfile.FIFOTYPE, mode=0o4666).dev("wh0", tarfile.CHRTYPE, 0, 0).file("kept", b"k").bytes()]
    if name == "modes":
        return [T().file("suid", b"#!/bin/sh\n", 0o6755).dir("sgid", 0o2775).dir("tmp", 0o1777)
                .file("plain", b"p", 0o640).bytes()]
    if name == "xattrs":
        cap = "\x01\x00\x00\x02\xff\xff\xff\xff\x00\x00\x00\x00\xff\xff\xff\xff\x00\x00\x00\x00"
        return [T().file("capfile", b"c", 0o755, pax={"SCHILY.xattr.security.capability": cap,
                                                      "SCHILY.xattr.user.note": "x"})
                .dir("od", pax={"SCHILY.xattr.trusted.overlay.opaque": "y",
                                "SCHILY.xattr.trusted.overlay.redirect": "/etc"}).bytes()]
    if name == "whiteouts":
        l1 = T().dir("a").file("a/f1", b"1").file("a/f2", b"2").dir("b").file("b/g", b"g").file("c", b"c") \
            .dir("d").file("d/keep", b"k").bytes()
        l2 = T().file("a/.wh.f1", b"").file(".wh.c", b"").file("b/.wh..wh..opq", b"").file("b/h", b"h") \
            .file("d/.wh.same", b"").file("d/same", b"same-layer").bytes()
        l3 = T().file("a/f1", b"new").file(".wh.b", b"").bytes()
        return [l1, l2, l3]
    if name == "dir-replaced":
        return [T().dir("d").file("d/x", b"x").symlink("d", a).bytes()]
    if name == "many":  # 300 entries
        t = T()
        for i in range(300):
            t.file("f%d" % i, b"")
        return [t.bytes()]
    if name == "restated":  # one directory, stated 300 times: one inode, 300 entries' work
        t = T()
        for i in range(300):
            t.dir("d")
        return [t.bytes()]
    if name == "sparse":  # GNU tar's sparse file: 64 MiB long, 8 bytes of data
        return [sparse_tar(64 << 20)]
    if name == "three":
        return [T().file("l%d" % i, b"%d" % i).bytes() for i in range(3)]
    if name == "good":
        return [T().dir("bin").file("bin/hello", b"#!/bin/sh\necho hello\n", 0o755).symlink("bin/hi", "hello")
                .hardlink("bin/hello2", "bin/hello").dir("etc").file("etc/os-release", b"ID=ward-test\n").bytes(),
                T().file("etc/motd", b"layer two\n").bytes()]
    raise SystemExit("unknown case " + name)


def sparse_tar(size):
    """A GNU-format tar (made by GNU tar --sparse) of one file of size bytes,
    "head" at its start and "tail" at its end, holes between."""
    d = tempfile.mkdtemp()
    try:
        with open(os.path.join(d, "sparse"), "wb") as f:
            f.write(b"head")
            f.seek(size - 4)
            f.write(b"tail")
        return subprocess.run(["tar", "--sparse", "--format=gnu", "--owner=0", "--group=0", "-cf", "-", "-C", d,
                               "sparse"], check=True, stdout=subprocess.PIPE).stdout
    finally:
        shutil.rmtree(d)


def bomb(out, mb):
    """A tar of one file of mb MiB of zeros, gzip'd, streamed (never all in memory)."""
    h = hashlib.sha256()
    gz_buf = io.BytesIO()
    z = gzip.GzipFile(fileobj=gz_buf, mode="wb", compresslevel=9, mtime=0)
    info = tarfile.TarInfo("zeros")
    info.size = mb << 20
    info.mode = 0o644
    hdr = info.tobuf(tarfile.USTAR_FORMAT)
    chunk = b"\0" * (1 << 20)
    for part in [hdr] + [chunk] * mb + [b"\0" * 1024]:
        h.update(part)
        z.write(part)
    z.close()
    data = gz_buf.getvalue()
    return layout(out, [], raw_layers=[(data, h.hexdigest())])


def main():
    cmd = sys.argv[1]
    if cmd == "layout":
        args = sys.argv[2:]
        out = args.pop(0)
        ref, gz, bad, tars = "latest", False, None, []
        while args:
            x = args.pop(0)
            if x == "--ref":
                ref = args.pop(0)
            elif x == "--gzip":
                gz = True
            elif x.startswith("--bad-"):
                bad = x[6:]
            else:
                tars.append(open(x, "rb").read())
        print(layout(out, tars, ref, gz, bad))
    elif cmd == "case":
        name, out = sys.argv[2], sys.argv[3]
        arg = sys.argv[4] if len(sys.argv) > 4 else None
        bad = os.environ.get("OCI_BAD")
        print(layout(out, case(name, arg), gz=os.environ.get("OCI_GZIP") == "1", bad=bad))
    elif cmd == "bomb":
        print(bomb(sys.argv[2], int(sys.argv[3])))
    elif cmd == "random":
        t = T().file("random", os.urandom(int(sys.argv[3]) << 20)).bytes()
        print(layout(sys.argv[2], [t]))
    elif cmd == "tar":
        t = T()
        for kv in sys.argv[3:]:
            k, v = kv.split("=", 1)
            t.file(k, v.encode(), 0o755)
        with open(sys.argv[2], "wb") as f:
            f.write(t.bytes())
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
