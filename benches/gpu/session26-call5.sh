#!/usr/bin/env bash
# Session 26, call 5 (nvidia-h200; .gpu packed with PACK_TESTS="user2d"; the base binary
# built from d984768):
#  1. the user kernels' GPU tests (user2d: add_rmsnorm, copy2d, transpose2d, the rotary, ..);
#  2. A/B base / new, shipped layer: --only user2d,rotary,norms (new: a tile group's global
#     stores as one st.global.v4 each, `tk::gstore_vec`);
#  3. peers.py --quick --only user2d.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_TUNE_CACHE=/tmp/e.sled
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
start=$(date +%s)
U=$(ls .gpu/tests/user2d-*)
TILEKIT_CACHE_DIR=/tmp/tkc-t timeout 60 $U --ignored --test-threads=1 > $OUT/tests.log 2>&1; echo "user2d GPU tests rc $?"
grep -E "^test |test result|panicked" $OUT/tests.log | cut -c1-160
echo "t $(( $(date +%s) - start )) s"
for which in base new; do
  bin=.gpu/bin/tilekit-bench; [[ $which == base ]] && bin=.gpu/bin/tilekit-bench-base
  TK_BENCH_TUNED=1 TILEKIT_CACHE_DIR=/tmp/tkc-$which timeout 60 $bin --only user2d,rotary,norms --out /tmp/ab-$which.json > /tmp/ab-$which.log 2>&1; echo "ab $which rc $?"
  grep -E "^(user2d|rotary|norms) " /tmp/ab-$which.log | cut -c1-175
  echo "t $(( $(date +%s) - start )) s"
done
cat /tmp/ab-*.log > $OUT/ab.log
python3 - <<'PY' > $OUT/ab.json
import json, glob
print(json.dumps({f.split('/')[-1]: json.load(open(f))['results'] for f in sorted(glob.glob('/tmp/ab-*.json'))}))
PY
timeout 70 python3 benches/peers/peers.py --quick --only user2d --out $OUT/peers.json > $OUT/peers.log 2>&1; echo "peers rc $?"
grep -E "^user2d " $OUT/peers.log | cut -c1-150
echo "total $(( $(date +%s) - start )) s"
