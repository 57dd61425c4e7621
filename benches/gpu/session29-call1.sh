#!/usr/bin/env bash
# Session 29, call 1 (nvidia-h200; .gpu from HEAD 9aaac42): where the short-K GEMMs
# (K = 768) lose their time. ncu (speed of light, memory, warp states) of
#  a. matmul 8192x768x50257, the shipped cooperative 128x256 PAD64 entry;
#  b. matmul 8192x768x50304 (aligned C, the same tile);
#  c. matmul_bias_act 8192x768x3072, the shipped ping-pong 64x256 entry;
#  d. cuBLAS's mm at 8192x768x50304 and cuBLASLt's addmm + GELU at 8192x768x3072;
# then `tilekit bench` timings of a/b (and 8192x4096x50304 to separate short K).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc
N=/usr/local/cuda/bin/ncu
S="--section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section LaunchStats --section Occupancy --section SchedulerStats"
C128="BM=128,BN=256,BK=64,STAGES=4,WARPS=8,SMEM=Padded,PAD64=true"
start=$(date +%s)
prof() { # name, kernel regex, command...
  local name=$1 re=$2; shift 2
  timeout 120 $N -k regex:$re --launch-skip 3 --launch-count 1 $S "$@" > $OUT/ncu-$name.txt 2>&1; echo "ncu $name rc $? t $(( $(date +%s) - start ))"
}
B=.gpu/bin/tilekit
prof a50257 matmul $B bench --kernel matmul --shape 8192x768x50257 --config $C128 --rounds 2
prof b50304 matmul $B bench --kernel matmul --shape 8192x768x50304 --config $C128 --rounds 2
prof c3072 matmul $B bench --kernel matmul_bias_act --shape 8192x768x3072 --scalar act=1 --config BM=64,BN=256,BK=64,STAGES=4,WARPS=4,SMEM=Swizzle128,PAD64=false --rounds 2
cat > /tmp/peer.py <<'PY'
import torch, sys
a = torch.randn(8192, 768, device="cuda", dtype=torch.bfloat16)
if sys.argv[1] == "mm":
    b = torch.randn(768, 50304, device="cuda", dtype=torch.bfloat16)
    for _ in range(6): c = a @ b
else:
    b = torch.randn(768, 3072, device="cuda", dtype=torch.bfloat16); bias = torch.randn(3072, device="cuda", dtype=torch.bfloat16)
    for _ in range(6): c = torch._addmm_activation(bias, a, b, use_gelu=True)
torch.cuda.synchronize()
PY
prof dmm "gemm|sm90|nvjet|cutlass" python3 /tmp/peer.py mm
prof dlt "gemm|sm90|nvjet|cutlass" python3 /tmp/peer.py lt
for s in 8192x768x50257 8192x768x50304 8192x4096x50304 8192x768x4096; do
  timeout 60 $B bench --kernel matmul --shape $s --config $C128 --config BM=128,BN=256,BK=64,STAGES=4,WARPS=8,SMEM=Swizzle128,PAD64=false --rounds 10 > /tmp/b.txt 2>&1; echo "bench $s rc $?"; grep -vE "^\s*$" /tmp/b.txt | tail -6 | cut -c1-160
done
echo "t $(( $(date +%s) - start )) s"
for f in $OUT/ncu-*.txt; do echo "== $f"; grep -E "^  [a-z_]|Duration|Throughput|Busy|Pipe|Hit Rate|Registers|Shared Memory Config|Achieved Occ|Warp Cycles Per Issued|No Eligible|Stall|Block Size|Grid Size|Waves" $f | head -40; done > $OUT/summary.txt
