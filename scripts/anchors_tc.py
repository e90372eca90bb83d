"""The peers of the tensor-core kernels, measured as ../shared/anchors/torch_anchors.py measures
them (CUDA events, warm-up, median): cuBLAS HGEMM with f32 accumulation, torch SDPA in f16
(causal and not) and the device copy. One JSON line per figure. For calls that cannot spend
the full anchors' minutes; the full script stays the reference."""
import json, torch
import torch.nn.functional as F

torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False


def bench(fn, warm=5, reps=10):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        s.record(); fn(); e.record(); torch.cuda.synchronize()
        ts.append(s.elapsed_time(e) / 1e3)
    ts.sort()
    return ts[len(ts) // 2]


def out(**kw):
    print(json.dumps(kw), flush=True)


print("device", torch.cuda.get_device_name(0))
a = torch.empty(1 << 28, dtype=torch.float32, device="cuda").uniform_()
b = torch.empty_like(a)
t = bench(lambda: b.copy_(a), reps=30)
out(what="copy", bytes=2 * a.numel() * 4, s=t, GBps=2 * a.numel() * 4 / t / 1e9)
del a, b
for n in (1024, 2048, 4096, 8192):
    A = torch.randn(n, n, device="cuda", dtype=torch.float16)
    B = torch.randn(n, n, device="cuda", dtype=torch.float16)
    t = bench(lambda: A @ B)
    out(what="hgemm_f16_f32acc", n=n, s=t, TFLOPs=2 * n**3 / t / 1e12)
del A, B
for bb, h, s, d in ((2, 16, 4096, 64), (2, 16, 4096, 128), (8, 16, 1024, 64)):
    q = torch.randn(bb, h, s, d, device="cuda", dtype=torch.float16)
    k = torch.randn_like(q)
    v = torch.randn_like(q)
    for causal in (False, True):
        t = bench(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal), reps=20)
        fl = 4 * bb * h * s * s * d / (2 if causal else 1)
        out(what="attention_f16", b=bb, h=h, seq=s, d=d, causal=causal, s=t, TFLOPs=fl / t / 1e12)
    del q, k, v
