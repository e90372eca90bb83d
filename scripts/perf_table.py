#!/usr/bin/env python3
"""Turns one device run into the rows of docs/PERFORMANCE.md and a roofline-style SVG.

Usage: scripts/perf_table.py BENCH.jsonl ANCHORS.jsonl COMMIT DATE [SVG_OUT]
BENCH.jsonl is `forge bench --json`; ANCHORS.jsonl is shared/anchors/torch_anchors.py, both
from the same device call, so every ratio compares figures measured minutes apart.

A BENCH line may also carry its own `peer_name` and `peer_figure` (a peer measured in another
call, with the line's figure) and its own `commit`: rows measured elsewhere keep their ratio.
The overhead row (`peer_us`: a bare wgpu call timed in the same process) gets the ratio of
the two times, lower being better, and no bar in the SVG.

The multi-pass rows (`fft`, `topk_blocks`, `topk_global`) write their shape as `key=value`
pairs; they are matched to the anchors' `fft_c2c`, `topk_block` and `topk_global` lines by
those keys, and their ratio is the peer's time over ours (higher is better); measured in
another call, such a row carries `peer_name` and `peer_time_us` (and its `commit`)."""
import json, sys

def load(path):
    out = []
    for line in open(path):
        line = line.strip()
        if line.startswith("{"):
            out.append(json.loads(line))
    return out

bench, anchors, commit, date = load(sys.argv[1]), load(sys.argv[2]), sys.argv[3], sys.argv[4]
svg_out = sys.argv[5] if len(sys.argv) > 5 else None
copy = next((a for a in anchors if a["what"] == "copy"), None)
copy_gbps = copy["GBps"] if copy else None

def pairs(shape):
    """`n=1024 batch=16384` as {"n": 1024, "batch": 16384}."""
    out = {}
    for part in shape.split():
        if "=" in part:
            key, value = part.split("=", 1)
            out[key] = int(value)
    return out

# Multi-pass rows: (kernel, anchor `what`, the shape keys that must match, peer name).
TIMED_PEERS = [
    ("fft", "fft_c2c", ("n", "batch"), "cuFFT c2c"),
    ("topk_blocks", "topk_block", ("n", "block", "k"), "torch.topk (view)"),
    ("topk_global", "topk_global", ("n", "k"), "torch.topk"),
]

def timed_peer(r):
    """(name, peer µs, ratio of the peer's time over ours) for a multi-pass row, else None.
    A row measured in another call carries its peer's time as `peer_time_us`."""
    if "peer_time_us" in r:
        return (r["peer_name"], r["peer_time_us"], r["peer_time_us"] / r["us"])
    for kernel, what, keys, name in TIMED_PEERS:
        if r["kernel"] != kernel:
            continue
        want = pairs(r["shape"])
        a = next((a for a in anchors if a["what"] == what and all(a.get(k) == want.get(k) for k in keys)), None)
        if a:
            return (name, a["s"] * 1e6, a["s"] * 1e6 / r["us"])
    return None

def peer(r):
    k, shape = r["kernel"], r["shape"]
    if "peer_figure" in r:
        unit_val = r["tflops"] if r.get("tflops") else r["gbps"]
        return (r["peer_name"], r["peer_figure"], unit_val)
    if k == "gemv":
        m, n = map(int, shape.split("x"))
        a = next((a for a in anchors if a["what"] == "sgemv" and a["m"] == m and a["k"] == n), None)
        return ("cuBLAS SGEMV", a["GBps"], r["gbps"]) if a else None
    if k == "gemm":
        n = int(shape.split("^")[0])
        a = next((a for a in anchors if a["what"] == "sgemm_fp32" and a["n"] == n), None)
        return ("cuBLAS SGEMM fp32", a["TFLOPs"], r["tflops"]) if a else None
    if k in ("gemm_f16", "gemm_f16_simt"):
        n = int(shape.split("^")[0])
        a = next((a for a in anchors if a["what"] == "hgemm_f16_f32acc" and a["n"] == n), None)
        return ("cuBLAS HGEMM f16 (f32 acc)", a["TFLOPs"], r["tflops"]) if a else None
    if k in ("attention", "attention_rows", "attention_f32"):
        # `b2 h16 s4096 d64 causal` against torch SDPA's `attention_f16` line of that shape.
        t = shape.split()
        dims = {w[0]: int(w[1:]) for w in t if w[0] in "bhsd" and w[1:].isdigit()}
        a = next((a for a in anchors if a["what"] == "attention_f16" and a["b"] == dims.get("b")
                  and a["h"] == dims.get("h") and a["seq"] == dims.get("s") and a["d"] == dims.get("d")
                  and a["causal"] == ("causal" in t)), None)
        return ("torch SDPA f16 (FLASH)", a["TFLOPs"], r["tflops"]) if a else None
    if k in ("copy_vec4", "p64_project", "ternary_gemv") and copy_gbps:
        return ("torch copy", copy_gbps, r["gbps"])
    return None

