#!/usr/bin/env bash
# Session 28, call 1 (nvidia-h200; .gpu packed with PACK_TESTS="gpu_hopper gpu_matmul
# epilogues batched"; tilekit-bench-base built from 8aee854, the commit before the GEMM
# form's product was left in flight across iterations):
#  1. GPU tests on the new code: gpu_hopper (bitwise boundary shapes, permutation, 20
#     repeats, persistent K edges, TF32, epilogues, SASS), gpu_matmul, epilogues, batched;
#     compute-sanitizer memcheck / racecheck / synccheck on gpu_hopper_sanitizer_small;
#  2. A/B base / new / base / new: --only matmul,epilogue (bf16 1000^3, 4096^3, 8192^3,
#     f16 4096^3; the fused epilogues), shipped layer attached;
#  3. cuBLAS / torch peers of the same records in the same call.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_TUNE_CACHE=/tmp/e.sled
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
start=$(date +%s)
for t in gpu_hopper gpu_matmul epilogues batched; do
  f=$(ls .gpu/tests/$t-*)
  TILEKIT_CACHE_DIR=/tmp/tkc-t timeout 150 $f --ignored --test-threads=1 >> $OUT/tests.log 2>&1; echo "$t GPU tests rc $?"
done
T=$(ls .gpu/tests/gpu_hopper-*)
for tool in memcheck racecheck synccheck; do
  TILEKIT_CACHE_DIR=/tmp/tkc-t timeout 120 /usr/local/cuda/bin/compute-sanitizer --tool $tool $T --ignored --test-threads=1 gpu_hopper_sanitizer_small 2>&1 | grep -E "test result|SUMMARY|rror" | sed "s/^/$tool: /" >> $OUT/tests.log
done
grep -E "test result|panicked|FAILED|SUMMARY|memcheck|racecheck|synccheck" $OUT/tests.log | cut -c1-200
echo "t $(( $(date +%s) - start )) s"
export TK_MATMUL_ONLY=bf16_1000,bf16_4096,bf16_8192,f16_4096
for round in 1 2; do
  for which in base new; do
    bin=.gpu/bin/tilekit-bench; [[ $which == base ]] && bin=.gpu/bin/tilekit-bench-base
    TK_BENCH_TUNED=1 TILEKIT_CACHE_DIR=/tmp/tkc-$which timeout 150 $bin --only matmul,epilogue --out /tmp/ab-$which-$round.json > /tmp/ab-$which-$round.log 2>&1; echo "ab $which $round rc $?"
    grep -E "default|best|epilogue" /tmp/ab-$which-$round.log | cut -c1-175
  done
  echo "t $(( $(date +%s) - start )) s"
done
cat /tmp/ab-*.log > $OUT/ab.log
python3 - <<'PY' > $OUT/ab.json
import json, glob
print(json.dumps({f.split('/')[-1]: json.load(open(f))['results'] for f in sorted(glob.glob('/tmp/ab-*.json'))}))
PY
timeout 150 python3 benches/peers/peers.py --quick --only matmul,epilogue --out $OUT/peers.json > $OUT/peers.log 2>&1; echo "peers rc $?"
grep -iE "cublas|compile|addmm|matmul" $OUT/peers.log | cut -c1-150 | head -20
echo "t $(( $(date +%s) - start )) s"
