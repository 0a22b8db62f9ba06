"""A submission: reads the data directory and stdin, computes, prints.

Then it tries what the strict profile refuses, and shows each refusal.
"""
import json
import os
import statistics
import sys

with open("data/scores.json") as f:
    scores = json.load(f)
bonus = int(sys.stdin.read() or 0)
for name, marks in sorted(scores.items()):
    print(f"{name}: mean {statistics.mean(marks) + bonus:.1f}")

for what, attempt in [
    ("write a file", lambda: open("data/out.txt", "w")),
    ("read /etc/passwd", lambda: open("/etc/passwd").read()),
    ("start a process", lambda: os.posix_spawn("/bin/true", ["true"], {})),
]:
    try:
        attempt()
        print(f"NOT REFUSED: {what}")
    except OSError as e:
        print(f"refused: {what}: [Errno {e.errno}] {os.strerror(e.errno)}")
