"""cuBLAS (torch.matmul) bf16 at the awkward GEMM shapes, CUDA events, median of 30 with
three input sets rotated; one line per shape. Used by the session-32 GPU scripts:
`python3 benches/gpu/cublas_awkward.py | tee $OUT/cublas.log`."""
import statistics

import torch

for m, k, n in [(4097, 4097, 4097), (8192, 768, 50257)]:
    sets = [(torch.randn(m, k, device="cuda", dtype=torch.bfloat16),
             torch.randn(k, n, device="cuda", dtype=torch.bfloat16)) for _ in range(3)]
    c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    for a, b in sets:
        torch.matmul(a, b, out=c)
    ts = []
    for i in range(30):
        a, b = sets[i % 3]
        s, e = torch.cuda.Event(True), torch.cuda.Event(True)
        s.record(); torch.matmul(a, b, out=c); e.record(); e.synchronize()
        ts.append(s.elapsed_time(e))
    ms = statistics.median(ts)
    print(f"cuBLAS bf16 {m}x{k}x{n}: {ms:.4f} ms = {2*m*n*k/ms/1e9:.1f} TFLOP/s")
