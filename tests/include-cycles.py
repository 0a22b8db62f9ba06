#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Fails when the sources under src/ include each other in a cycle.

A module is a .c file and the header of the same name beside it (learn.c and
learn.h); a header with no .c of its name (guard-part.h, profile.h) is a module
of its own. Module A depends on module B when a file of A includes B's header
with #include "..." (resolved among the headers under src/, which have unique
names; generated and system headers are not modules). Every cycle of that
graph is printed, one module chain per line, and the exit status is 1; with
none it is 0.

Usage: include-cycles.py SRC_DIR
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def modules(src):
    """{module: [files]} and {header basename: module}."""
    files = {}
    for root, _, names in os.walk(src):
        for name in names:
            stem, ext = os.path.splitext(name)
            if ext in (".c", ".h"):
                module = os.path.relpath(os.path.join(root, stem), src)
                files.setdefault(module, []).append(os.path.join(root, name))
    headers = {}
    for module, paths in files.items():
        for path in paths:
            if path.endswith(".h"):
                name = os.path.basename(path)
                if name in headers:
                    sys.exit(f"include-cycles: two headers named {name}: "
                             f"{headers[name]} and {module}")
                headers[name] = module
    return files, headers


def graph(files, headers):
    edges = {}
    for module, paths in files.items():
        deps = edges.setdefault(module, set())
        for path in paths:
            with open(path, encoding="utf-8") as f:
                for included in INCLUDE.findall(f.read()):
                    target = headers.get(os.path.basename(included))
                    if target and target != module:
                        deps.add(target)
    return edges


def components(edges):
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                scc.append(w)
                if w == v:
                    break
            if len(scc) > 1:
                found.append(sorted(scc))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def cycle_in(scc, edges):
    """One cycle through the component's first module, as a chain."""
    members, start = set(scc), scc[0]
    paths = {start: [start]}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(edges[v] & members):
            if w == start:
                return paths[v] + [start]
            if w not in paths:
                paths[w] = paths[v] + [w]
                queue.append(w)
    return scc


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    files, headers = modules(sys.argv[1])
    edges = graph(files, headers)
    sccs = components(edges)
    for scc in sccs:
        print("include cycle: " + " -> ".join(cycle_in(scc, edges)), file=sys.stderr)
    print(f"{len(edges)} modules, {sum(map(len, edges.values()))} dependencies, "
          f"{len(sccs)} cycles")
    return 1 if sccs else 0


if __name__ == "__main__":
    sys.exit(main())
