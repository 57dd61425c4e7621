#!/usr/bin/env python3
"""Peer measurements for tilekit: PyTorch eager, torch.compile and Triton, one GPU, one process.

Run on the GPU machine (H100; python3 with PyTorch and Triton; no network needed):

    python3 benches/peers/peers.py --out $OUT/peers.json             # everything, ~1 min on an H100
    python3 benches/peers/peers.py --quick --only copy,norms --out $OUT/p.json  # --quick: ~30 s for all
    python3 benches/peers/peers.py --dry-run                          # no torch, no GPU

Everything runs in one process so that every ratio is against a copy ceiling measured in
the same run. Names for --only (letters of issue 4, item 7, also accepted):

  copy   (e) Copy-bandwidth ceiling: y.copy_(x) over 2 GiB fp32; GB/s = 2*bytes/time.
             Run first whenever chain or norms is selected: every GB/s after it is also
             given as % of this ceiling ("pct_copy").
  chain  (c) Seed experiment: x*2, *0.5, *2, ... (R multiplies, values stay finite) over
             1 GiB fp32, R in 1, 4, 16, 64, 256. torch eager is a Python loop of R ops (R
             kernels, timed as is); torch.compile should give one fused kernel. GB/s counts
             one read and one write of x; FLOP/s = R*N/time. A fused kernel that really does
             256 multiplies is compute-bound (~2 ms on an H100 against ~0.7 ms to copy), so we
             record the multiplies found in inductor's code and the time ratio R=256 / R=1,
             and set "compile_folded" if either says the chain was simplified away.
  norms  (d) Softmax along rows and RMSNorm (weight, eps=1e-5, statistics in fp32) over
             32768x4096, bf16 and fp32: torch eager, torch.compile, and Triton kernels in the
             tutorial style written below (one row per program, BLOCK = next_power_of_2(cols)),
             plus the same kernels on a persistent grid (SMs x occupancy programs striding
             over rows, as Triton's 02-fused-softmax tutorial launches). Before timing, each
             provider's output (poisoned with NaN where it takes an output buffer) is compared
             with torch eager in fp32 on the same (upcast) input: max abs and relative L2 error.
             GB/s = (read x + write y [+ read weight]) / time.
  user2d     The workloads of tilekit's user kernels written with 2-D tiles (tilekit-bench
             --only user2d / stencil), torch eager and torch.compile: the 5-point stencil
             8192^2 f32 (one halo tile, five slices on tilekit's side), a bf16 copy of 8192x8192
             (y.copy_(x); torch.compile of x.clone()), a transpose of 8192x8192
             (x.t().contiguous()), and the fused h = x + bias + residual, y = RMSNorm(h) * w
             over 32768x4096 (statistics in fp32, writing h and y). Each checked against an
             fp32 reference first. GB/s = bytes read + written once / time.
  train  (f) The training kernels' peers, torch eager and torch.compile, bf16 unless said:
             log_softmax 4096x50257; LayerNorm forward 32768x4096 (weight, bias, eps=1e-5);
             LayerNorm and RMSNorm backward 32768x4096 (dx, dgamma[, dbeta]: eager is
             aten's native_layer_norm_backward / autograd of the RMSNorm formula, compile
             the explicit backward formula); cross-entropy forward+backward 8192x50304
             (F.cross_entropy on fp32-upcast logits, mean, then .backward()). Each compiled
             result is compared with eager in fp32 (rel L2). GB/s counts the minimum
             traffic of the issue's table: log_softmax and LayerNorm forward read x and
             write y; the backward passes read x and dy and write dx (mean/rstd and the
             small vectors excluded); cross-entropy reads the logits and writes their
             gradient. Also SwiGLU forward 16384x11008 (F.silu(a) * b: read a and b, write
             y) and GELU (erf form) 16384x11008 (read x, write y). Triton peers in the
             tutorial style where a tutorial-shaped kernel exists (written below): log-softmax
             as two chunked passes with an online max/sum (the 02 tutorial's kernel for rows
             wider than one block), LayerNorm forward as tutorial 05's fused kernel, the
             cross-entropy loss and gradient as one row kernel with an online logsumexp,
             SwiGLU as a flat elementwise kernel.
  launch (a) Host launch overhead: torch.add(a, b, out=c) on 1-element tensors, 10k calls
             timed with a host clock (enqueue only, and until synchronize), median of trials;
             and a CUDA graph of 100 such ops, replayed: GPU time per kernel inside the graph.

Timing: CUDA events around each call after warm-up; median over repeats sized by time (about
1.5 s per point, 0.3 s with --quick). Inputs are random normal, never zeros, and rotated over
enough buffers that the working set is >= 4x the L2 when one call touches less. A failing
measurement or provider is recorded as {"error": ...} and the run goes on; the JSON is
rewritten after every measurement, so a run cut short keeps what it has.
"""
import argparse, datetime, functools, gc, json, math, os, platform, re, statistics, subprocess, sys, time, traceback

try:
    import torch
except ImportError:
    torch = None
try:
    import triton, triton.language as tl
except ImportError:
    triton = tl = None

ORDER = ["copy", "chain", "norms", "user2d", "train", "launch", "matmul", "epilogue", "awkward", "batched"]
LETTERS = {"e": "copy", "c": "chain", "d": "norms", "f": "train", "a": "launch", "m": "matmul"}
CHAIN_R = (1, 4, 16, 64, 256)
NORM_SHAPE = (32768, 4096)
EPS = 1e-5
GiB = 1 << 30
ROWS = []  # (measurement, provider, case, record) for the closing table


def err_str(e):
    return f"{type(e).__name__}: {e}"[:2000]


def row(meas, prov, case, rec):
    ROWS.append((meas, prov, case, rec))
    print(f"  {meas:7} {prov:18} {case:16} " + fmt(rec), flush=True)


def fmt(rec):
    if "error" in rec:
        return "ERROR " + rec["error"][:90]
    s = f"{rec['ms']:9.4f} ms" if "ms" in rec else ""
    for k, f in (("gbps", "{:8.0f} GB/s"), ("pct_copy", "{:5.1f}%"), ("tflops", "{:7.2f} TFLOP/s"),
                 ("us", "{:7.2f} us")):
        if k in rec:
            s += " " + f.format(rec[k])
    return s + (" " + rec["note"] if "note" in rec else "")


def rate(rec, nbytes, copy_gbps, flops=None):
    """Adds achieved GB/s (nbytes = bytes read + written once), % of the copy ceiling, TFLOP/s."""
    sec = rec["ms"] * 1e-3
    rec["bytes"], rec["gbps"] = nbytes, nbytes / sec / 1e9
    if copy_gbps:
        rec["pct_copy"] = 100.0 * rec["gbps"] / copy_gbps
    if flops:
        rec["tflops"] = flops / sec / 1e12
    return rec


class Bench:
    """Times fn(i) with CUDA events; i counts calls, so fn can rotate over input sets."""

    def __init__(self, quick):
        self.quick = quick
        self.rep_ms, self.warm_ms = (300.0, 50.0) if quick else (1500.0, 200.0)
        self.min_reps, self.max_reps = (5, 200) if quick else (10, 1000)
        props = torch.cuda.get_device_properties(0)
        self.l2 = getattr(props, "L2_cache_size", 0) or (50 << 20)

    def inputs(self, bytes_per_call, make):
        """make() enough input sets that rotating over them touches >= 4x L2."""
        n = 1 if bytes_per_call >= 4 * self.l2 else min(64, math.ceil(4 * self.l2 / bytes_per_call))
        return [make() for _ in range(n)]

    def time(self, fn):
        ev = lambda: torch.cuda.Event(enable_timing=True)
        fn(0); torch.cuda.synchronize()
        s, e = ev(), ev()
        s.record(); fn(1); e.record(); e.synchronize()
        est = max(s.elapsed_time(e), 1e-3)
        for i in range(min(int(self.warm_ms / est), 200)):
            fn(i)
        n = max(self.min_reps, min(self.max_reps, int(self.rep_ms / est)))
        pairs = [(ev(), ev()) for _ in range(n)]
        for i, (a, b) in enumerate(pairs):
            a.record(); fn(i); b.record()
        torch.cuda.synchronize()
        ts = sorted(a.elapsed_time(b) for a, b in pairs)
        return {"ms": statistics.median(ts), "ms_min": ts[0], "ms_p90": ts[int(0.9 * (n - 1))], "reps": n}


