#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes a C file defining `const char NAME[]` with the text of a file (build time)."""
import sys

src, out, name = sys.argv[1], sys.argv[2], sys.argv[3]
with open(src, encoding="utf-8") as f:
    text = f.read()
with open(out, "w", encoding="utf-8") as f:
    f.write("/* Generated from %s by scripts/embed-text.py: do not edit. */\n" % src.rsplit("/", 1)[-1])
    f.write("extern const char %s[];\n" % name)
    f.write("const char %s[] =\n" % name)
    for line in text.splitlines(keepends=True):
        esc = line.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        f.write('    "%s"\n' % esc)
    f.write('    "";\n')
