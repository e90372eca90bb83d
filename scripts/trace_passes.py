#!/usr/bin/env python3
"""The global top-k's passes in a FORGE_TRACE file: per pass, the GPU's median duration and
the median gap before it, for each (input size, level grid) the trace holds.

Usage: scripts/trace_passes.py TRACE.json   (e.g. `FORGE_TRACE=t.json forge bench topk`)
A run is the 18 launches from `topk_radix_hist` to `topk_radix_sort`; the GPU track's
events are each launch's compute pass, timed by its own timestamps."""
import collections, json, statistics as st, sys

events = json.load(open(sys.argv[1]))["traceEvents"]
gpu = sorted((e for e in events if e.get("cat") == "gpu"), key=lambda e: e["ts"])
runs, cur = [], []
for e in gpu:
    if not e["name"].startswith("topk_radix"):
        if cur:
            runs.append(cur)
        cur = []
        continue
    if e["name"] == "topk_radix_hist" and cur and cur[-1]["name"] == "topk_radix_sort":
        runs.append(cur)
        cur = []
    cur.append(e)
if cur:
    runs.append(cur)
full = [r for r in runs if len(r) == 18 and r[-1]["name"] == "topk_radix_sort"]
groups = collections.defaultdict(list)
for r in full:
    # The mark pass has a workgroup per 65536 values; the first refine's workgroups are the
    # level grid over 256.
    groups[(r[4]["args"]["workgroups"][0], r[6]["args"]["workgroups"][0])].append(r)
for (chunks, grid), rs in sorted(groups.items()):
    if len(rs) < 50:
        continue
    span = st.median(r[-1]["ts"] + r[-1]["dur"] - r[0]["ts"] for r in rs)
    busy = st.median(sum(e["dur"] for e in r) for r in rs)
    print(f"n = {chunks} x 65536, level grid {grid} workgroups: {len(rs)} runs; span {span:.1f} us"
          f" = passes {busy:.1f} + gaps {span - busy:.1f} (17 gaps)")
    cells = []
    for i in range(18):
        d = st.median(r[i]["dur"] for r in rs)
        cell = f"{rs[0][i]['name'].removeprefix('topk_radix_')} {d:.1f}"
        if i:
            gap = st.median(r[i]["ts"] - (r[i - 1]["ts"] + r[i - 1]["dur"]) for r in rs)
            cell += f" (+{gap:.1f})"
        cells.append(cell)
    print("  " + ", ".join(cells))
