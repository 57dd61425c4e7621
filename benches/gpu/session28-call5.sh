#!/usr/bin/env bash
# Session 28, call 5 (nvidia-h200; .gpu holds the `tilekit` CLI of the ping-pong code):
# matmul 8192x768x50257 bf16 (K = 768: 12 k-steps per tile, like the fused epilogue that
# ping-pong sped up 1.1x): a fresh tune (does it pick a ping-pong configuration?), then
# `tilekit bench` with that cache: the tune's winner, the declared default and the shipped
# H200 entry (BM=128,BN=256,STAGES=4,WARPS=8,SMEM=Padded,PAD64=true), 20 interleaved rounds.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc
start=$(date +%s)
timeout 100 .gpu/bin/tilekit tune --cache-path /tmp/t.sled --kernel matmul --shape 8192x768x50257 --dtype bf16 > $OUT/tune.log 2>&1; echo "tune rc $?"
grep -E "winner|WINNER" $OUT/tune.log | cut -c1-220
echo "t $(( $(date +%s) - start )) s"
timeout 60 .gpu/bin/tilekit bench --cache-path /tmp/t.sled --kernel matmul --shape 8192x768x50257 --dtype bf16 --seed 7 --config BM=128,BN=256,BK=64,STAGES=4,WARPS=8,SMEM=Padded,PAD64=true --out $OUT/bench.json > $OUT/bench.log 2>&1; echo "bench rc $?"
cat $OUT/bench.log | cut -c1-200 | head -30
.gpu/bin/tilekit cache --cache-path /tmp/t.sled export $OUT/tuned.json > /dev/null 2>&1; echo "export rc $?"
echo "t $(( $(date +%s) - start )) s"