# ----------------------------------------------------------------------------- (e) copy
def m_copy(b, ctx):
    n = 2 * GiB // 4
    x, y = torch.randn(n, device="cuda"), torch.empty(n, device="cuda")
    rec = b.time(lambda i: y.copy_(x))
    if not torch.equal(x, y):
        raise RuntimeError("copy result differs from its input")
    rate(rec, 2 * n * 4, None)
    ctx["copy_gbps"] = rec["gbps"]
    row("copy", "torch copy_", "2 GiB fp32", rec)
    return rec


# ----------------------------------------------------------------------------- (c) chain
def make_chain(R):
    def chain(x):
        for k in range(R):
            x = x * (2.0 if k % 2 == 0 else 0.5)
        return x
    return chain


def inductor_muls(fn, x):
    """Compiles fn on x and counts 'tmpA = tmpB * ...' lines in the code inductor generated."""
    from torch._inductor.utils import run_and_get_code
    _, codes = run_and_get_code(fn, x)
    return len(re.findall(r"^\s*tmp\d+ = tmp\d+ \* \S+\s*$", "\n".join(codes), re.M))


def m_chain(b, ctx):
    n = GiB // 4
    nbytes = 2 * n * 4
    xs = b.inputs(nbytes, lambda: torch.randn(n, device="cuda"))
    out = {"n": n, "dtype": "float32", "bytes_counted": nbytes, "eager": {}, "compile": {}}
    for R in CHAIN_R:
        f = make_chain(R)
        expect = xs[0] * 2.0 if R % 2 else xs[0]
        for prov in ("eager", "compile"):
            rec = {}
            try:
                g = f
                if prov == "compile":
                    g = torch.compile(f, dynamic=False, fullgraph=True)
                    try:
                        rec["inductor_muls"] = inductor_muls(g, xs[0])
                    except Exception as e:
                        rec["inductor_muls_error"] = err_str(e)
                rec["exact"] = bool(torch.equal(g(xs[0]), expect))
                rec.update(b.time(lambda i: g(xs[i % len(xs)])))
                rate(rec, nbytes, ctx.get("copy_gbps"), flops=R * n)
                if prov == "eager":  # what the R kernels really moved
                    rec["gbps_actual_traffic"] = R * nbytes / (rec["ms"] * 1e-3) / 1e9
            except Exception as e:
                rec = {"error": err_str(e)}
            out[prov][str(R)] = rec
            row("chain", "torch " + prov, f"R={R}", rec)
        del expect
    c1, c256 = out["compile"].get("1", {}), out["compile"].get("256", {})
    if "ms" in c1 and "ms" in c256:
        ratio = c256["ms"] / c1["ms"]
        muls = c256.get("inductor_muls")
        by_code = None if not muls else muls < 256  # 0 matches: the pattern missed, say nothing
        by_time = ratio < 1.3  # 256 fp32 multiplies/element cost ~2.8x a copy on an H100
        out["compile_time_ratio_256_vs_1"] = ratio
        out["compile_folded"] = bool(by_code) or by_time
        out["compile_fold_evidence"] = f"inductor muls at R=256: {muls}; time ratio 256/1: {ratio:.2f}"
        print(f"  chain   compile folded: {out['compile_folded']} ({out['compile_fold_evidence']})")
    return out


# ----------------------------------------------------------------------------- (d) norms
if triton is not None:
    @triton.jit
    def softmax_rows(x_ptr, y_ptr, x_stride, y_stride, n_rows, n_cols,
                     BLOCK: tl.constexpr, STAGES: tl.constexpr):
        # Program p takes rows p, p + P, ... (P = grid size): exactly one row when P = n_rows.
        cols = tl.arange(0, BLOCK)
        inb = cols < n_cols
        for r in tl.range(tl.program_id(0), n_rows, tl.num_programs(0), num_stages=STAGES):
            r64 = r.to(tl.int64)
            v = tl.load(x_ptr + r64 * x_stride + cols, mask=inb, other=-float("inf")).to(tl.float32)
            num = tl.exp(v - tl.max(v, axis=0))
            out = num / tl.sum(num, axis=0)
            tl.store(y_ptr + r64 * y_stride + cols, out.to(y_ptr.dtype.element_ty), mask=inb)

    @triton.jit
    def rmsnorm_rows(x_ptr, w_ptr, y_ptr, x_stride, y_stride, n_rows, n_cols, eps,
                     BLOCK: tl.constexpr, STAGES: tl.constexpr):
        cols = tl.arange(0, BLOCK)
        inb = cols < n_cols
        w = tl.load(w_ptr + cols, mask=inb, other=0.0).to(tl.float32)
        for r in tl.range(tl.program_id(0), n_rows, tl.num_programs(0), num_stages=STAGES):
            r64 = r.to(tl.int64)
            v = tl.load(x_ptr + r64 * x_stride + cols, mask=inb, other=0.0).to(tl.float32)
            rstd = tl.rsqrt(tl.sum(v * v, axis=0) / n_cols + eps)
            tl.store(y_ptr + r64 * y_stride + cols, (v * rstd * w).to(y_ptr.dtype.element_ty), mask=inb)

_GRID_CACHE = {}


def persistent_grid(kernel, args, block, warps):
    """(programs, stages, note): SMs x occupancy from the compiled kernel's registers and
    shared memory, and 4 pipeline stages where shared memory is large, as the tutorial does."""
    key = (id(kernel), str(args[0].dtype), block)
    if key not in _GRID_CACHE:
        dev = torch.cuda.current_device()
        sms = torch.cuda.get_device_properties(dev).multi_processor_count
        try:
            p = triton.runtime.driver.active.utils.get_device_properties(dev)
            stages = 4 if p["max_shared_mem"] > 200_000 else 2
            k = kernel.warmup(*args, BLOCK=block, STAGES=stages, num_warps=warps, grid=(1,))
            k._init_handles()
            occ = p["max_num_regs"] // (k.n_regs * p["warpSize"] * warps)
            if k.metadata.shared:
                occ = min(occ, p["max_shared_mem"] // k.metadata.shared)
            occ = max(occ, 1)
            _GRID_CACHE[key] = (sms * occ, stages, f"grid {sms}x{occ}, {k.n_regs} regs, {stages} stages")
        except Exception as e:
            _GRID_CACHE[key] = (sms * 4, 2, f"grid {sms}x4, 2 stages (fallback: {err_str(e)[:80]})")
    return _GRID_CACHE[key]


def triton_rows(kernel, with_w, persistent, x, w, out=None):
    """Launches a row kernel: one program per row, or a persistent grid striding over rows."""
    M, N = x.shape
    y = torch.empty_like(x) if out is None else out
    block, warps = triton.next_power_of_2(N), 8
    args = ([x, w, y] if with_w else [x, y]) + [x.stride(0), y.stride(0), M, N] + ([EPS] if with_w else [])
    grid, stages = M, 1  # one row per program
    if persistent:
        grid, stages, _ = persistent_grid(kernel, args, block, warps)
        grid = min(M, grid)
    kernel[(grid,)](*args, BLOCK=block, STAGES=stages, num_warps=warps)
    return y


def rms_formula(x, w, out=None):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS) * w.float()).to(x.dtype)


