#!/usr/bin/env python3
"""Compares two `forge bench --json` runs made in one device call: the binary before a
change and the binary after it, row by row (kernel and shape).

Usage: scripts/before_after.py BEFORE.jsonl AFTER.jsonl [TOLERANCE]
Prints a markdown table: each row's best time before and after, the ratio after/before, and
whether it is within TOLERANCE (default 0.03: 3% slower at most) or faster. A row present
in one run only is listed as such. Exits 1 when a row is slower than the tolerance allows."""
import json, sys

def load(path):
    rows = {}
    for line in open(path):
        line = line.strip()
        if line.startswith("{"):
            r = json.loads(line)
            rows[(r["kernel"], r["shape"])] = r
    return rows

def fmt(us):
    return f"{us / 1000:.3f} ms" if us >= 1000 else f"{us:.1f} µs"

before, after = load(sys.argv[1]), load(sys.argv[2])
tol = float(sys.argv[3]) if len(sys.argv) > 3 else 0.03
print("| kernel | shape | before | after | after/before | within 3% |")
print("|---|---|---|---|---|---|")
slower = 0
for key in list(before) + [k for k in after if k not in before]:
    b, a = before.get(key), after.get(key)
    if not (b and a):
        print(f"| {key[0]} | {key[1]} | {fmt(b['us']) if b else '-'} | {fmt(a['us']) if a else '-'} | - | only {'before' if b else 'after'} |")
        continue
    ratio = a["us"] / b["us"]
    ok = ratio <= 1 + tol
    slower += not ok
    print(f"| {key[0]} | {key[1]} | {fmt(b['us'])} ({b['schedule']}) | {fmt(a['us'])} ({a['schedule']}) | {ratio:.3f} | {'yes' if ok else '**no**'} |")
sys.exit(1 if slower else 0)
