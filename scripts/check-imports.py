#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks the include graph of src/shoald (doc/design/controller.md):

1. HTTP is a leaf: only the HTTP layer (api.c, api_*.c, routes.c and
   their headers api.h, api_handlers.h), main.c and shoald_setup.c, the
   program and the one place that wires the modules' call-backs, include
   an api*.h header.
2. No import loop: with foo.c and foo.h one module (the HTTP layer one
   module too), the modules' includes of each other form no cycle.

The modules talk back up through narrow hooks instead (the cluster posts
job transitions through d->job_transition, slicing tells the cluster
through struct slices_hooks), so no loop is known: any is an offence.

Prints each offence and exits 1; scripts/format-check.sh runs it.
  scripts/check-imports.py [DIR]   (default src/shoald)
"""
import os
import re
import sys

# (module, module it includes): loops allowed for now. None.
KNOWN = set()

INCLUDE = re.compile(r'^\s*#\s*include\s+"shoald/([A-Za-z0-9_]+)\.h"', re.M)


def module(name):
    """The module of a file stem: the HTTP layer is one module."""
    if name == "routes" or name == "api" or name.startswith("api_"):
        return "HTTP"
    return name


def main():
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    d = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "src", "shoald")
    edges = {}  # module -> {module: [file that includes]}
    bad = 0
    for f in sorted(os.listdir(d)):
        if not (f.endswith(".c") or f.endswith(".h")):
            continue
        stem = f[:-2]
        src = module(stem)
        with open(os.path.join(d, f), encoding="utf-8") as fh:
            text = fh.read()
        for inc in INCLUDE.findall(text):
            dst = module(inc)
            if dst == "HTTP" and src not in ("HTTP", "main", "shoald_setup"):
                print(f"check-imports: {f} includes shoald/{inc}.h: "
                      "nothing below the HTTP layer may use it",
                      file=sys.stderr)
                bad = 1
            if (src, dst) in KNOWN:
                continue
            if dst != src:
                edges.setdefault(src, {}).setdefault(dst, []).append(
                    f"{f} -> {inc}.h")
            edges.setdefault(dst, {})
    # Tarjan's strongly connected components: each with more than one
    # module is an import loop.
    index, low, onstack, stack, sccs = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        onstack.add(v)
        for w in sorted(edges.get(v, {})):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in onstack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                onstack.discard(w)
                comp.append(w)
                if w == v:
                    break
            sccs.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    for comp in sccs:
        if len(comp) < 2:
            continue
        bad = 1
        print("check-imports: import loop among " + ", ".join(comp),
              file=sys.stderr)
        for a in comp:
            for b in sorted(edges.get(a, {})):
                if b in comp:
                    for how in edges[a][b]:
                        print(f"    {a} -> {b}  ({how})", file=sys.stderr)
    for a, b in sorted(KNOWN):
        print(f"check-imports: known loop edge, to be removed: {a} -> {b}")
    if bad:
        return 1
    print("check-imports: src/shoald has no import loop; HTTP is a leaf")
    return 0


if __name__ == "__main__":
    sys.exit(main())
