"""Peers of `matmul_residual` (C = alpha * (A @ B) + bias + residual: a block's output
projection added to the residual stream) on the shapes of `tilekit bench --kernel
matmul_residual`: bf16, [M, K] @ [K, N] with a [N] bias and an [M, N] residual.

Peers (each in the same process, same inputs; an error is recorded, not hidden):
  eager          residual + alpha * F.linear-style matmul + bias (three kernels, as a user writes it)
  addmm          torch.addmm(residual, a, b, alpha=alpha) + bias (cuBLAS's beta = 1 fuses the
                 residual; the bias is one more kernel)
  addmm_nobias   torch.addmm(residual, a, b, alpha=alpha): the cuBLAS epilogue alone (no bias:
                 a lower bound of what cuBLAS needs for this op)
  compile        torch.compile(dynamic=False) of the eager expression
TFLOP/s as 2 M N K; median of 20 CUDA-event timings after 5 warm-ups (benches/peers/sdpa.py's
`time_ms`). Every peer's output is checked against the eager one.

    python3 benches/peers/residual.py --shapes 8192x3072x768,4097x4097x4097 --out $OUT/residual-peers.json
"""
import argparse, json
import torch

from sdpa import time_ms


def case(m, k, n, alpha=1.0):
    g = torch.Generator(device="cuda").manual_seed(11)
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16, generator=g)
    b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16, generator=g) / k ** 0.5
    bias = torch.randn(n, device="cuda", dtype=torch.bfloat16, generator=g)
    r = torch.randn(m, n, device="cuda", dtype=torch.bfloat16, generator=g)
    eager = lambda: r + alpha * (a @ b) + bias
    compiled = torch.compile(lambda a, b, bias, r: r + alpha * (a @ b) + bias, dynamic=False)
    peers = {
        "eager": eager,
        "addmm": lambda: torch.addmm(r, a, b, alpha=alpha) + bias,
        "addmm_nobias": lambda: torch.addmm(r, a, b, alpha=alpha),
        "compile": lambda: compiled(a, b, bias, r),
    }
    want = eager().float()
    rows = []
    for name, fn in peers.items():
        try:
            got = fn().float()
            ref = want if name != "addmm_nobias" else want - bias.float()
            err = ((got - ref).abs().max() / ref.abs().max()).item()
            ms = time_ms(fn)
            row = {"shape": f"{m}x{k}x{n}", "peer": name, "ms": ms,
                   "tflops": 2.0 * m * n * k / (ms * 1e-3) / 1e12, "rel_err": err}
        except Exception as e:
            row = {"shape": f"{m}x{k}x{n}", "peer": name, "error": str(e)[:240]}
        rows.append(row)
        print("residual peer", row, flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="8192x3072x768")
    ap.add_argument("--out", default="residual-peers.json")
    args = ap.parse_args()
    out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": []}
    for s in args.shapes.split(","):
        m, k, n = (int(x) for x in s.split("x"))
        out["rows"] += case(m, k, n)
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
