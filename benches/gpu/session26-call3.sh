#!/usr/bin/env bash
# Session 26, call 3 (nvidia-h200; .gpu packed with PACK_TESTS="stencil user2d gpu_kernels
# gpu_attention"; the base binary built from 31d2a74, run 156's new side):
#  1. GPU tests on the new code (a load run's loads behind one interior test, printed as
#     a fast and a slow block): stencil, rotary, the row kernels (layernorm_rows is a run),
#     the attention backward (its delta pre-pass is a run);
#  2. A/B base / new / base / new, shipped layer: --only rotary,stencil,norms; then
#     --only train and --only narrow-quick once each;
#  3. peers.py --quick --only user2d (the rotary's and the stencil's torch.compile).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_TUNE_CACHE=/tmp/e.sled
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
start=$(date +%s)
run_test() { # binary-prefix filter timeout
  f=$(ls .gpu/tests/$1-*)
  TILEKIT_CACHE_DIR=/tmp/tkc-t timeout $3 $f --ignored $2 --test-threads=1 >> $OUT/tests.log 2>&1; echo "$1 $2 rc $?"
}
run_test stencil "" 120
run_test user2d gpu_rotary3d 90
run_test gpu_kernels gpu_narrow_row_kernels 150
run_test gpu_kernels gpu_softmax_every 100
run_test gpu_attention gpu_attention_backward_matches 150
grep -E "test result|panicked|FAILED" $OUT/tests.log | cut -c1-200
echo "t $(( $(date +%s) - start )) s"
for round in 1 2; do
  for which in base new; do
    bin=.gpu/bin/tilekit-bench; [[ $which == base ]] && bin=.gpu/bin/tilekit-bench-base
    TK_BENCH_TUNED=1 TILEKIT_CACHE_DIR=/tmp/tkc-$which timeout 100 $bin --only rotary,stencil,norms --out /tmp/ab-$which-$round.json > /tmp/ab-$which-$round.log 2>&1; echo "ab $which $round rc $?"
    grep -E "rotary3d|stencil5|norms " /tmp/ab-$which-$round.log | cut -c1-175
  done
done
echo "t $(( $(date +%s) - start )) s"
for which in base new; do
  bin=.gpu/bin/tilekit-bench; [[ $which == base ]] && bin=.gpu/bin/tilekit-bench-base
  TK_BENCH_TUNED=1 TILEKIT_CACHE_DIR=/tmp/tkc-$which timeout 150 $bin --only train,narrow-quick --out /tmp/train-$which.json > /tmp/train-$which.log 2>&1; echo "train $which rc $?"
  grep -E "^(train|narrow) " /tmp/train-$which.log | grep -v precompiled | cut -c1-175
done
cat /tmp/ab-*.log /tmp/train-*.log > $OUT/ab.log
python3 - <<'PY' > $OUT/ab.json
import json, glob
print(json.dumps({f.split('/')[-1]: json.load(open(f))['results'] for f in sorted(glob.glob('/tmp/ab-*.json') + glob.glob('/tmp/train-*.json'))}))
PY
echo "t $(( $(date +%s) - start )) s"
timeout 120 python3 benches/peers/peers.py --quick --only user2d --out $OUT/peers.json > $OUT/peers.log 2>&1; echo "peers rc $?"
grep -E "^user2d " $OUT/peers.log | cut -c1-150
echo "total $(( $(date +%s) - start )) s"