rows = ["| kernel | shape | schedule | time | GB/s | TFLOP/s | of copy | peer | peer figure | ratio | date | commit |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|"]
bars = []
for r in bench:
    p = peer(r)
    t = r["us"]
    time = f"{t/1e3:.3f} ms" if t >= 1000 else f"{t:.1f} µs"
    row_commit = r.get("commit", commit)
    if r.get("peer_us"):
        rows.append(f"| {r['kernel']} | {r['shape']} | {r['schedule']} | {time} | - | - | - | {r['peer']} | {r['peer_us']:.1f} µs | {t / r['peer_us']:.2f}× the time | {date} | {row_commit} |")
        continue
    gb = f"{r['gbps']:.0f}" if r.get("gbps") else "-"
    tf = f"{r['tflops']:.2f}" if r.get("tflops") else "-"
    fc = f"{r['frac_copy']:.2f}" if r.get("frac_copy") else "-"
    tp = timed_peer(r)
    if tp:
        name, peer_us, ratio = tp
        fig = f"{peer_us/1e3:.3f} ms" if peer_us >= 1000 else f"{peer_us:.1f} µs"
        rows.append(f"| {r['kernel']} | {r['shape']} | {r['schedule']} | {time} | {gb} | {tf} | {fc} | {name} | {fig} | {ratio:.2f}× | {date} | {row_commit} |")
        bars.append((f"{r['kernel']} {r['shape']}", ratio))
    elif p:
        name, fig, ours = p
        ratio = ours / fig
        unit = "TFLOP/s" if "GEMM" in name or "SDPA" in name else "GB/s"
        rows.append(f"| {r['kernel']} | {r['shape']} | {r['schedule']} | {time} | {gb} | {tf} | {fc} | {name} | {fig:.1f} {unit} | {ratio:.2f}× | {date} | {row_commit} |")
        bars.append((f"{r['kernel']} {r['shape']}", ratio))
    else:
        rows.append(f"| {r['kernel']} | {r['shape']} | {r['schedule']} | {time} | {gb} | {tf} | {fc} | - | - | - | {date} | {row_commit} |")
print("\n".join(rows))

if svg_out and bars:
    w, rowh, left = 760, 26, 230
    h = 60 + rowh * len(bars)
    scale = (w - left - 40)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
             f'<text x="{w/2}" y="20" text-anchor="middle" font-size="14">Achieved throughput as a fraction of the limit (peer or device copy), {date}</text>']
    x1 = left + scale
    parts.append(f'<line x1="{x1}" y1="30" x2="{x1}" y2="{h-20}" stroke="#c00" stroke-dasharray="4"/>')
    parts.append(f'<text x="{x1}" y="{h-6}" text-anchor="middle" fill="#c00">1.0 = limit</text>')
    for i, (label, ratio) in enumerate(bars):
        y = 36 + i * rowh
        bw = max(1, min(ratio, 1.5) / 1.0 * scale)
        parts.append(f'<text x="{left-6}" y="{y+14}" text-anchor="end">{label}</text>')
        parts.append(f'<rect x="{left}" y="{y}" width="{bw:.1f}" height="{rowh-8}" fill="#4a7ab5"/>')
        parts.append(f'<text x="{left+bw+4:.1f}" y="{y+14}">{ratio:.2f}</text>')
    parts.append("</svg>")
    open(svg_out, "w").write("\n".join(parts))
