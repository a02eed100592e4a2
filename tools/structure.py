#!/usr/bin/env python3
"""tools/structure.py — the house's drawing, from the code: the folders of
src/ (rooms, a dialect's subfolder counted as its own room), which include
which (arrows, with how many #include lines make each), and the circles
between rooms.  `--check` exits 1 when an arrow the design forbids is drawn
(docs/design.md: nothing below a level calls it; core/ never calls system/);
`--no-circles` when rooms form a circle.  Used by tests/house/structure.sh."""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
SRC = os.path.join(ROOT, "src")
# Arrows the design forbids: (from, to).
FORBIDDEN = [("core", "system"), ("core", "dispatch"), ("system", "dispatch"),
             ("sandbox", "core"), ("sandbox", "system"), ("wire", "server"),
             ("core", "server"), ("system", "server")]


def room_of(path):
    rel = os.path.relpath(path, SRC).split(os.sep)
    if rel[0] == "dialect" and len(rel) > 2:
        return "dialect/" + rel[1]
    return rel[0]


def include_room(inc):
    parts = inc.split("/")
    if len(parts) < 2:
        return None
    if parts[0] == "dialect" and len(parts) > 2:
        return "dialect/" + parts[1]
    return parts[0]


def drawing():
    rooms, arrows = set(), {}
    for dirpath, _, files in os.walk(SRC):
        for f in files:
            if not f.endswith((".c", ".h")):
                continue
            p = os.path.join(dirpath, f)
            r = room_of(p)
            rooms.add(r)
            with open(p, encoding="utf-8", errors="replace") as fh:
                for m in re.finditer(r'^#\s*include\s+"([^"]+)"', fh.read(), re.M):
                    t = include_room(m.group(1))
                    if t and t != r and os.path.isdir(os.path.join(SRC, t)):
                        arrows[(r, t)] = arrows.get((r, t), 0) + 1
    return rooms, arrows


def circles(rooms, arrows):
    """Strongly connected components of more than one room (Tarjan)."""
    graph = {r: sorted(t for (f, t) in arrows if f == r) for r in rooms}
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for r in sorted(rooms):
        if r not in index:
            visit(r)
    return out


def main():
    rooms, arrows = drawing()
    circ = circles(rooms, arrows)
    bad = [(f, t) for (f, t) in arrows if (f, t) in FORBIDDEN]
    print(f"rooms {len(rooms)}, arrows {len(arrows)}, circles {len(circ)}")
    for (f, t), k in sorted(arrows.items()):
        print(f"  {f} -> {t} ({k})")
    for c in circ:
        print("circle: " + " <-> ".join(c))
    for f, t in bad:
        print(f"forbidden arrow: {f} -> {t}")
    if "--check" in sys.argv and bad:
        return 1
    if "--no-circles" in sys.argv and circ:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
