#!/usr/bin/env bash
# Session 30, call 11: issue 25's "behaviour unchanged" A/B against the code before the
# issue (87209f9: tilekit-base, tilekit-bench-base), new/base/new/base in one call: the
# kernels item 7 rewrote through shared `#[tile_fn]` bodies (log_softmax, softmax_online,
# cross_entropy at one explicit configuration each), the mma.sync matmul (a BK = 32
# configuration: the engine the refactors touched, not the Hopper engine added
# since), and launch / graph figures three times each.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc
start=$(date +%s)
source benches/gpu/ab-lib.sh
export AB_GREP="^BLOCK|error"
AB_TIMEOUT=40 ab log_softmax-bf16 --kernel log_softmax --shape 4096x50257 --dtype bf16 --config BLOCK=4096,WARPS=8,MIN_BLOCKS=2
AB_TIMEOUT=40 ab softmax_online-bf16 --kernel softmax_online --shape 4096x50257 --dtype bf16 --config BLOCK=2048,WARPS=16
AB_TIMEOUT=60 ab cross_entropy-bf16 --kernel cross_entropy --shape 8192x50304 --dtype bf16 --config BLOCK=2048,WARPS=16
export AB_GREP="^BM|error"
AB_TIMEOUT=60 ab matmul-mmasync --kernel matmul --shape 4096x4096x4096 --dtype bf16 --config BM=128,BN=256,BK=32,STAGES=4,WARPS=8,SMEM=Swizzle128,PAD64=false
echo "t $(( $(date +%s) - start )) s"
for which in new base new base new base; do
  bin=.gpu/bin/tilekit-bench; [[ $which == base ]] && bin=.gpu/bin/tilekit-bench-base
  timeout 60 $bin --only launch,graph > /tmp/l.txt 2>&1; echo "== launch/graph $which rc $?" >> $OUT/launch.log; cat /tmp/l.txt >> $OUT/launch.log
  grep -iE "host time per launch|replay" /tmp/l.txt | sed "s/^/$which: /" | cut -c1-150
done
echo "t $(( $(date +%s) - start )) s"
