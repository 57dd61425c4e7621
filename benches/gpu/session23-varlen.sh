#!/usr/bin/env bash
# Session 23's varlen call (nvidia-h200; carry .gpu packed with PACK_TESTS="gpu_attention"
# plus tilekit-bench): `attention_varlen` — its GPU test against the f64 reference (packed
# sequences, zero lengths, causal, GQA, engine and mma.sync configurations), then the bench
# (TK_ATTENTION_VARLEN=1: a uniform B4 H32 S4096 D128 batch through [B, S, H, D] views
# beside the fixed-length kernel, interleaved; a ragged batch of 8 sequences, full and GQA
# causal), then SDPA cuDNN on the uniform case (same call).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc-v
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
start=$(date +%s)
T=$(ls .gpu/tests/gpu_attention-*)
timeout 70 $T --ignored --test-threads=1 gpu_attention_varlen > $OUT/varlen-tests.log 2>&1; echo "varlen test rc $?"
grep -E "^test |test result|panicked" $OUT/varlen-tests.log | cut -c1-300
TK_ATTENTION_VARLEN=1 TILEKIT_TUNE_CACHE=/tmp/empty-v.sled timeout 50 .gpu/bin/tilekit-bench --only attention --out $OUT/varlen-bench.json > /tmp/varlen.log 2>&1
echo "varlen bench rc $?"; grep -E "varlen" /tmp/varlen.log | cut -c1-260
timeout 40 python3 benches/peers/sdpa.py --no-user --cases 0,1 --backends cudnn --out $OUT/sdpa.json > /tmp/sdpa.log 2>&1; echo "sdpa rc $?"
grep -E "sdpa library" /tmp/sdpa.log | cut -c1-300
echo "total $(( $(date +%s) - start )) s"
