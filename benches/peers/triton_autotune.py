#!/usr/bin/env python3
"""Triton @autotune wall time, as the yardstick for `tilekit tune` (issue 5, tuner quality).

Run on the GPU machine (python3 with PyTorch and Triton):

    python3 benches/peers/triton_autotune.py --out $OUT/triton_autotune.json

Two kernels comparable to what tilekit tunes:
  matmul   C = A @ B, 4096^3 bf16, fp32 accumulate; the 8 configurations of Triton's
           03-matrix-multiplication tutorial for CUDA (BLOCK_M/N/K, GROUP_M, stages, warps).
  softmax  rows of 32768x4096 bf16, one row per program, BLOCK = 4096; 12 configurations
           (num_warps 4, 8, 16, 32 x num_stages 1, 2, 3).

Each measurement runs in a fresh subprocess: "cold" with an empty TRITON_CACHE_DIR (every
configuration compiled, then benchmarked), "warm" with the cache the cold run filled (no
compile; the benchmarking of every configuration still runs, since @autotune does not keep
its choice across processes). Reported: wall seconds of the first call (autotune + launch,
synchronized), the chosen configuration, and its time (CUDA events, median of 50 after warm-up).
"""
import argparse, json, os, subprocess, sys, tempfile, time


def child(kind):
    import torch, triton, triton.language as tl

    if kind == "matmul":
        cfgs = [
            triton.Config({"BM": 128, "BN": 256, "BK": 64, "GM": 8}, num_stages=3, num_warps=8),
            triton.Config({"BM": 64, "BN": 256, "BK": 32, "GM": 8}, num_stages=4, num_warps=4),
            triton.Config({"BM": 128, "BN": 128, "BK": 32, "GM": 8}, num_stages=4, num_warps=4),
            triton.Config({"BM": 128, "BN": 64, "BK": 32, "GM": 8}, num_stages=4, num_warps=4),
            triton.Config({"BM": 64, "BN": 128, "BK": 32, "GM": 8}, num_stages=4, num_warps=4),
            triton.Config({"BM": 128, "BN": 32, "BK": 32, "GM": 8}, num_stages=4, num_warps=4),
            triton.Config({"BM": 64, "BN": 32, "BK": 32, "GM": 8}, num_stages=5, num_warps=2),
            triton.Config({"BM": 32, "BN": 64, "BK": 32, "GM": 8}, num_stages=5, num_warps=2),
        ]

        @triton.autotune(configs=cfgs, key=["M", "N", "K"])
        @triton.jit
        def mm(a, b, c, M, N, K, sam, sak, sbk, sbn, scm, scn,
               BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GM: tl.constexpr):
            pid = tl.program_id(0)
            npm = tl.cdiv(M, BM)
            npn = tl.cdiv(N, BN)
            group = GM * npn
            gid = pid // group
            first = gid * GM
            gsz = min(npm - first, GM)
            pm = first + ((pid % group) % gsz)
            pn = (pid % group) // gsz
            rm = (pm * BM + tl.arange(0, BM)) % M
            rn = (pn * BN + tl.arange(0, BN)) % N
            rk = tl.arange(0, BK)
            ap = a + rm[:, None] * sam + rk[None, :] * sak
            bp = b + rk[:, None] * sbk + rn[None, :] * sbn
            acc = tl.zeros((BM, BN), dtype=tl.float32)
            for k in range(0, tl.cdiv(K, BK)):
                x = tl.load(ap, mask=rk[None, :] < K - k * BK, other=0.0)
                y = tl.load(bp, mask=rk[:, None] < K - k * BK, other=0.0)
                acc = tl.dot(x, y, acc)
                ap += BK * sak
                bp += BK * sbk
            cm = pm * BM + tl.arange(0, BM)
            cn = pn * BN + tl.arange(0, BN)
            tl.store(c + cm[:, None] * scm + cn[None, :] * scn, acc.to(tl.bfloat16),
                     mask=(cm[:, None] < M) & (cn[None, :] < N))

        n = 4096
        a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        c = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)

        def run():
            grid = lambda m: (triton.cdiv(n, m["BM"]) * triton.cdiv(n, m["BN"]),)
            mm[grid](a, b, c, n, n, n, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                     c.stride(0), c.stride(1))
        kernel = mm
        flops = 2 * n ** 3
        nbytes = 3 * n * n * 2
    else:
        cfgs = [triton.Config({}, num_warps=w, num_stages=s) for w in (4, 8, 16, 32) for s in (1, 2, 3)]

        @triton.autotune(configs=cfgs, key=["cols"])
        @triton.jit
        def sm(x, y, cols, BLOCK: tl.constexpr):
            row = tl.program_id(0)
            offs = tl.arange(0, BLOCK)
            m = offs < cols
            v = tl.load(x + row * cols + offs, mask=m, other=-float("inf")).to(tl.float32)
            e = tl.exp(v - tl.max(v, 0))
            tl.store(y + row * cols + offs, (e / tl.sum(e, 0)).to(tl.bfloat16), mask=m)

        rows, cols = 32768, 4096
        x = torch.randn(rows, cols, device="cuda", dtype=torch.bfloat16)
        y = torch.empty_like(x)

        def run():
            sm[(rows,)](x, y, cols, BLOCK=4096)
        kernel = sm
        flops = 5 * rows * cols
        nbytes = 2 * rows * cols * 2

    torch.cuda.synchronize()
    t0 = time.perf_counter()
    run()
    torch.cuda.synchronize()
    first = time.perf_counter() - t0
    for _ in range(5):
        run()
    times = []
    for _ in range(50):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); run(); e.record(); e.synchronize()
        times.append(s.elapsed_time(e))
    times.sort()
    ms = times[len(times) // 2]
    best = kernel.best_config
    print(json.dumps({
        "first_call_s": first,
        "configs": len(cfgs),
        "best": str(best),
        "best_ms": ms,
        "tflops": flops / ms / 1e9,
        "gbps": nbytes / ms / 1e6,
    }))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--child")
    ap.add_argument("--out")
    a = ap.parse_args()
    if a.child:
        child(a.child)
        return
    res = {}
    for kind in ("softmax", "matmul"):
        cache = tempfile.mkdtemp(prefix="triton-cache-")
        for state in ("cold", "warm"):
            env = dict(os.environ, TRITON_CACHE_DIR=cache)
            t0 = time.perf_counter()
            p = subprocess.run([sys.executable, __file__, "--child", kind], env=env,
                               capture_output=True, text=True)
            wall = time.perf_counter() - t0
            try:
                rec = json.loads(p.stdout.strip().splitlines()[-1])
            except Exception:
                rec = {"error": (p.stderr or p.stdout)[-2000:]}
            rec["process_wall_s"] = wall
            res[f"{kind}_{state}"] = rec
            print(kind, state, json.dumps(rec), flush=True)
    if a.out:
        with open(a.out, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
