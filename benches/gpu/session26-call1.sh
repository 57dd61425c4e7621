#!/usr/bin/env bash
# Session 26, call 1 (nvidia-h200; .gpu packed with PACK_TESTS="stencil user2d", the base
# binary built from 2747a9f as .gpu/bin/tilekit-bench-base):
#  1. GPU tests: the stencil (every config) and rotary3d (every config) on the new prelude
#     (shape/corner/map entries without local arrays; `load_broadcast`'s interior path);
#  2. A/B, base / new / base / new, shipped layer: tilekit-bench --only rotary,stencil,norms;
#  3. ncu: tilekit's rmsnorm f32, softmax bf16, layernorm f32 (as launch() runs them) beside
#     the peers they trail (torch.compile RMSNorm / LayerNorm f32, Triton softmax bf16);
#  4. peers.py --quick --only user2d (the rotary's and the stencil's torch.compile rows).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_TUNE_CACHE=/tmp/e.sled
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
start=$(date +%s)
T=$(ls .gpu/tests/stencil-*); U=$(ls .gpu/tests/user2d-*)
TILEKIT_CACHE_DIR=/tmp/tkc-t timeout 120 $T --ignored --test-threads=1 > $OUT/tests.log 2>&1; echo "stencil GPU tests rc $?"
TILEKIT_CACHE_DIR=/tmp/tkc-t timeout 90 $U --ignored gpu_rotary3d --test-threads=1 >> $OUT/tests.log 2>&1; echo "rotary GPU test rc $?"
grep -E "^test |test result|panicked" $OUT/tests.log | cut -c1-200
echo "t $(( $(date +%s) - start )) s"
for round in 1 2; do
  for which in base new; do
    bin=.gpu/bin/tilekit-bench; [[ $which == base ]] && bin=.gpu/bin/tilekit-bench-base
    TK_BENCH_TUNED=1 TILEKIT_CACHE_DIR=/tmp/tkc-$which timeout 200 $bin --only rotary,stencil,norms --out $OUT/ab-$which-$round.json > /tmp/ab-$which-$round.log 2>&1; echo "ab $which $round rc $?"
    grep -E "rotary3d|stencil5|norms " /tmp/ab-$which-$round.log | cut -c1-200
  done
done
cat /tmp/ab-*.log > $OUT/ab.log
echo "t $(( $(date +%s) - start )) s"
S="--section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats --metrics dram__bytes_read.sum,dram__bytes_write.sum,smsp__inst_executed.sum"
NCU=/usr/local/cuda/bin/ncu
for pair in "norms:rmsnorm f32" "norms:softmax bf16" "train:layernorm f32"; do
  only=${pair%%:*}; label=${pair#*:}
  echo "=== tilekit $label" >> $OUT/ncu.txt
  TK_BENCH_LABEL="$label" TK_BENCH_TUNED=1 TILEKIT_CACHE_DIR=/tmp/tkc-new timeout 120 $NCU --kernel-name tilekit_kernel --launch-count 1 $S .gpu/bin/tilekit-bench --only $only >> $OUT/ncu.txt 2>&1; echo "ncu tilekit $label rc $?"
done
for op in rmsnorm_f32 softmax_bf16 layernorm_f32; do
  echo "=== peer $op" >> $OUT/ncu.txt
  (cd benches/peers && timeout 150 $NCU --kernel-name regex:triton --launch-skip 2 --launch-count 1 $S python3 norms_ncu.py $op) >> $OUT/ncu.txt 2>&1; echo "ncu peer $op rc $?"
done
grep -E "^===|Duration|DRAM Throughput|Registers Per|Block Size|Grid Size|Achieved Occupancy|Theoretical Occupancy|dram__bytes|smsp__inst|Waves Per SM" $OUT/ncu.txt | cut -c1-150
echo "t $(( $(date +%s) - start )) s"
timeout 200 python3 benches/peers/peers.py --quick --only user2d --out $OUT/p-user2d.json > $OUT/p-user2d.log 2>&1; echo "peers rc $?"
grep -E "stencil|rotary" $OUT/p-user2d.log | sort -u | cut -c1-200
echo "total $(( $(date +%s) - start )) s"
