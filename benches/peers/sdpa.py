"""PyTorch SDPA (cuDNN and flash backends) on the attention bench's shape: one head of 32768
queries x 4096 keys, D = 64 and 128, bf16, non-causal; TFLOP/s of the two products (4 M N D
flops), median of 20 CUDA-event timings after 5 warm-ups, launches back to back. Then the
library kernel's shapes (`LIBRARY_CASES`: [B, H, S, D], causal, grouped-query heads): forward
for inference and for training, and the backward, per backend (skip with --user-only).

    python3 benches/peers/sdpa.py --out $OUT/sdpa.json
    python3 benches/peers/sdpa.py --no-user --cases 0,1 --backends cudnn --out $OUT/s.json  # a short call
"""
import argparse, json, statistics
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def time_ms(fn, warm=5, reps=20):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="sdpa.json")
    ap.add_argument("--user-only", action="store_true", help="only the user kernel's shapes")
    ap.add_argument("--no-user", action="store_true", help="only the library kernel's shapes")
    ap.add_argument("--cases", default="", help="LIBRARY_CASES indices, comma-separated (default: all)")
    ap.add_argument("--backends", default="cudnn,flash,efficient", help="backends, comma-separated")
    args = ap.parse_args()
    m, n = 32768, 4096
    out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": []}
    for d in (() if args.no_user else (64, 128)):
        g = torch.Generator(device="cuda").manual_seed(d)
        q = torch.randn(1, 1, m, d, device="cuda", dtype=torch.bfloat16, generator=g)
        k = torch.randn(1, 1, n, d, device="cuda", dtype=torch.bfloat16, generator=g)
        v = torch.randn(1, 1, n, d, device="cuda", dtype=torch.bfloat16, generator=g)
        flops = 4.0 * m * n * d
        for name, be in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)):
            try:
                with sdpa_kernel(be):
                    ms = time_ms(lambda: F.scaled_dot_product_attention(q, k, v))
                row = {"backend": name, "d": d, "ms": ms, "tflops": flops / (ms * 1e-3) / 1e12}
            except Exception as e:  # a backend that does not take this shape
                row = {"backend": name, "d": d, "error": str(e)[:200]}
            out["rows"].append(row)
            print("sdpa", row)
    if not args.user_only:
        cases = [int(i) for i in args.cases.split(",") if i] or range(len(LIBRARY_CASES))
        library_cases(out, [LIBRARY_CASES[i] for i in cases], args.backends.split(","))
    json.dump(out, open(args.out, "w"), indent=1)


# The library kernel's shapes (tilekit-bench --only attention, `library_train`): B, H, KV heads,
# S, D, causal. TFLOP/s as there: 4 B H S^2 D forward, 2.5x that backward, halved for causal.
LIBRARY_CASES = [
    (4, 32, 32, 4096, 128, False),
    (4, 32, 32, 4096, 128, True),
    (8, 16, 16, 2048, 64, False),
    (4, 16, 16, 4096, 256, False),
    (4, 32, 8, 4096, 128, True),
]


def library_cases(out, cases, backends):
    """SDPA on [B, H, S, D] bf16: forward without grad (inference), forward with grad (the
    backends save their log-sum-exp: training) and the backward alone (torch.autograd.grad
    of the retained graph), per backend."""
    for (b, h, hk, s, d, causal) in cases:
        g = torch.Generator(device="cuda").manual_seed(s + d)
        mk = lambda heads: torch.randn(b, heads, s, d, device="cuda", dtype=torch.bfloat16, generator=g)
        q, k, v, do = mk(h), mk(hk), mk(hk), mk(h)
        flops = 4.0 * b * h * s * s * d * (0.5 if causal else 1.0)
        kw = {"is_causal": causal}
        if hk != h:
            kw["enable_gqa"] = True
        for name, be in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION),
                         ("efficient", SDPBackend.EFFICIENT_ATTENTION)):
            if name not in backends:
                continue
            row = {"backend": name, "b": b, "h": h, "kv_heads": hk, "s": s, "d": d, "causal": causal}
            try:
                with sdpa_kernel(be):
                    with torch.no_grad():
                        row["fwd_infer_ms"] = time_ms(lambda: F.scaled_dot_product_attention(q, k, v, **kw))
                    qg, kg, vg = (t.detach().requires_grad_() for t in (q, k, v))
                    row["fwd_train_ms"] = time_ms(lambda: F.scaled_dot_product_attention(qg, kg, vg, **kw))
                    o = F.scaled_dot_product_attention(qg, kg, vg, **kw)
                    row["bwd_ms"] = time_ms(lambda: torch.autograd.grad(o, (qg, kg, vg), do, retain_graph=True))
                row["fwd_infer_tflops"] = flops / (row["fwd_infer_ms"] * 1e-3) / 1e12
                row["fwd_train_tflops"] = flops / (row["fwd_train_ms"] * 1e-3) / 1e12
                row["bwd_tflops"] = 2.5 * flops / (row["bwd_ms"] * 1e-3) / 1e12
            except Exception as e:  # a backend that does not take this shape
                row["error"] = str(e)[:200]
            out["rows"].append(row)
            print("sdpa library", row)


if __name__ == "__main__":
    main()
