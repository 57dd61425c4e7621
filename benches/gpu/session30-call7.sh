#!/usr/bin/env bash
# Session 30, call 7 (call 5 again, with the exact f32 rows, the cold tune's log and the 1-D kernel rows that call 5 lost): issue 26's "resolve only with" table in one device call (the code of
# this commit, clusters of two in the space): a cold `tilekit tune` of matmul 4096^3 (empty
# CUBIN and tuning caches) and its pick beside the bench's best; `tilekit-bench --only
# matmul,epilogue` (bf16 8192^3 / 4096^3 / 1000^3, f16 4096^3, TF32 and exact f32 user GEMMs,
# the fused epilogues and the user's GEMM + bias + GELU beside the library's) and its peers
# (`peers.py`, cuBLAS 1000^3 also by triton's do_bench); the attention kernel in benches/
# and SDPA; the 1-D A/B against the code before the Hopper engine (87209f9:
# tilekit-bench-base / tilekit-base): launch and graph figures, and rmsnorm / softmax /
# layernorm at one configuration each, new/base/new/base.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc
start=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.sm,driver_version --format=csv > $OUT/table.log
rm -rf /tmp/tkc-cold /tmp/cold.sled
{ time TILEKIT_CACHE_DIR=/tmp/tkc-cold CUDA_CACHE_DISABLE=1 timeout 120 .gpu/bin/tilekit tune --cache-path /tmp/cold.sled --kernel matmul --shape 4096x4096x4096 --dtype bf16; } > $OUT/tune.log 2>&1
tail -4 $OUT/tune.log | cut -c1-400; grep -E "winner" $OUT/tune.log | cut -c1-600
W=$(grep -o "winner [^ ]*" $OUT/tune.log | head -1 | cut -d' ' -f2)
echo "t $(( $(date +%s) - start )) s"
export TK_MATMUL_ONLY=tf32_4096,bf16_4096,bf16_8192,f16_4096,bf16_1000,f32_4096
export TK_MATMUL_CONFIGS="BM=128,BN=128,BK=32,STAGES=4,WARPS=8;BM=128,BN=256,BK=32,STAGES=4,WARPS=8;BM=128,BN=128,BK=32,STAGES=3,WARPS=8;BM=128,BN=128,BK=16,STAGES=3,WARPS=8,SMEM=Padded,MIN_BLOCKS=1;BM=64,BN=128,BK=16,STAGES=3,WARPS=4,SMEM=Padded,MIN_BLOCKS=2"
TK_BENCH_TUNED=1 timeout 200 .gpu/bin/tilekit-bench --only matmul,epilogue --out $OUT/bench.json > $OUT/bench.log 2>&1; echo "bench rc $?"
grep -E "default|best|user|bias" $OUT/bench.log | cut -c1-170 | head -40
echo "t $(( $(date +%s) - start )) s"
[ -n "$W" ] && timeout 40 .gpu/bin/tilekit bench --seed 7 --rounds 20 --kernel matmul --shape 4096x4096x4096 --config $W --config BM=128,BN=256,BK=64,STAGES=4,WARPS=8,SMEM=Swizzle128,PAD64=false,CLUSTER=1 --config BM=128,BN=256,BK=64,STAGES=4,WARPS=8,SMEM=Swizzle128,PAD64=false,CLUSTER=2 > /tmp/b.txt 2>&1; grep -E "^BM" /tmp/b.txt | cut -c1-150 | tee -a $OUT/table.log
timeout 150 python3 benches/peers/peers.py --quick --only matmul,epilogue --out /tmp/peers.json > $OUT/peers.log 2>&1; echo "peers rc $?"
grep -iE "cublas|compile|addmm|eager" $OUT/peers.log | cut -c1-150 | head -20
timeout 60 python3 - >> $OUT/peers.log 2>&1 <<'PY'
import torch, triton
a = torch.randn(1000, 1000, device="cuda", dtype=torch.bfloat16); b = torch.randn(1000, 1000, device="cuda", dtype=torch.bfloat16)
ms = triton.testing.do_bench(lambda: a @ b)
print(f"cuBLAS bf16 1000^3 by triton do_bench: {ms:.4f} ms {2e9 / (ms * 1e-3) / 1e12:.1f} TFLOP/s")
PY
grep "do_bench" $OUT/peers.log
echo "t $(( $(date +%s) - start )) s"
timeout 150 .gpu/bin/tilekit-bench --only attention --out /tmp/attention.json > $OUT/attention.log 2>&1; echo "attention rc $?"
timeout 100 python3 benches/peers/sdpa.py --out /tmp/sdpa.json > $OUT/sdpa.log 2>&1; echo "sdpa rc $?"
grep -iE "attention|d=|sdpa|cudnn|flash" $OUT/attention.log $OUT/sdpa.log | cut -c1-170 | head -16
echo "t $(( $(date +%s) - start )) s"
for which in new base new base; do
  bin=.gpu/bin/tilekit-bench; [[ $which == base ]] && bin=.gpu/bin/tilekit-bench-base
  timeout 60 $bin --only launch,graph > /tmp/l.txt 2>&1; echo "== launch/graph $which rc $?" >> $OUT/ab.log; cat /tmp/l.txt >> $OUT/ab.log
  grep -iE "launch|graph" /tmp/l.txt | grep -iE "us|µs" | head -6 | sed "s/^/$which: /" | cut -c1-160
done
source benches/gpu/ab-lib.sh; export AB_GREP="^BLOCK|error"
AB_TIMEOUT=40 ab rmsnorm-f32 --kernel rmsnorm --shape 32768x4096 --dtype f32 --config BLOCK=4096,WARPS=8
AB_TIMEOUT=40 ab softmax-bf16 --kernel softmax --shape 32768x4096 --dtype bf16 --config BLOCK=4096,WARPS=8
AB_TIMEOUT=40 ab layernorm-f32 --kernel layernorm --shape 32768x4096 --dtype f32 --config BLOCK=4096,WARPS=8
echo "t $(( $(date +%s) - start )) s"
