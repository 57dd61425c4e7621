"""What torch.compile runs for the LayerNorm backward of issue 13 (32768x4096 bf16).

Compiles peers.py's `ln_bwd_formula`, then prints the torch profiler's table of the CUDA
kernels of 20 calls (inductor's main Triton kernel, its partial reductions) and the
autotuner's `.best_config` files of the inductor cache ($TORCHINDUCTOR_CACHE_DIR). With
TORCH_LOGS=output_code the generated Triton source goes to stderr. Run on the GPU machine:
`bash benches/gpu/layouts-run.sh lnb-ncu` (also ncu of the main kernel); BENCHMARKS.md
runs 78-80 and 82 read it.
"""
import os, torch, time
EPS=1e-5
def ln_bwd_formula(x, w, dy, mean, rstd):
    xh = (x.float() - mean) * rstd
    g = dy.float() * w.float()
    dx = rstd * (g - g.mean(-1, keepdim=True) - xh * (g * xh).mean(-1, keepdim=True))
    return dx.to(x.dtype), (dy.float() * xh).sum(0).to(w.dtype), dy.float().sum(0).to(w.dtype)
M,N=32768,4096
dt=torch.bfloat16
x=torch.randn(M,N,device="cuda",dtype=dt); dy=torch.randn(M,N,device="cuda",dtype=dt)
w=(1+0.1*torch.randn(N,device="cuda")).to(dt)
xf=x.float(); mean=xf.mean(-1,keepdim=True); rstd=torch.rsqrt(xf.var(-1,unbiased=False,keepdim=True)+EPS)
f=torch.compile(ln_bwd_formula, dynamic=False)
for _ in range(5): f(x,w,dy,mean,rstd)
torch.cuda.synchronize()
from torch.profiler import profile, ProfilerActivity
with profile(activities=[ProfilerActivity.CUDA]) as p:
    for _ in range(20): f(x,w,dy,mean,rstd)
    torch.cuda.synchronize()
print(p.key_averages().table(sort_by="cuda_time_total", row_limit=10))
# Config, registers and spills of each compiled Triton kernel in the inductor cache.
import glob, json
for p in sorted(glob.glob(os.environ.get("TORCHINDUCTOR_CACHE_DIR", "/tmp") + "/**/*.best_config", recursive=True)):
    print(p, open(p).read())
