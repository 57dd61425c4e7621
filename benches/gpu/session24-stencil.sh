#!/usr/bin/env bash
# Session 24's last call (nvidia-h200; carry .gpu packed with PACK_TESTS="stencil" and
# .gpu/bin/tilekit-bench-base = eb47ee7 with 3af8b16 reverted: slices through one copy each):
#  1. the stencil's GPU test (the staged halo shared by five slices, against the CPU);
#  2. `tilekit-bench --only stencil`, base / new / base / new (every configuration, 8192^2 f32);
#  3. peers.py --quick --only user2d (torch eager and torch.compile of the same stencil);
#  4. `tilekit tune` of the backward passes at D = 64 (B8 H16 S2048), exported.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_TUNE_CACHE=/tmp/e.sled
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
start=$(date +%s)
T=$(ls .gpu/tests/stencil-*)
TILEKIT_CACHE_DIR=/tmp/tkc-s timeout 60 $T --ignored --test-threads=1 > $OUT/stencil-test.log 2>&1; echo "stencil GPU test rc $?"
grep -E "^test |test result|panicked" $OUT/stencil-test.log | cut -c1-200
for round in 1 2; do
  for which in base new; do
    bin=.gpu/bin/tilekit-bench; [[ $which == base ]] && bin=.gpu/bin/tilekit-bench-base
    TILEKIT_CACHE_DIR=/tmp/tkc-$which timeout 60 $bin --only stencil --out $OUT/stencil-$which-$round.json > /tmp/st.log 2>&1
    echo "stencil $which round $round rc $?"; grep -iE "stencil5.*(default|best)" /tmp/st.log | cut -c1-200
  done
done
echo "t $(( $(date +%s) - start )) s"
timeout 60 python3 benches/peers/peers.py --quick --only user2d --out $OUT/peers-user2d.json > /tmp/peers.log 2>&1; echo "peers rc $?"
grep -E "stencil|copy|transpose" /tmp/peers.log | cut -c1-200
echo "t $(( $(date +%s) - start )) s"
C=/tmp/tune-d64.sled
for k in attention_bwd_dq attention_bwd_dkdv; do
  timeout 40 .gpu/bin/tilekit tune --cache-path $C --kernel $k --shape 128x2048x64x128x2048 --dtype bf16 --scalar heads=16 --scalar kv_heads=16 --scalar causal=0 --scalar scale=0.125 > /tmp/tune.log 2>&1; echo "tune $k rc $?"; grep -E "winner" /tmp/tune.log | cut -c1-260
done
.gpu/bin/tilekit cache --cache-path $C export $OUT/d64-h200-export.json 2>&1 | tail -1
echo "total $(( $(date +%s) - start )) s"
