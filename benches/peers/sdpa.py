"""PyTorch SDPA (cuDNN and flash backends) on the attention bench's shape: one head of 32768
queries x 4096 keys, D = 64 and 128, bf16, non-causal; TFLOP/s of the two products (4 M N D
flops), median of 20 CUDA-event timings after 5 warm-ups, launches back to back.

    python3 benches/peers/sdpa.py --out $OUT/sdpa.json
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
    args = ap.parse_args()
    m, n = 32768, 4096
    out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": []}
    for d in (64, 128):
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
    json.dump(out, open(args.out, "w"), indent=1)


if __name__ == "__main__":
    main()
