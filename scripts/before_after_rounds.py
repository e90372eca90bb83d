#!/usr/bin/env python3
"""Before/after of `scripts/call_final.sh`: for each backend, kernel and shape, the median
time of the build before a change (ba-*-forge-before-*.jsonl) and after it
(ba-*-forge-*.jsonl) over the rounds, and their ratio. Usage: before_after_rounds.py DIR"""
import glob, json, os, statistics, sys
from collections import defaultdict

d = sys.argv[1]
times = defaultdict(list)
for path in glob.glob(os.path.join(d, "*ba-*.jsonl")):
    # [device-]ba-vk-forge-before-1.jsonl: the backend, the build, the round.
    name = os.path.basename(path).split("ba-", 1)[1][:-6]
    backend, rest = name.split("-", 1)
    build = "before" if rest.startswith("forge-before") else "after"
    for line in open(path):
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if "kernel" in r:
            times[(backend, r["kernel"], r["shape"], build)].append(r["us"])
print(f"{'backend':7} {'kernel':18} {'shape':24} {'before µs':>10} {'after µs':>10} {'after/before':>12}")
for (backend, kernel, shape, build) in sorted(k for k in times if k[3] == "before"):
    b = statistics.median(times[(backend, kernel, shape, "before")])
    a = times.get((backend, kernel, shape, "after"))
    if not a:
        continue
    a = statistics.median(a)
    print(f"{backend:7} {kernel:18} {shape:24} {b:10.1f} {a:10.1f} {a / b:12.3f}")