def norm_providers():
    sm = lambda x, w, out=None: torch.softmax(x, dim=-1)
    sm_c = torch.compile(lambda x: torch.softmax(x, dim=-1), dynamic=False)
    rms_c = torch.compile(rms_formula, dynamic=False)
    rms_f = (lambda x, w, out=None: torch.nn.functional.rms_norm(x, (x.shape[-1],), w, EPS)) \
        if hasattr(torch.nn.functional, "rms_norm") else rms_formula
    provs = {
        "softmax": {"eager": sm, "compile": lambda x, w, out=None: sm_c(x)},
        "rmsnorm": {"eager": rms_f, "eager_formula": rms_formula, "compile": lambda x, w, out=None: rms_c(x, w)},
    }
    if triton is not None:
        for op, kern in (("softmax", softmax_rows), ("rmsnorm", rmsnorm_rows)):
            provs[op]["triton"] = functools.partial(triton_rows, kern, op == "rmsnorm", False)
            provs[op]["triton_persistent"] = functools.partial(triton_rows, kern, op == "rmsnorm", True)
    return provs


def m_norms(b, ctx):
    M, N = NORM_SHAPE
    res = {"shape": [M, N], "eps": EPS, "triton": triton.__version__ if triton else "not importable"}
    for op, provs in norm_providers().items():
        res[op] = {}
        for dt_name, dt in (("bf16", torch.bfloat16), ("fp32", torch.float32)):
            es = torch.finfo(dt).bits // 8
            nbytes = 2 * M * N * es + (N * es if op == "rmsnorm" else 0)
            xs = b.inputs(2 * M * N * es, lambda: torch.randn(M, N, device="cuda", dtype=dt))
            w = (1.0 + 0.1 * torch.randn(N, device="cuda")).to(dt)
            x0 = torch.randn(M, N, device="cuda", dtype=dt)  # fresh input for the check
            ref = (torch.softmax(x0.float(), dim=-1) if op == "softmax" else rms_formula(x0.float(), w.float()))
            res[op][dt_name] = {}
            for name, f in provs.items():
                rec = {}
                try:
                    y = f(x0, w, out=torch.full_like(x0, float("nan")))
                    d = y.float() - ref
                    rec["max_abs_err"] = d.abs().max().item()
                    rec["rel_l2_err"] = (d.norm() / ref.norm()).item()
                    rec["ok"] = math.isfinite(rec["rel_l2_err"]) and rec["rel_l2_err"] < (1e-5 if dt_name == "fp32" else 1e-2)
                    print(f"  verify  {op} {dt_name} {name}: max abs err {rec['max_abs_err']:.3e}, "
                          f"rel L2 {rec['rel_l2_err']:.3e} {'ok' if rec['ok'] else 'FAILED'}", flush=True)
                    del y, d
                    rec.update(b.time(lambda i: f(xs[i % len(xs)], w)))
                    rate(rec, nbytes, ctx.get("copy_gbps"))
                    if name == "triton_persistent":
                        kern = softmax_rows if op == "softmax" else rmsnorm_rows
                        rec["note"] = _GRID_CACHE.get((id(kern), str(dt), triton.next_power_of_2(N)), (0, 0, ""))[2]
                    if not rec["ok"]:
                        rec["note"] = (rec.get("note", "") + " WRONG RESULT").strip()
                except Exception as e:
                    rec = {"error": err_str(e)}
                res[op][dt_name][name] = rec
                row("norms", name, f"{op} {dt_name}", rec)
            del xs, x0, ref
            gc.collect(); torch.cuda.empty_cache()
    return res


# ----------------------------------------------------------------------------- user2d
USER2D_SQUARE = 8192


def add_rmsnorm(x, bias, res, w):
    """h = x + bias + residual (bf16, as torch rounds each add); y = RMSNorm(h) * w."""
    h = x + bias + res
    hf = h.float()
    y = (hf * torch.rsqrt(hf.pow(2).mean(-1, keepdim=True) + EPS) * w.float()).to(x.dtype)
    return h, y


def m_user2d(b, ctx):
    dt, es = torch.bfloat16, 2
    res = {"square": USER2D_SQUARE, "norm_shape": list(NORM_SHAPE)}
    n = USER2D_SQUARE
    xs = b.inputs(n * n * es, lambda: torch.randn(n, n, device="cuda", dtype=dt))
    y = torch.empty(n, n, device="cuda", dtype=dt)
    clone_c = torch.compile(lambda x: x.clone(), dynamic=False)
    tr = lambda x: x.t().contiguous()
    tr_c = torch.compile(tr, dynamic=False)
    cases = {
        "copy": {"eager": lambda x: y.copy_(x), "compile": clone_c},
        "transpose": {"eager": tr, "compile": tr_c},
    }
    for case, provs in cases.items():
        res[case] = {}
        for name, f in provs.items():
            try:
                want = xs[0].t() if case == "transpose" else xs[0]
                if not torch.equal(f(xs[0]), want):
                    raise RuntimeError(f"{case} {name}: wrong result")
                rec = rate(b.time(lambda i: f(xs[i % len(xs)])), 2 * n * n * es, ctx.get("copy_gbps"))
            except Exception as e:
                rec = {"error": err_str(e)}
            res[case][name] = rec
            row("user2d", name, f"{case} {n}^2 bf16", rec)
    del xs, y
    gc.collect(); torch.cuda.empty_cache()
    M, N = NORM_SHAPE
    sets = b.inputs(2 * M * N * es, lambda: (torch.randn(M, N, device="cuda", dtype=dt),
                                               torch.randn(M, N, device="cuda", dtype=dt)))
    bias = torch.randn(N, device="cuda", dtype=dt)
    w = (1.0 + 0.1 * torch.randn(N, device="cuda")).to(dt)
    fused_c = torch.compile(add_rmsnorm, dynamic=False)
    x0, r0 = sets[0]
    hf = x0.float() + bias.float() + r0.float()
    ref = hf * torch.rsqrt(hf.pow(2).mean(-1, keepdim=True) + EPS) * w.float()
    res["add_rmsnorm"] = {}
    nbytes = 4 * M * N * es + 2 * N * es
    for name, f in (("eager", add_rmsnorm), ("compile", fused_c)):
        rec = {}
        try:
            _, yy = f(x0, bias, r0, w)
            d = yy.float() - ref
            rec["rel_l2_err"] = (d.norm() / ref.norm()).item()
            rec["ok"] = math.isfinite(rec["rel_l2_err"]) and rec["rel_l2_err"] < 1e-2
            del yy, d
            rec.update(b.time(lambda i: f(sets[i % len(sets)][0], bias, sets[i % len(sets)][1], w)))
            rate(rec, nbytes, ctx.get("copy_gbps"))
            if not rec["ok"]:
                rec["note"] = "WRONG RESULT"
        except Exception as e:
            rec = {"error": err_str(e)}
        res["add_rmsnorm"][name] = rec
        row("user2d", name, f"add_rmsnorm {M}x{N} bf16", rec)
    del sets
    gc.collect(); torch.cuda.empty_cache()
    res["stencil"] = m_stencil(b, ctx)
    res["rotary"] = m_rotary(b, ctx)
    return res


def stencil5(x):
    """y = 4 x - (north + south + west + east), 0 outside x (tilekit's user `stencil5`)."""
    p = torch.nn.functional.pad(x, (1, 1, 1, 1))
    return 4 * x - p[:-2, 1:-1] - p[2:, 1:-1] - p[1:-1, :-2] - p[1:-1, 2:]


