#!/usr/bin/env bash
# Session 31, call 2 (issue 27 item 3): the split tail (`TAIL_SPLIT`). Its GPU test first
# (bitwise against the CPU backend, 20 repeats), then `tilekit bench` of TAIL_SPLIT = 1 / 4
# at the awkward shapes (4097^3 with PAD64, the padded-aligned 4224x4160x4352, 8192x768x50257,
# bias + GELU 4097^3), peers.py's awkward rows (cuBLAS, hand-padded, torch.compile
# dynamic=False), then the rest of gpu_hopper.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc
start=$(date +%s)
t() { echo "t $(( $(date +%s) - start )) s"; }
B=.gpu/bin/tilekit
T=$(ls .gpu/tests/gpu_hopper-*)
timeout 150 $T --ignored --test-threads=1 --nocapture gpu_hopper_tail > $OUT/tail-test.log 2>&1; echo "tail test rc $?"
grep -E "test result|panicked|differ|FAILED" $OUT/tail-test.log | head -8
t
Q1=BM=128,BN=128,BK=64,STAGES=5,WARPS=8,SMEM=Swizzle128,CLUSTER=1
C1=BM=128,BN=256,BK=64,STAGES=4,WARPS=8,SMEM=Swizzle128,CLUSTER=1
P1=BM=64,BN=256,BK=64,STAGES=5,WARPS=4,SMEM=Padded,CLUSTER=1
bench() { # label, args...
  local label=$1; shift
  timeout 120 $B bench --seed 7 --rounds 20 "$@" > /tmp/b.txt 2>&1; echo "== $label rc $?" | tee -a $OUT/bench.log
  grep -E "^BM|error" /tmp/b.txt | tee -a $OUT/bench.log | cut -c1-175
}
bench 4097-pad --kernel matmul --shape 4097x4097x4097 --config $Q1,PAD64=true,TAIL_SPLIT=1 --config $Q1,PAD64=true,TAIL_SPLIT=4 --config $C1,PAD64=true,TAIL_SPLIT=1 --config $C1,PAD64=true,TAIL_SPLIT=4
bench 4224-aligned --kernel matmul --shape 4224x4160x4352 --config $Q1,PAD64=false,TAIL_SPLIT=1 --config $Q1,PAD64=false,TAIL_SPLIT=4 --config $C1,PAD64=false,TAIL_SPLIT=1 --config $C1,PAD64=false,TAIL_SPLIT=4
bench 50257 --kernel matmul --shape 8192x768x50257 --config $P1,PAD64=true --config $C1,PAD64=true,TAIL_SPLIT=1 --config $C1,PAD64=true,TAIL_SPLIT=4
bench bias-gelu-4097 --kernel matmul_bias_act --shape 4097x4097x4097 --scalar act=1 --config $Q1,PAD64=true,TAIL_SPLIT=1 --config $Q1,PAD64=true,TAIL_SPLIT=4 --config $C1,PAD64=true,TAIL_SPLIT=4
bench 4096 --kernel matmul --shape 4096x4096x4096 --config $C1,PAD64=false,TAIL_SPLIT=1 --config $C1,PAD64=false,TAIL_SPLIT=4
t
timeout 200 python3 benches/peers/peers.py --quick --only awkward --out /tmp/peers.json > $OUT/peers.log 2>&1; echo "peers rc $?"
grep -iE "awkward" $OUT/peers.log | cut -c1-170 | head -12
t
timeout 300 $T --ignored --test-threads=1 > $OUT/hopper-tests.log 2>&1; echo "gpu_hopper rc $?"
grep -E "^test |test result" $OUT/hopper-tests.log | head -20
t
