#!/usr/bin/env python3
"""The peers of the tensor-core kernels, as shared/anchors/torch_anchors.py measures them (same
timing method), one JSON line each: cuBLAS HGEMM (f16 in, f32 accumulation) at 1024^3 to
8192^3, torch SDPA (f16, flash) at the attention shapes, and the device copy. Run on the GPU
machine by scripts/call_tensor_cores.sh and scripts/call_round.sh."""
import json, torch
import torch.nn.functional as F
torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
def bench(fn, warm=5, reps=10):
    for _ in range(warm): fn()
    torch.cuda.synchronize(); ts = []
    for _ in range(reps):
        s = torch.cuda.Event(enable_timing=True); e = torch.cuda.Event(enable_timing=True)
        s.record(); fn(); e.record(); torch.cuda.synchronize(); ts.append(s.elapsed_time(e) / 1e3)
    ts.sort(); return ts[len(ts) // 2]
for N in (1024, 2048, 4096, 8192):
    A = torch.randn(N, N, device="cuda", dtype=torch.float16); B = torch.randn(N, N, device="cuda", dtype=torch.float16)
    t = bench(lambda: A @ B)
    print(json.dumps(dict(what="hgemm_f16_f32acc", n=N, s=t, TFLOPs=2 * N**3 / t / 1e12)), flush=True)
del A, B
for B, H, S, D in ((2, 16, 4096, 64), (2, 16, 4096, 128), (8, 16, 1024, 64)):
    q = torch.randn(B, H, S, D, device="cuda", dtype=torch.float16)
    k = torch.randn_like(q); v = torch.randn_like(q)
    for causal in (False, True):
        t = bench(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal), reps=20)
        fl = 4 * B * H * S * S * D / (2 if causal else 1)
        print(json.dumps(dict(what="attention_f16", b=B, h=H, seq=S, d=D, causal=causal, s=t, TFLOPs=fl / t / 1e12)), flush=True)
    del q, k, v
a = torch.empty(1 << 28, dtype=torch.float32, device="cuda").uniform_(); b = torch.empty_like(a)
t = bench(lambda: b.copy_(a)); print(json.dumps(dict(what="copy", bytes=2 * a.numel() * 4, s=t, GBps=2 * a.numel() * 4 / t / 1e9)), flush=True)