def eager_and_compiled(b, ctx, label, fn, xs, extra, nbytes, tol):
    """`fn(x, *extra)` eager and torch.compile'd (dynamic=False) over the input sets `xs`
    (used in turn), each checked against eager on the first set (`tol`: atol, rtol) and
    timed; GB/s of `nbytes` per call. One row per provider under `user2d`."""
    out = {}
    compiled = torch.compile(fn, dynamic=False)
    want = fn(xs[0], *extra).float()
    for name, f in (("eager", fn), ("compile", compiled)):
        try:
            if not torch.allclose(f(xs[0], *extra).float(), want, atol=tol[0], rtol=tol[1]):
                raise RuntimeError(f"{label} {name}: wrong result")
            rec = rate(b.time(lambda i: f(xs[i % len(xs)], *extra)), nbytes, ctx.get("copy_gbps"))
        except Exception as e:
            rec = {"error": err_str(e)}
        out[name] = rec
        row("user2d", name, label, rec)
    return out


def m_stencil(b, ctx):
    """The 5-point stencil at 8192^2 f32, eager and torch.compile (dynamic=False); bytes
    counted as tilekit's: x read once, y written once."""
    n, es = USER2D_SQUARE, 4
    xs = b.inputs(n * n * es, lambda: torch.randn(n, n, device="cuda", dtype=torch.float32))
    out = eager_and_compiled(b, ctx, f"stencil5 {n}^2 f32", stencil5, xs, (), 2 * n * n * es,
                             (1e-5, 1e-5))
    del xs
    gc.collect(); torch.cuda.empty_cache()
    return out


def rotary3d(x, cos, sin):
    """Rotate-half rotary embedding of x [S, H, D] with cos / sin [S, D / 2] broadcast over
    the heads, in f32, rounded to x's type (tilekit's user `rotary3d`)."""
    h = x.shape[-1] // 2
    lo, hi = x[..., :h].float(), x[..., h:].float()
    c, s = cos.float()[:, None, :], sin.float()[:, None, :]
    return torch.cat([lo * c - hi * s, hi * c + lo * s], -1).to(x.dtype)


def m_rotary(b, ctx):
    """The rotary embedding at [16384, 32, 128] bf16, eager and torch.compile
    (dynamic=False); bytes counted as tilekit's: x read once, y written once, cos and sin
    read once."""
    S, H, D, es = 16384, 32, 128, 2
    xs = b.inputs(S * H * D * es, lambda: torch.randn(S, H, D, device="cuda", dtype=torch.bfloat16))
    cos = torch.randn(S, D // 2, device="cuda", dtype=torch.bfloat16)
    sin = torch.randn(S, D // 2, device="cuda", dtype=torch.bfloat16)
    out = eager_and_compiled(b, ctx, f"rotary3d {S}x{H}x{D} bf16", rotary3d, xs, (cos, sin),
                             (2 * S * H * D + S * D) * es, (3e-2, 2e-2))
    del xs
    gc.collect(); torch.cuda.empty_cache()
    return out


# ----------------------------------------------------------------------------- (a) launch
def m_launch(b, ctx):
    a, bb, c = (torch.randn(1, device="cuda") for _ in range(3))
    calls, trials = 10_000, (3 if b.quick else 7)
    for _ in range(1000):
        torch.add(a, bb, out=c)  # warm-up
    torch.cuda.synchronize()
    enq, tot = [], []
    for _ in range(trials):
        t0 = time.perf_counter()
        for _ in range(calls):
            torch.add(a, bb, out=c)
        t1 = time.perf_counter(); torch.cuda.synchronize(); t2 = time.perf_counter()
        enq.append((t1 - t0) / calls * 1e6); tot.append((t2 - t0) / calls * 1e6)
    res = {"op": "torch.add(a, b, out=c), 1 element fp32", "calls": calls, "trials": trials,
           "host_us_per_call_enqueue": statistics.median(enq), "host_us_per_call_to_sync": statistics.median(tot),
           "host_us_enqueue_all": enq}
    row("launch", "torch eager", "host/call", {"us": res["host_us_per_call_enqueue"], "note": "(enqueue)"})
    row("launch", "torch eager", "host/call", {"us": res["host_us_per_call_to_sync"], "note": "(to sync)"})
    try:
        ops, s = 100, torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):  # warm-up on a side stream before capture, as PyTorch advises
            for _ in range(3):
                torch.add(a, bb, out=c)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(ops):
                torch.add(a, bb, out=c)
        rec = b.time(lambda i: g.replay())  # GPU time of one replay
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(200):
            g.replay()
        t1 = time.perf_counter(); torch.cuda.synchronize()
        rec.update({"ops_per_graph": ops, "us": rec["ms"] * 1e3 / ops, "gpu_us_per_kernel": rec["ms"] * 1e3 / ops,
                    "host_us_per_replay_enqueue": (t1 - t0) / 200 * 1e6})
        res["graph"] = rec
        row("launch", "cuda graph", f"{ops} ops, /kernel", {"us": rec["us"], "note": "(GPU time in replay)"})
    except Exception as e:
        res["graph"] = {"error": err_str(e)}
        row("launch", "cuda graph", "replay", res["graph"])
    return res


# ----------------------------------------------------------------------------- (m) matmul
def m_matmul(b, ctx):
    """cuBLAS (torch.matmul) bf16 8192^3 / 4096^3 / 1000^3, fp16 4096^3, tf32 4096^3 (allow_tf32),
    and exact f32 4096^3 (SGEMM, allow_tf32 False: the peer of tilekit's FMA engine)."""
    out = {}
    for dt, n in (("bf16", 8192), ("bf16", 4096), ("bf16", 1000), ("fp16", 4096), ("tf32", 4096), ("f32", 4096)):
        dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "tf32": torch.float32, "f32": torch.float32}[dt]
        torch.backends.cuda.matmul.allow_tf32 = dt == "tf32"
        x = torch.randn(n, n, device="cuda", dtype=dtype)
        y = torch.randn(n, n, device="cuda", dtype=dtype)
        z = torch.empty(n, n, device="cuda", dtype=dtype)
        rec = b.time(lambda i: torch.matmul(x, y, out=z))
        rate(rec, 3 * n * n * x.element_size(), None, flops=2.0 * n ** 3)
        row("matmul", "cuBLAS", f"{dt} {n}^3", rec)
        out[f"cublas_{dt}_{n}"] = rec
    torch.backends.cuda.matmul.allow_tf32 = False
    return out



# ----------------------------------------------------------------------------- awkward
AWKWARD_SHAPES = ((4097, 4097, 4097), (8192, 768, 50257), (1000, 1000, 1000))


def m_awkward(b, ctx):
    """cuBLAS (torch.matmul) bf16 at the awkward shapes of issue 10 (M x K x N): rows not
    16-byte aligned (4097, 50257) and a small aligned one; a user's hand padding (copy
    into 64-multiple buffers, cuBLAS, slice; the copies timed with it); and
    `torch.compile(dynamic=False)` of `a @ b`, which pads by itself."""
    out = {}
    pad = lambda v: (v + 63) // 64 * 64
    for m, k, n in AWKWARD_SHAPES:
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
        c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        flops = 2.0 * m * n * k
        rec = b.time(lambda i: torch.matmul(a, w, out=c))
        rate(rec, (m * k + k * n + m * n) * 2, None, flops=flops)
        row("awkward", "cuBLAS", f"bf16 {m}x{k}x{n}", rec)
        out[f"cublas {m}x{k}x{n}"] = rec
        ap = torch.zeros(m, pad(k), device="cuda", dtype=torch.bfloat16)
        wp = torch.zeros(pad(k), pad(n), device="cuda", dtype=torch.bfloat16)

        def padded(i):
            ap[:, :k].copy_(a)
            wp[:k, :n].copy_(w)
            return (ap @ wp)[:, :n]
        rec = b.time(padded)
        rate(rec, (m * k + k * n + m * n) * 2, None, flops=flops)
        row("awkward", "hand-padded cuBLAS", f"bf16 {m}x{k}x{n}", rec)
        out[f"hand-padded {m}x{k}x{n}"] = rec
        # torch.compile with static shapes: inductor pads the operands itself (pad_mm).
        try:
            torch._dynamo.reset()
            f = torch.compile(lambda x, y: x @ y, dynamic=False)
            f(a, w)
            rec = b.time(lambda i: f(a, w))
            rate(rec, (m * k + k * n + m * n) * 2, None, flops=flops)
        except Exception as e:  # noqa: BLE001 - recorded, not fatal
            rec = {"error": err_str(e)}
        row("awkward", "torch.compile", f"bf16 {m}x{k}x{n}", rec)
        out[f"compile {m}x{k}x{n}"] = rec
        del a, w, c, ap, wp
        gc.collect(); torch.cuda.empty_cache()
    return out


