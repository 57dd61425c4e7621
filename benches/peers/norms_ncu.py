"""The peers tilekit's row kernels trail on the H200 (issue 29), run a few times for ncu:
`python3 norms_ncu.py OP` with OP one of `rmsnorm_f32` (torch.compile of the RMSNorm
formula), `layernorm_f32` (torch.compile of `F.layer_norm`) or `softmax_bf16` (the Triton
row kernel of `peers.py`), all at 32768 x 4096. Under ncu:
`ncu --kernel-name regex:triton --launch-skip 2 --launch-count 1 ... python3 norms_ncu.py OP`;
under `TORCH_LOGS=output_code` it prints inductor's generated source."""
import sys

import torch
import torch.nn.functional as F

import peers

M, N = peers.NORM_SHAPE
op = sys.argv[1] if len(sys.argv) > 1 else "rmsnorm_f32"
dt = torch.float32 if op.endswith("f32") else torch.bfloat16
x = torch.randn(M, N, device="cuda", dtype=dt)
w = (1.0 + 0.1 * torch.randn(N, device="cuda")).to(dt)
b = (0.1 * torch.randn(N, device="cuda")).to(dt)
if op.startswith("rmsnorm"):
    f = torch.compile(peers.rms_formula, dynamic=False)
    run = lambda: f(x, w)
elif op.startswith("layernorm"):
    f = torch.compile(lambda x, w, b: F.layer_norm(x, (N,), w, b, peers.EPS), dynamic=False)
    run = lambda: f(x, w, b)
elif op.startswith("softmax"):
    run = lambda: peers.triton_rows(peers.softmax_rows, False, False, x, w)
else:
    raise SystemExit(f"unknown op {op}")
for _ in range(5):
    y = run()
torch.cuda.synchronize()
print("ok", op, tuple(y.shape))
