# SPDX-License-Identifier: MIT
"""A realistic small program for bench/python3.sh (issue 19).

Usage: python-sb bench/workload-small.py

What a short script a user runs many times a day does: it imports a few
modules of the standard library (json, re, collections, statistics, which
bring in fractions, decimal, random, and the regular-expression compiler),
parses a JSON document it builds, extracts fields with regular expressions,
counts and groups them, and prints a few statistics as JSON. About 28 ms with
/usr/bin/python3 on the benchmark machine, of which ~10 ms is the
interpreter's start-up: the start-up costs python-sb adds are diluted the way
a user sees them.

The work is deterministic (no clock, no random seed, no hashing-order
dependence in the output): the output is printed so that it cannot be skipped,
and bench/python3.sh checks that every variant prints the same.
"""

import collections
import json
import re
import statistics

LINE = re.compile(r"(?P<host>[a-z]+\d*)\.example\.(?P<tld>com|org|net) "
                  r"(?P<method>GET|POST|PUT) /(?P<path>[\w/]*) (?P<status>\d{3}) (?P<ms>\d+)ms")


def records(n):
    methods = ("GET", "POST", "PUT")
    tlds = ("com", "org", "net")
    for i in range(n):
        yield {
            "line": "host%d.example.%s %s /api/v%d/item/%d %d %dms"
            % (i % 17, tlds[i % 3], methods[i % 7 % 3], i % 4, i % 101,
               (200, 200, 200, 404, 500)[i % 5], (i * 37) % 251 + 3),
            "tags": ["t%d" % (i % 5), "u%d" % (i % 3)],
        }


def main():
    doc = json.loads(json.dumps({"entries": list(records(1500))}))
    by_status = collections.Counter()
    by_host = collections.defaultdict(list)
    tags = collections.Counter()
    for e in doc["entries"]:
        m = LINE.fullmatch(e["line"])
        if not m:
            raise SystemExit("no match: " + e["line"])
        by_status[m["status"]] += 1
        by_host[m["host"]].append(int(m["ms"]))
        tags.update(e["tags"])
    summary = {
        "status": dict(sorted(by_status.items())),
        "tags": dict(sorted(tags.items())),
        "hosts": {
            h: {
                "n": len(v),
                "mean": round(statistics.fmean(v), 3),
                "median": statistics.median(v),
                "stdev": round(statistics.stdev(v), 3),
            }
            for h, v in sorted(by_host.items())
        },
        "quantiles": statistics.quantiles([t for v in by_host.values() for t in v], n=4),
    }
    print(json.dumps(summary, sort_keys=True))


if __name__ == "__main__":
    main()
