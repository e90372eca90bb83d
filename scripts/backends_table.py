#!/usr/bin/env python3
"""CUDA against Vulkan, row by row, each against its peer: one markdown table.

Usage: scripts/backends_table.py COMMIT DATE (VULKAN.jsonl CUDA.jsonl ANCHORS.jsonl)...
Each triple is one device call: `forge bench --json` through Vulkan and with
FORGE_BACKEND=cuda, and torch_anchors.py, all in that call. A row is a (kernel, shape) that
both backends timed; its peer ratio comes from the anchors of its own call, as
perf_table.py computes it (higher is better for both: the peer's time over ours, or our
throughput over the peer's)."""
import json, subprocess, sys

def rows(path, anchors, commit, date):
    """perf_table.py's rows for one bench file, as {(kernel, shape): (time, ratio)}."""
    out = subprocess.run([sys.executable, __file__.replace("backends_table.py", "perf_table.py"),
                          path, anchors, commit, date], capture_output=True, text=True, check=True).stdout
    table = {}
    for line in out.splitlines()[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        kernel, shape, schedule, time = cells[0], cells[1], cells[2], cells[3]
        table[(kernel, shape)] = (time, schedule, cells[7], cells[9])
    return table

commit, date, rest = sys.argv[1], sys.argv[2], sys.argv[3:]
print("| kernel | shape | Vulkan | CUDA | peer | Vulkan vs peer | CUDA vs peer | date | commit |")
print("|---|---|---|---|---|---|---|---|---|")
for i in range(0, len(rest), 3):
    vk = rows(rest[i], rest[i + 2], commit, date)
    cu = rows(rest[i + 1], rest[i + 2], commit, date)
    for key, (t, s, peer, ratio) in vk.items():
        if key in cu:
            ct, cs, _, cratio = cu[key]
            print(f"| {key[0]} | {key[1]} | {t} | {ct} | {peer} | {ratio} | {cratio} | {date} | {commit} |")
