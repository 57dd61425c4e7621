"""torch.compile's kernel for tilekit's user rotary embedding ([16384, 32, 128] bf16), for
ncu: compiles `peers.rotary3d` (dynamic=False), runs it a few times. Run under
`TORCH_LOGS=output_code` to print the generated Triton source, and under ncu with
`--kernel-name regex:triton --launch-skip 2 --launch-count 1` for its counters."""
import torch
from peers import rotary3d

S, H, D = 16384, 32, 128
x = torch.randn(S, H, D, device="cuda", dtype=torch.bfloat16)
cos = torch.randn(S, D // 2, device="cuda", dtype=torch.bfloat16)
sin = torch.randn(S, D // 2, device="cuda", dtype=torch.bfloat16)
f = torch.compile(rotary3d, dynamic=False)
for _ in range(5):
    y = f(x, cos, sin)
torch.cuda.synchronize()
print("ok", tuple(y.shape))
