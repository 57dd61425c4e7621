#!/usr/bin/env bash
# Session 29, call 10: issue 26's other rows on the final code (the staged store's TMA path,
# f32 C included): tilekit-bench --only matmul,epilogue (TF32 4096^3 at its declared default
# and its best of run 112, f16 4096^3, bf16 1000^3; the fused epilogues, the user's GEMM +
# bias + GELU beside the library's) with the shipped layer, then the peers of the same call.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc
start=$(date +%s)
export TK_MATMUL_ONLY=tf32_4096,f16_4096,bf16_1000
export TK_MATMUL_CONFIGS="BM=128,BN=128,BK=32,STAGES=4,WARPS=8;BM=128,BN=256,BK=32,STAGES=4,WARPS=8"
TK_BENCH_TUNED=1 timeout 140 .gpu/bin/tilekit-bench --only matmul,epilogue --out $OUT/bench.json > $OUT/bench.log 2>&1; echo "bench rc $?"
grep -E "default|best|launch|user|bias|folded" $OUT/bench.log | cut -c1-170 | head -30
echo "t $(( $(date +%s) - start )) s"
timeout 60 python3 benches/peers/peers.py --quick --only matmul,epilogue --out $OUT/peers.json > $OUT/peers.log 2>&1; echo "peers rc $?"
grep -iE "cublas|compile|addmm|eager" $OUT/peers.log | cut -c1-150 | head -14
echo "t $(( $(date +%s) - start )) s"
