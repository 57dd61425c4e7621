#!/usr/bin/env bash
# Session 25, call 1 (nvidia-h200; carry .gpu packed with PACK_TESTS="stencil user2d" and
# .gpu/bin/tilekit-bench-base = 30986c8's code generator with this session's bench sources):
#  1. GPU tests: the stencil (every config, views at odd widths), the 3-D rotary embedding;
#     compute-sanitizer memcheck of the stencil's view test;
#  2. `tilekit-bench --only stencil,rotary`, base / new / base / new (halo tiles as windows);
#  3. peers.py --quick --only user2d (stencil and rotary: eager, torch.compile);
#  4. issue 29's table: `TK_BENCH_TUNED=1 tilekit-bench --only copy,chain,norms,train` and
#     peers.py --quick --only copy,chain,norms,train.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_TUNE_CACHE=/tmp/e.sled
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
start=$(date +%s)
T=$(ls .gpu/tests/stencil-*); U=$(ls .gpu/tests/user2d-*)
TILEKIT_CACHE_DIR=/tmp/tkc-t timeout 120 $T --ignored --test-threads=1 > $OUT/tests.log 2>&1; echo "stencil GPU tests rc $?"
TILEKIT_CACHE_DIR=/tmp/tkc-t timeout 90 $U --ignored gpu_rotary3d --test-threads=1 >> $OUT/tests.log 2>&1; echo "rotary GPU test rc $?"
TILEKIT_CACHE_DIR=/tmp/tkc-t timeout 120 /usr/local/cuda/bin/compute-sanitizer --tool memcheck $T --ignored gpu_stencil5_views --test-threads=1 > /tmp/mc.log 2>&1; echo "memcheck rc $?"
grep -E "ERROR SUMMARY" /tmp/mc.log | tail -1 | tee -a $OUT/tests.log
grep -E "^test |test result|panicked" $OUT/tests.log | cut -c1-220
echo "t $(( $(date +%s) - start )) s"
for round in 1 2; do
  for which in base new; do
    bin=.gpu/bin/tilekit-bench; [[ $which == base ]] && bin=.gpu/bin/tilekit-bench-base
    o=/dev/null; [[ $round == 1 ]] && o=$OUT/ab-$which.json
    TILEKIT_CACHE_DIR=/tmp/tkc-$which timeout 120 $bin --only stencil,rotary --out $o > /tmp/st.log 2>&1
    echo "== $which round $round rc $?"; grep -iE "stencil5|rotary3d" /tmp/st.log | cut -c1-230 | tee -a $OUT/ab.log
  done
done
echo "t $(( $(date +%s) - start )) s"
timeout 150 python3 benches/peers/peers.py --quick --only user2d --out $OUT/peers-user2d.json > /tmp/peers.log 2>&1; echo "peers rc $?"
grep -E "stencil|rotary|copy2d|transpose" /tmp/peers.log | cut -c1-200
echo "t $(( $(date +%s) - start )) s"
TK_BENCH_TUNED=1 TILEKIT_CACHE_DIR=/tmp/tkc-new timeout 200 .gpu/bin/tilekit-bench --only copy,chain,norms,train --out $OUT/t29.json > $OUT/t29.log 2>&1; echo "t29 rc $?"
echo "t $(( $(date +%s) - start )) s"
timeout 200 python3 benches/peers/peers.py --quick --only copy,chain,norms,train --out $OUT/p29.json > /tmp/p29.log 2>&1; echo "p29 rc $?"
grep -vE "^\s*$" /tmp/p29.log | tail -40 | cut -c1-200
echo "total $(( $(date +%s) - start )) s"
