"""Peers of `attention_varlen` (the library's packed variable-length attention forward) on
the bench's batches (`tilekit-bench --only attention` with TK_ATTENTION_VARLEN=1): packed
[T, H, D] bf16, D = 128, cumulative lengths; the ragged batch of 8 sequences (full, H32; and
causal, 32 query / 8 key-value heads) and the uniform B4 S4096 H32 (full, causal).

Peers, each where this PyTorch has it (an error is recorded, not hidden):
  flash_varlen   torch.ops.aten._flash_attention_forward with cum_seq_q/cum_seq_k (FA2's varlen)
  varlen_attn    torch.nn.attention.varlen.varlen_attn (PyTorch >= 2.10)
  cudnn_loop     SDPA cuDNN called once per sequence (what a user without varlen writes)
TFLOP/s by the true work (4 H n^2 D per sequence, halved for causal); median of 20 CUDA-event
timings after 5 warm-ups.

    python3 benches/peers/varlen.py --out $OUT/varlen-peers.json
"""
import argparse, itertools, json
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from sdpa import time_ms  # the same timing as the SDPA peers (benches/peers/sdpa.py)

RAGGED = [4096, 1024, 3072, 512, 2048, 3584, 1536, 2560]
CASES = [
    ("uniform_b4h32_s4096_full", [4096] * 4, 32, 32, False),
    ("uniform_b4h32_s4096_causal", [4096] * 4, 32, 32, True),
    ("ragged_h32_full", RAGGED, 32, 32, False),
    ("ragged_h32kv8_causal", RAGGED, 32, 8, True),
]
D = 128


def case(name, lens, h, hk, causal):
    t = sum(lens)
    g = torch.Generator(device="cuda").manual_seed(7)
    q = torch.randn(t, h, D, device="cuda", dtype=torch.bfloat16, generator=g)
    k = torch.randn(t, hk, D, device="cuda", dtype=torch.bfloat16, generator=g)
    v = torch.randn(t, hk, D, device="cuda", dtype=torch.bfloat16, generator=g)
    cu = torch.tensor([0] + list(itertools.accumulate(lens)), device="cuda", dtype=torch.int32)
    mx = max(lens)
    scale = D ** -0.5
    work = sum(4.0 * h * n * n * D for n in lens) * (0.5 if causal else 1.0)
    rows = []

    def record(peer, fn):
        try:
            ms = time_ms(fn)
            row = {"case": name, "peer": peer, "ms": ms, "tflops": work / (ms * 1e-3) / 1e12}
        except Exception as e:  # a peer this PyTorch lacks or that refuses the case
            row = {"case": name, "peer": peer, "error": str(e)[:240]}
        rows.append(row)
        print("varlen peer", row, flush=True)

    record("flash_varlen", lambda: torch.ops.aten._flash_attention_forward(
        q, k, v, cu, cu, mx, mx, 0.0, causal, False, scale=scale))

    def varlen_attn():
        # PyTorch >= 2.10; this one has no `is_causal` (run 139): causal through
        # `window_size = (-1, 0)` where it takes that, else an error is recorded.
        from torch.nn.attention.varlen import varlen_attn as f
        if causal:
            return f(q, k, v, cu, cu, mx, mx, window_size=(-1, 0))
        return f(q, k, v, cu, cu, mx, mx)
    record("varlen_attn", varlen_attn)

    # One SDPA cuDNN call per sequence, on [1, H, n, D] views of the packed storage.
    views = []
    for i, n in enumerate(lens):
        s = slice(int(cu[i]), int(cu[i]) + n)
        views.append((q[s].transpose(0, 1).unsqueeze(0), k[s].transpose(0, 1).unsqueeze(0),
                      v[s].transpose(0, 1).unsqueeze(0)))

    def loop():
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            for qq, kk, vv in views:
                F.scaled_dot_product_attention(qq, kk, vv, is_causal=causal, enable_gqa=hk != h)
    record("cudnn_loop", loop)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="varlen-peers.json")
    args = ap.parse_args()
    out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": []}
    for c in CASES:
        out["rows"] += case(*c)
    json.dump(out, open(args.out, "w"), indent=1)


if __name__ == "__main__":
    main()
