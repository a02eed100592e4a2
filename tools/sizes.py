#!/usr/bin/env python3
"""tools/sizes.py — the house's sizes (issue 31.5): source files over
--max-file lines (1,000) and functions over --max-func lines (80), counted
from the line of a function's opening brace at column 0 to its closing one.
`--check` exits 1 when any is over.  Used by tests/house/sizes.sh."""
import argparse
import glob
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def functions(path):
    lines = open(path, encoding="utf-8", errors="replace").read().split("\n")
    out, start, name = [], None, None
    for i, line in enumerate(lines):
        if line == "{" and start is None:
            # the name: the identifier before the first "(" of the
            # declarator, the nearest line above starting at column 0
            name = "?"
            for k in range(i - 1, max(-1, i - 6), -1):
                if lines[k][:1] not in ("", "\t", " ", "}", "#", "/", "*"):
                    m = re.search(r"([A-Za-z_][A-Za-z_0-9]*)\s*\(", lines[k])
                    name = m.group(1) if m else "?"
                    break
            start = i
        elif line == "}" and start is not None:
            out.append((name, i - start + 1))
            start = None
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-file", type=int, default=1000)
    ap.add_argument("--max-func", type=int, default=80)
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    files = sorted(glob.glob(os.path.join(ROOT, "src/**/*.[ch]"), recursive=True) +
                   glob.glob(os.path.join(ROOT, "libexec/*.[ch]")))
    over = 0
    for f in files:
        rel = os.path.relpath(f, ROOT)
        n = open(f, encoding="utf-8", errors="replace").read().count("\n")
        if n > a.max_file:
            print(f"file {rel}: {n} lines (over {a.max_file})")
            over += 1
        for name, k in functions(f):
            if k > a.max_func:
                print(f"function {rel}:{name}: {k} lines (over {a.max_func})")
                over += 1
    print(f"{over} over")
    return 1 if a.check and over else 0


if __name__ == "__main__":
    sys.exit(main())
