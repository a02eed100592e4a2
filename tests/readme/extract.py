"""tests/readme/extract.py README PORT SCRATCH — the README's code blocks
(indented four spaces) as one bash script, in order, for readme.sh to run
in a scratch directory.  A block whose first line is "# not run here..." is
left out (named on stderr); a block that starts with "{" is a JSON file
(a client's config): it must parse as JSON, and is not run; in a block of "$ " lines only those run (the
rest is their output); a command whose comment says "exits N" must exit N.
Two adaptations only: the example port 8900 becomes PORT and 8901..8909
ports the kernel picks (other runners use them on a shared machine), /tmp/ward-try becomes
SCRATCH."""
import json
import re
import socket
import subprocess
import sys

readme, port, scratch = sys.argv[1], sys.argv[2], sys.argv[3]
# 8901..8909: more runners of the examples, each on a port the kernel picks
ports = {"8900": port}
for k in range(8901, 8910):
    _s = socket.socket()
    _s.bind(("127.0.0.1", 0))
    ports[str(k)] = str(_s.getsockname()[1])
    _s.close()
lines = open(readme).read().split("\n")
blocks, cur, prev_blank = [], None, True
for i, l in enumerate(lines):
    if l.startswith("    ") and (cur is not None or prev_blank):
        if cur is None:
            cur = []
            blocks.append(cur)
        cur.append(l[4:])
    elif not l.strip() and cur is not None and i + 1 < len(lines) and lines[i + 1].startswith("    "):
        cur.append("")
    else:
        cur = None
    prev_blank = not l.strip()


def complete(text):
    if text.rstrip("\n").endswith("\\"):
        return False
    return subprocess.run(["bash", "-n", "-c", text], capture_output=True).returncode == 0


def commands(block):
    if not any(l.startswith("$ ") for l in block):
        return ["\n".join(block)]
    out, acc = [], None
    for l in block:
        if acc is None:
            if l.startswith("$ "):
                acc = l[2:]
                if complete(acc):
                    out.append(acc)
                    acc = None
        else:
            acc += "\n" + l
            if complete(acc):
                out.append(acc)
                acc = None
    return out


q = lambda s: "'" + s.replace("'", "'\\''") + "'"
script = []
for n, b in enumerate(blocks, 1):
    first = next((l for l in b if l.strip()), "")
    if first.startswith("# not run here"):
        print("readme: block %d left out: %s" % (n, first[2:]), file=sys.stderr)
        continue
    if first.startswith("{"):
        try:
            json.loads("\n".join(b))
        except ValueError as e:
            script.append("__begin %d %s\n__fail %s %s\n__end" % (n, q(first[:70]), q("JSON block"), q(str(e))))
        print("readme: block %d is JSON: parsed, not run" % n, file=sys.stderr)
        continue
    script.append("__begin %d %s" % (n, q(first[:70])))
    for c in commands(b):
        c = re.sub(r"127\.0\.0\.1:(890\d)\b", lambda m: "127.0.0.1:" + ports[m.group(1)], c)
        c = c.replace("/tmp/ward-try", scratch)
        m = re.search(r"# exits (\d+)", c)
        if m:
            script.append("if %s\nthen __rc=0; else __rc=$?; fi; [ $__rc = %s ] || __fail %s \"exited $__rc, the README says %s\""
                          % (c, m.group(1), q(c.split("\n")[0][:70]), m.group(1)))
        else:
            script.append(c)
    script.append("__end")
print("\n".join(script))