# ----------------------------------------------------------------------------- batched
BATCHED_SHAPE = (32, 512, 512, 512)


def m_batched(b, ctx):
    """torch.bmm (cuBLAS batched) bf16 at Z x M x K x N = 32 x 512 x 512 x 512, and
    torch.compile of the same bmm."""
    z, m, k, n = BATCHED_SHAPE
    a = torch.randn(z, m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(z, k, n, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(z, m, n, device="cuda", dtype=torch.bfloat16)
    flops = 2.0 * z * m * n * k
    nbytes = (z * m * k + z * k * n + z * m * n) * 2
    out = {}
    rec = b.time(lambda i: torch.bmm(a, w, out=c))
    rate(rec, nbytes, None, flops=flops)
    row("batched", "torch.bmm", f"bf16 {z}x{m}x{k}x{n}", rec)
    out["bmm"] = rec
    try:
        f = torch.compile(lambda x, y: torch.bmm(x, y))
        f(a, w)
        rec = b.time(lambda i: f(a, w))
        rate(rec, nbytes, None, flops=flops)
    except Exception as e:  # noqa: BLE001 - recorded, not fatal
        rec = {"error": err_str(e)}
    row("batched", "compile", f"bf16 {z}x{m}x{k}x{n}", rec)
    out["compile"] = rec
    return out


# ----------------------------------------------------------------------------- epilogue
EPILOGUE_SHAPES = ((8192, 768, 3072), (4097, 4097, 4097))


def m_epilogue(b, ctx):
    """matmul + bias + GELU (tanh) in bf16 at M x K x N: torch eager (cuBLAS, then bias and
    GELU kernels), torch.compile, and cuBLASLt's fused epilogue (torch._addmm_activation with
    use_gelu=True, the tanh form); results checked against eager. torch.compile with
    `dynamic=False`, compiled afresh for each shape (one compiled function reused across
    the shapes recompiled the second as a dynamic-shape graph, which inductor does not pad:
    ~128 TFLOP/s at 4097^3 where the static graph reached 535, issue 27)."""
    import torch.nn.functional as F
    out = {}
    fused = lambda a, w, bias: F.gelu(a @ w + bias, approximate="tanh")
    for m, k, n in EPILOGUE_SHAPES:
        compiled = torch.compile(fused, dynamic=False)
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(k, n, device="cuda", dtype=torch.bfloat16) / math.sqrt(k)
        bias = torch.randn(n, device="cuda", dtype=torch.bfloat16)
        ref = fused(a, w, bias).float()
        flops = 2.0 * m * n * k
        for prov, fn in (("eager", fused), ("compile", compiled),
                         ("cuBLASLt epilogue", lambda a, w, bias: torch._addmm_activation(bias, a, w, use_gelu=True))):
            try:
                got = fn(a, w, bias).float()
                err = (got - ref).abs().max().item()
                rec = b.time(lambda i: fn(a, w, bias))
                rate(rec, (m * k + k * n + n + m * n) * 2, None, flops=flops)
                rec["max_abs_err_vs_eager"] = err
            except Exception as e:  # noqa: BLE001 - report and go on
                rec = {"error": err_str(e)}
            row("epilogue", prov, f"bias+gelu {m}x{k}x{n}", rec)
            out[f"{prov} {m}x{k}x{n}"] = rec
        del a, w, bias, ref
        gc.collect(); torch.cuda.empty_cache()
    # Linear then BatchNorm1d (eval: running statistics), bf16, as tilekit's
    # linear_batchnorm folds them: eager and torch.compile of the pair.
    m, k, n = FOLDED_BN_SHAPE
    lin = torch.nn.Linear(k, n, device="cuda", dtype=torch.bfloat16)
    bn = torch.nn.BatchNorm1d(n, device="cuda", dtype=torch.bfloat16).eval()
    with torch.no_grad():
        bn.running_mean.uniform_(-0.5, 0.5); bn.running_var.uniform_(0.5, 1.5)
        bn.weight.uniform_(0.5, 1.5); bn.bias.uniform_(-0.5, 0.5)
    pair = lambda x: bn(lin(x))
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        for prov, fn in (("eager", pair), ("compile", torch.compile(pair, dynamic=False))):
            try:
                rec = b.time(lambda i: fn(x))
                rate(rec, (m * k + k * n + m * n) * 2, None, flops=2.0 * m * n * k)
            except Exception as e:  # noqa: BLE001 - report and go on
                rec = {"error": err_str(e)}
            row("epilogue", prov, f"linear+batchnorm {m}x{k}x{n}", rec)
            out[f"{prov} linear+batchnorm {m}x{k}x{n}"] = rec
    return out


FOLDED_BN_SHAPE = (8192, 4096, 4096)


# ----------------------------------------------------------------------------- (f) train
LOGSOFTMAX_SHAPE = (4096, 50257)
CE_SHAPE = (8192, 50304)


def rms_bwd_formula(x, w, dy):
    xf, g = x.float(), dy.float() * w.float()
    rstd = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS)
    xh = xf * rstd
    dx = rstd * (g - xh * (g * xh).mean(-1, keepdim=True))
    return dx.to(x.dtype), (dy.float() * xh).sum(0).to(w.dtype)


def ln_bwd_formula(x, w, dy, mean, rstd):
    xh = (x.float() - mean) * rstd
    g = dy.float() * w.float()
    dx = rstd * (g - g.mean(-1, keepdim=True) - xh * (g * xh).mean(-1, keepdim=True))
    return dx.to(x.dtype), (dy.float() * xh).sum(0).to(w.dtype), dy.float().sum(0).to(w.dtype)


SWIGLU_SHAPE = (16384, 11008)

if triton is not None:
    @triton.jit
    def _online_lse(xr, n_cols, BLOCK: tl.constexpr):
        """logsumexp of one row by chunks: per-lane running max and rescaled sum."""
        m = tl.full([BLOCK], -float("inf"), tl.float32)
        s = tl.zeros([BLOCK], tl.float32)
        for start in range(0, n_cols, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            v = tl.load(xr + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
            m_new = tl.maximum(m, v)
            m_safe = tl.where(m_new == -float("inf"), 0.0, m_new)
            s = s * tl.exp(m - m_safe) + tl.exp(v - m_safe)
            m = m_new
        mx = tl.max(m, axis=0)
        return mx + tl.log(tl.sum(s * tl.exp(m - mx), axis=0))

    @triton.jit
    def log_softmax_chunked(x_ptr, y_ptr, x_stride, y_stride, n_cols, BLOCK: tl.constexpr):
        r = tl.program_id(0).to(tl.int64)
        lse = _online_lse(x_ptr + r * x_stride, n_cols, BLOCK)
        for start in range(0, n_cols, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            inb = cols < n_cols
            v = tl.load(x_ptr + r * x_stride + cols, mask=inb, other=0.0).to(tl.float32)
            tl.store(y_ptr + r * y_stride + cols, (v - lse).to(y_ptr.dtype.element_ty), mask=inb)

    @triton.jit
    def cross_entropy_rows(x_ptr, g_ptr, lab_ptr, loss_ptr, x_stride, g_stride, n_cols, scale,
                           BLOCK: tl.constexpr):
        r = tl.program_id(0).to(tl.int64)
        lab = tl.load(lab_ptr + r)
        lse = _online_lse(x_ptr + r * x_stride, n_cols, BLOCK)
        x_lab = tl.load(x_ptr + r * x_stride + lab).to(tl.float32)
        tl.store(loss_ptr + r, lse - x_lab)
        for start in range(0, n_cols, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            inb = cols < n_cols
            v = tl.load(x_ptr + r * x_stride + cols, mask=inb, other=0.0).to(tl.float32)
            g = (tl.exp(v - lse) - tl.where(cols == lab, 1.0, 0.0)) * scale
            tl.store(g_ptr + r * g_stride + cols, g.to(g_ptr.dtype.element_ty), mask=inb)

    @triton.jit
    def layer_norm_fwd(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
        # Tutorial 05's fused forward: mean, then variance, then normalize, by chunks.
        row = tl.program_id(0).to(tl.int64)
        Y += row * stride
        X += row * stride
        _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
        for off in range(0, N, BLOCK_SIZE):
            cols = off + tl.arange(0, BLOCK_SIZE)
            a = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
            _mean += a
        mean = tl.sum(_mean, axis=0) / N
        _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
        for off in range(0, N, BLOCK_SIZE):
            cols = off + tl.arange(0, BLOCK_SIZE)
            x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
            x = tl.where(cols < N, x - mean, 0.)
            _var += x * x
        var = tl.sum(_var, axis=0) / N
        rstd = 1 / tl.sqrt(var + eps)
        tl.store(Mean + row, mean)
        tl.store(Rstd + row, rstd)
        for off in range(0, N, BLOCK_SIZE):
            cols = off + tl.arange(0, BLOCK_SIZE)
            mask = cols < N
            w = tl.load(W + cols, mask=mask)
            b = tl.load(B + cols, mask=mask)
            x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)
            y = (x - mean) * rstd * w + b
            tl.store(Y + cols, y.to(Y.dtype.element_ty), mask=mask)

    @triton.jit
    def swiglu_flat(a_ptr, b_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        inb = offs < n
        a = tl.load(a_ptr + offs, mask=inb, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + offs, mask=inb, other=0.0).to(tl.float32)
        tl.store(y_ptr + offs, (a * tl.sigmoid(a) * b).to(y_ptr.dtype.element_ty), mask=inb)


def tr_log_softmax(x):
    y = torch.empty_like(x)
    log_softmax_chunked[(x.shape[0],)](x, y, x.stride(0), y.stride(0), x.shape[1], BLOCK=4096, num_warps=8)
    return y


def tr_cross_entropy(a):
    x, lab = a
    g = torch.empty_like(x, requires_grad=False)
    loss = torch.empty(x.shape[0], device=x.device, dtype=torch.float32)
    cross_entropy_rows[(x.shape[0],)](x.detach(), g, lab, loss, x.stride(0), g.stride(0), x.shape[1],
                                      1.0 / x.shape[0], BLOCK=4096, num_warps=8)
    return g


def tr_layer_norm(x, w, b):
    M, N = x.shape
    y = torch.empty_like(x)
    mean = torch.empty(M, device=x.device, dtype=torch.float32)
    rstd = torch.empty(M, device=x.device, dtype=torch.float32)
    block = min(65536 // x.element_size(), triton.next_power_of_2(N))
    warps = min(max(block // 256, 1), 8)
    layer_norm_fwd[(M,)](x, y, w, b, mean, rstd, x.stride(0), N, EPS, BLOCK_SIZE=block, num_warps=warps)
    return y


def tr_swiglu(a, b):
    y = torch.empty_like(a)
    n = a.numel()
    swiglu_flat[(triton.cdiv(n, 1024),)](a, b, y, n, BLOCK=1024, num_warps=4)
    return y


def rms_bwd_eager(x, w, dy):
    xr, wr = x.detach().requires_grad_(), w.detach().requires_grad_()
    return torch.autograd.grad(rms_formula(xr, wr), (xr, wr), dy)


def train_cases():
    """(name, shape, nbytes per call with element size es, make inputs, {provider: fn(inputs)})."""
    F = torch.nn.functional
    ls_c = torch.compile(lambda x: torch.log_softmax(x, dim=-1), dynamic=False)
    ln_f = lambda x, w, b: F.layer_norm(x, (x.shape[-1],), w, b, EPS)
    ln_c = torch.compile(ln_f, dynamic=False)
    rmsb_c = torch.compile(rms_bwd_formula, dynamic=False)
    lnb_c = torch.compile(ln_bwd_formula, dynamic=False)
    ce_f = lambda x, y: F.cross_entropy(x.float(), y)
    ce_c = torch.compile(ce_f, dynamic=False)

    def ce_step(fn):
        def run(a):
            x, y = a
            x.grad = None
            fn(x, y).backward()
            return x.grad
        return run

    def ln_stats(x):
        xf = x.float()
        return xf.mean(-1, keepdim=True), torch.rsqrt(xf.var(-1, unbiased=False, keepdim=True) + EPS)

    def vec(n, dt):
        return (1.0 + 0.1 * torch.randn(n, device="cuda")).to(dt)

    swiglu_f = lambda a, b: F.silu(a) * b
    swiglu_c = torch.compile(swiglu_f, dynamic=False)
    gelu_c = torch.compile(lambda x: F.gelu(x), dynamic=False)
    tri = triton is not None
    M, N = NORM_SHAPE
    cases = [
        ("log_softmax", LOGSOFTMAX_SHAPE, lambda M, N, es: 2 * M * N * es,
         lambda M, N, dt: (torch.randn(M, N, device="cuda", dtype=dt),),
         {"eager": lambda a: torch.log_softmax(a[0], dim=-1), "compile": lambda a: ls_c(a[0])}),
        ("layernorm", NORM_SHAPE, lambda M, N, es: 2 * M * N * es,
         lambda M, N, dt: (torch.randn(M, N, device="cuda", dtype=dt), vec(N, dt), vec(N, dt)),
         {"eager": lambda a: ln_f(*a), "compile": lambda a: ln_c(*a)}),
        ("layernorm_bwd", NORM_SHAPE, lambda M, N, es: 3 * M * N * es,
         lambda M, N, dt: (lambda x: (x, vec(N, dt), torch.randn(M, N, device="cuda", dtype=dt)) + ln_stats(x))(
             torch.randn(M, N, device="cuda", dtype=dt)),
         {"eager": lambda a: torch.ops.aten.native_layer_norm_backward(
             a[2], a[0], [a[0].shape[-1]], a[3], a[4], a[1], a[1], [True, True, True]),
          "compile": lambda a: lnb_c(a[0], a[1], a[2], a[3], a[4])}),
        ("rmsnorm_bwd", NORM_SHAPE, lambda M, N, es: 3 * M * N * es,
         lambda M, N, dt: (torch.randn(M, N, device="cuda", dtype=dt), vec(N, dt),
                           torch.randn(M, N, device="cuda", dtype=dt)),
         {"eager": lambda a: rms_bwd_eager(*a), "compile": lambda a: rmsb_c(*a)}),
        ("cross_entropy", CE_SHAPE, lambda M, N, es: 2 * M * N * es,
         lambda M, N, dt: (torch.randn(M, N, device="cuda", dtype=dt).requires_grad_(),
                           torch.randint(0, N, (M,), device="cuda")),
         {"eager": ce_step(ce_f), "compile": ce_step(ce_c)}),
        ("swiglu", SWIGLU_SHAPE, lambda M, N, es: 3 * M * N * es,
         lambda M, N, dt: (torch.randn(M, N, device="cuda", dtype=dt), torch.randn(M, N, device="cuda", dtype=dt)),
         {"eager": lambda a: swiglu_f(*a), "compile": lambda a: swiglu_c(*a)}),
        ("gelu", SWIGLU_SHAPE, lambda M, N, es: 2 * M * N * es,
         lambda M, N, dt: (torch.randn(M, N, device="cuda", dtype=dt),),
         {"eager": lambda a: F.gelu(a[0]), "compile": lambda a: gelu_c(a[0])}),
    ]
    if tri:
        extra = {"log_softmax": lambda a: tr_log_softmax(a[0]), "layernorm": lambda a: tr_layer_norm(*a),
                 "cross_entropy": tr_cross_entropy, "swiglu": lambda a: tr_swiglu(*a)}
        for name, _, _, _, provs in cases:
            if name in extra:
                provs["triton"] = extra[name]
    return cases


def first(out):
    return out[0] if isinstance(out, (tuple, list)) else out


def m_train(b, ctx):
    res = {}
    # PEERS_TRAIN_CASES=a,b: only those cases (e.g. layernorm_bwd), for a short device call.
    keep = [c for c in os.environ.get("PEERS_TRAIN_CASES", "").split(",") if c]
    for name, (M, N), nbytes_of, make, provs in train_cases():
        if keep and name not in keep:
            continue
        res[name] = {}
        for dt_name, dt in (("bf16", torch.bfloat16),) + ((("fp32", torch.float32),) if name == "layernorm" else ()):
            es = torch.finfo(dt).bits // 8
            nbytes = nbytes_of(M, N, es)
            sets = b.inputs(nbytes, lambda: make(M, N, dt))
            ref = first(provs["eager"](sets[0])).float()
            res[name][dt_name] = {}
            for prov, f in provs.items():
                rec = {}
                try:
                    d = first(f(sets[0])).float() - ref
                    rec["rel_l2_vs_eager"] = (d.norm() / ref.norm()).item()
                    rec["ok"] = math.isfinite(rec["rel_l2_vs_eager"]) and rec["rel_l2_vs_eager"] < 1e-2
                    del d
                    rec.update(b.time(lambda i: f(sets[i % len(sets)])))
                    rate(rec, nbytes, ctx.get("copy_gbps"))
                    if not rec["ok"]:
                        rec["note"] = "WRONG RESULT (vs eager)"
                except Exception as e:
                    rec = {"error": err_str(e)}
                res[name][dt_name][prov] = rec
                row("train", prov, f"{name} {dt_name}", rec)
            del sets, ref
            gc.collect(); torch.cuda.empty_cache()
    if not keep or "adamw" in keep:
        res["adamw"] = m_adamw(b, ctx)
    if not keep or "adamw" in keep or "adamw_list" in keep:
        res["adamw_list"] = m_adamw_list(b, ctx)
        res["adamw_master_list"] = m_adamw_master_list(b, ctx)
        res["sgd_list"] = m_sgd_list(b, ctx)
        res["clip_list"] = m_clip_list(b, ctx)
    res["shapes"] = {"log_softmax": LOGSOFTMAX_SHAPE, "norms": NORM_SHAPE, "cross_entropy": CE_SHAPE,
                     "swiglu": SWIGLU_SHAPE, "gelu": SWIGLU_SHAPE, "adamw": ADAMW_N}
    return res


ADAMW_N = 64 << 20


def m_adamw(b, ctx):
    """One AdamW step over 64 Mi f32 parameters (f32 gradient), as tilekit's `adamw`:
    `torch._fused_adamw_` (what AdamW(fused=True) launches), the foreach path, and
    torch.compile of the eager formula; 28 bytes per parameter."""
    n, out = ADAMW_N, {}
    lr, b1, b2, eps, wd = 1e-3, 0.9, 0.999, 1e-8, 0.01
    p, g = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    m, v = torch.zeros(n, device="cuda"), torch.zeros(n, device="cuda")
    step = torch.tensor(10.0, device="cuda")

    def fused(i):
        torch._fused_adamw_([p], [g], [m], [v], [], [step], lr=lr, beta1=b1, beta2=b2,
                            weight_decay=wd, eps=eps, amsgrad=False, maximize=False)

    def formula(p, g, m, v, t):
        p.mul_(1 - lr * wd)
        m.mul_(b1).add_(g, alpha=1 - b1)
        v.mul_(b2).addcmul_(g, g, value=1 - b2)
        denom = (v.sqrt() / math.sqrt(1 - b2 ** t)).add_(eps)
        p.addcdiv_(m, denom, value=-lr / (1 - b1 ** t))

    compiled = torch.compile(formula)
    for prov, fn in (("torch fused", fused), ("compile", lambda i: compiled(p, g, m, v, 10))):
        try:
            rec = b.time(fn)
            rate(rec, 28 * n, ctx.get("copy_gbps"))
        except Exception as e:  # noqa: BLE001 - report and go on
            rec = {"error": err_str(e)}
        row("train", prov, "adamw 64Mi f32", rec)
        out[prov] = rec
    del p, g, m, v
    gc.collect(); torch.cuda.empty_cache()
    return out


def gpt2_small_sizes():
    """GPT-2 small's parameter sizes (148 tensors, 124,439,808 parameters), in the order of
    tilekit-bench's `gpt2_small_sizes`."""
    d = 768
    sizes = [50257 * d, 1024 * d]
    for _ in range(12):
        sizes += [d, d, d * 3 * d, 3 * d, d * d, d, d, d, d * 4 * d, 4 * d, 4 * d * d, d]
    return sizes + [d, d]


def optimizer_list(b, ctx, label, bytes_per_param, make):
    """Times `opt.step()` over GPT-2 small's f32 parameter list (random gradients) for each
    `(provider, constructor keywords)`, as a user calls it (its host work included)."""
    sizes, out = gpt2_small_sizes(), {}
    n = sum(sizes)
    for prov, kw in (("torch fused", {"fused": True}), ("torch foreach", {"foreach": True})):
        try:
            params = [torch.nn.Parameter(torch.randn(k, device="cuda")) for k in sizes]
            for q in params:
                q.grad = torch.randn_like(q)
            opt = make(params, **kw)
            rec = b.time(lambda i: opt.step())
            rate(rec, bytes_per_param * n, ctx.get("copy_gbps"))
            rec["params"], rec["tensors"] = n, len(sizes)
            del opt, params
        except Exception as e:  # noqa: BLE001 - report and go on
            rec = {"error": err_str(e)}
        row("train", prov, label, rec)
        out[prov] = rec
        gc.collect(); torch.cuda.empty_cache()
    return out


def m_adamw_list(b, ctx):
    """One AdamW step over GPT-2 small's parameter list (f32 parameters and gradients):
    `torch.optim.AdamW(fused=True)` and `(foreach=True)`; 28 bytes per parameter."""
    label = f"adamw list gpt2-small {len(gpt2_small_sizes())} tensors f32"
    return optimizer_list(b, ctx, label, 28, lambda ps, **kw: torch.optim.AdamW(
        ps, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01, **kw))


def m_adamw_master_list(b, ctx):
    """Mixed-precision AdamW over GPT-2 small's list, as tilekit's `adamw_master_list`:
    bf16 model parameters and gradients, f32 master weights and moments. PyTorch's way with
    its fused optimizer: the bf16 gradients copied into the master weights' f32 `.grad`
    (`torch._foreach_copy_`), `AdamW(fused=True).step()` on the master weights, the result
    copied back into the bf16 parameters; all three timed as one step. 24 bytes per
    parameter counted (the minimum: what tilekit moves), so torch's extra traffic shows as
    a lower rate."""
    sizes, out = gpt2_small_sizes(), {}
    n = sum(sizes)
    label = f"adamw master list gpt2-small {len(sizes)} tensors bf16"
    try:
        model = [torch.randn(k, device="cuda").to(torch.bfloat16) for k in sizes]
        grads = [torch.randn(k, device="cuda").to(torch.bfloat16) for k in sizes]
        master = [torch.nn.Parameter(p.float()) for p in model]
        for q in master:
            q.grad = torch.empty_like(q)
        opt = torch.optim.AdamW(master, lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                                weight_decay=0.01, fused=True)
        mg = [q.grad for q in master]

        def step(i):
            torch._foreach_copy_(mg, grads)
            opt.step()
            torch._foreach_copy_(model, [q.detach() for q in master])
        rec = b.time(step)
        rate(rec, 24 * n, ctx.get("copy_gbps"))
        rec["params"], rec["tensors"] = n, len(sizes)
        del opt, master, model, grads, mg
    except Exception as e:  # noqa: BLE001 - report and go on
        rec = {"error": err_str(e)}
    row("train", "torch fused+copies", label, rec)
    out["torch fused+copies"] = rec
    gc.collect(); torch.cuda.empty_cache()
    return out


def m_sgd_list(b, ctx):
    """SGD with momentum 0.9 over GPT-2 small's list (f32): `torch.optim.SGD(fused=True)`
    and `(foreach=True)`; 20 bytes per parameter."""
    label = f"sgd list gpt2-small {len(gpt2_small_sizes())} tensors f32"
    return optimizer_list(b, ctx, label, 20, lambda ps, **kw: torch.optim.SGD(
        ps, lr=1e-3, momentum=0.9, **kw))


def m_clip_list(b, ctx):
    """`torch.nn.utils.clip_grad_norm_(params, max_norm, foreach=True)` over GPT-2 small's
    list (f32 gradients), max_norm 1e30 (the multiply runs, nothing changes), as tilekit's
    `clip_grad_norm_list`; 12 bytes per parameter (gradients read twice, written once)."""
    sizes, out = gpt2_small_sizes(), {}
    n = sum(sizes)
    label = f"clip list gpt2-small {len(sizes)} tensors f32"
    for prov, kw in (("torch foreach", {"foreach": True}), ("torch", {"foreach": False})):
        try:
            params = [torch.nn.Parameter(torch.empty(k, device="cuda")) for k in sizes]
            for q in params:
                q.grad = torch.randn_like(q)
            rec = b.time(lambda i: torch.nn.utils.clip_grad_norm_(params, 1e30, **kw))
            rate(rec, 12 * n, ctx.get("copy_gbps"))
            del params
        except Exception as e:  # noqa: BLE001 - report and go on
            rec = {"error": err_str(e)}
        row("train", prov, label, rec)
        out[prov] = rec
        gc.collect(); torch.cuda.empty_cache()
    return out


MEASURE = {"copy": m_copy, "chain": m_chain, "norms": m_norms, "user2d": m_user2d, "train": m_train,
           "launch": m_launch, "matmul": m_matmul, "epilogue": m_epilogue, "awkward": m_awkward,
           "batched": m_batched}


# ----------------------------------------------------------------------------- driver
def meta(args):
    m = {"date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
         "host": platform.node(), "python": sys.version.split()[0], "argv": sys.argv[1:],
         "quick": args.quick, "dry_run": args.dry_run,
         "torch": getattr(torch, "__version__", None), "triton": getattr(triton, "__version__", None)}
    if torch is not None and not args.dry_run and torch.cuda.is_available():
        p = torch.cuda.get_device_properties(0)
        m.update({"device": p.name, "capability": f"{p.major}.{p.minor}", "sms": p.multi_processor_count,
                  "l2_bytes": getattr(p, "L2_cache_size", None), "memory_bytes": p.total_memory,
                  "cuda_runtime": torch.version.cuda})
        try:
            q = "driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw"
            m["nvidia_smi"] = subprocess.run(["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader"],
                                             capture_output=True, text=True, timeout=20).stdout.strip()
        except Exception as e:
            m["nvidia_smi"] = err_str(e)
    return m


def clean(v):
    """JSON has no NaN or Infinity: write them as strings."""
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    if isinstance(v, dict):
        return {str(k): clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [clean(x) for x in v]
    return v


def write_json(path, res):
    with open(path, "w") as f:
        json.dump(clean(res), f, indent=1, allow_nan=False)
        f.write("\n")


def parse_only(s):
    sel = set()
    for w in filter(None, (t.strip().lower() for t in s.split(","))):
        w = LETTERS.get(w, w)
        if w not in MEASURE:
            raise SystemExit(f"--only: unknown measurement {w!r} (choose from {', '.join(ORDER)} or e,c,d,a)")
        sel.add(w)
    if sel & {"chain", "norms", "user2d", "train"}:
        sel.add("copy")  # the ceiling the percentages refer to
    return [m for m in ORDER if m in sel]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="peers.json", help="JSON output path (default peers.json)")
    ap.add_argument("--only", default=",".join(ORDER), help="comma list of " + ", ".join(ORDER) + " (or e,c,d,a)")
    ap.add_argument("--quick", action="store_true", help="fewer repeats (about 0.3 s per point)")
    ap.add_argument("--dry-run", action="store_true", help="no torch/GPU: parse arguments, write the JSON skeleton")
    args = ap.parse_args()
    sel = parse_only(args.only)
    t_start = time.perf_counter()
    res = {"meta": meta(args), "selected": sel, "results": {}}
    if args.dry_run:
        for m in sel:
            res["results"][m] = {"skipped": "dry run"}
        row("dry-run", "example", "1 GB in 1 ms", rate({"ms": 1.0}, 1e9, 3000.0, flops=1e9))
    else:
        if torch is None or not torch.cuda.is_available():
            raise SystemExit("needs PyTorch with a CUDA device (or --dry-run)")
        torch.manual_seed(0)
        for k in ("cache_size_limit", "recompile_limit"):  # one compiled object per R / dtype
            try:
                setattr(torch._dynamo.config, k, 64)
            except Exception:
                pass
        b, ctx = Bench(args.quick), {}
        print(f"{res['meta'].get('device')}  torch {torch.__version__}  triton {res['meta']['triton']}  "
              f"L2 {b.l2 >> 20} MiB  quick={args.quick}", flush=True)
        for m in sel:
            print(f"[{m}]", flush=True)
            t0 = time.perf_counter()
            try:
                r = MEASURE[m](b, ctx)
            except Exception as e:
                r = {"error": err_str(e), "traceback": traceback.format_exc()[-3000:]}
                row(m, "-", "-", r)
            r["wall_s"], res["results"][m] = time.perf_counter() - t0, r
            gc.collect(); torch.cuda.empty_cache()
            write_json(args.out, res)  # after every measurement: a run cut short keeps what it has
    res["meta"]["wall_s_total"] = time.perf_counter() - t_start
    write_json(args.out, res)
    print(f"\n{'measurement':8} {'provider':18} {'case':16} result")
    for meas, prov, case, rec in ROWS:
        print(f"{meas:8} {prov:18} {case:16} {fmt(rec)}")
    print(f"\nwrote {args.out}; total wall time {res['meta']['wall_s_total']:.1f} s")


if __name__ == "__main__":
    main()
