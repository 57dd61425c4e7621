#!/usr/bin/env bash
# Session 25, call 2 (nvidia-h200; carry .gpu packed with PACK_TESTS="stencil user2d concat"
# and .gpu/bin/tilekit-bench-base = eabfcf3: windows staged, broadcasts through shared
# memory, cat through shared memory):
#  1. GPU tests: stencil, rotary3d (every config), concat; memcheck of the rotary test;
#  2. `tilekit-bench --only stencil,rotary`, base / new / base / new; `--only chain` (new);
#  3. peers.py --quick --only user2d (stencil and rotary: eager, torch.compile).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_TUNE_CACHE=/tmp/e.sled
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
start=$(date +%s)
T=$(ls .gpu/tests/stencil-*); U=$(ls .gpu/tests/user2d-*); C=$(ls .gpu/tests/concat-*)
TILEKIT_CACHE_DIR=/tmp/tkc-t timeout 120 $T --ignored --test-threads=1 > $OUT/tests.log 2>&1; echo "stencil GPU tests rc $?"
TILEKIT_CACHE_DIR=/tmp/tkc-t timeout 90 $U --ignored gpu_rotary3d --test-threads=1 >> $OUT/tests.log 2>&1; echo "rotary GPU test rc $?"
TILEKIT_CACHE_DIR=/tmp/tkc-t timeout 90 $C --ignored --test-threads=1 >> $OUT/tests.log 2>&1; echo "concat GPU test rc $?"
TILEKIT_CACHE_DIR=/tmp/tkc-t timeout 150 /usr/local/cuda/bin/compute-sanitizer --tool memcheck $U --ignored gpu_rotary3d --test-threads=1 > /tmp/mc.log 2>&1; echo "memcheck rc $?"
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
TILEKIT_CACHE_DIR=/tmp/tkc-new timeout 100 .gpu/bin/tilekit-bench --only chain --out $OUT/chain.json > /tmp/ch.log 2>&1; echo "chain rc $?"; grep -E "chain|copy" /tmp/ch.log | cut -c1-200
echo "t $(( $(date +%s) - start )) s"
timeout 150 python3 benches/peers/peers.py --quick --only user2d --out $OUT/peers-user2d.json > /tmp/peers.log 2>&1; echo "peers rc $?"
grep -E "stencil|rotary" /tmp/peers.log | sort -u | cut -c1-200
echo "total $(( $(date +%s) - start )) s"
