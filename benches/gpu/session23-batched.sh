#!/usr/bin/env bash
# Session 23, issue 27 item 5 (nvidia-h200; carry .gpu packed with PACK_TESTS="batched", the
# build of 5f81b8f as .gpu/bin/tilekit-bench-base): `matmul_batched` on the Hopper engine's
# GEMM form (3-D tensor maps of the row views):
#  1. its GPU tests (bitwise against the CPU backend, engine and mma.sync configurations,
#     aligned and misaligned batches; the 32 x 512^3 launch);
#  2. `tilekit-bench --only batched` base (mma.sync default) / new, interleaved;
#  3. `peers.py --only batched` (torch.bmm, torch.compile);
#  4. `tilekit tune` of 32x512x512x512 bf16, exported (the shipped entry), then the bench
#     with that cache.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc-b
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
start=$(date +%s)
T=$(ls .gpu/tests/batched-*)
timeout 200 $T --ignored --test-threads=1 > $OUT/batched-tests.log 2>&1; echo "batched tests rc $?"
grep -E "^test |test result|panicked" $OUT/batched-tests.log | cut -c1-300
for round in 1 2; do
  for which in base new; do
    bin=.gpu/bin/tilekit-bench; [[ $which == base ]] && bin=.gpu/bin/tilekit-bench-base
    TILEKIT_TUNE_CACHE=/tmp/empty-$which.sled timeout 100 $bin --only batched --out /tmp/batched-$which-$round.json > /tmp/batched-$which-$round.log 2>&1
    echo "batched bench $which round $round rc $?"; grep -E "^batched" /tmp/batched-$which-$round.log | cut -c1-200
  done
done
cp /tmp/batched-new-2.json $OUT/batched-new.json; cp /tmp/batched-base-2.json $OUT/batched-base.json
timeout 120 python3 benches/peers/peers.py --quick --only batched --out $OUT/peers-batched.json > /tmp/peers.log 2>&1; echo "peers rc $?"
grep -iE "batched|bmm" /tmp/peers.log | cut -c1-200 | head -6
C=/tmp/tune-batched.sled
timeout 150 .gpu/bin/tilekit tune --cache-path $C --kernel matmul_batched --shape 32x512x512x512 --dtype bf16 > /tmp/tune.log 2>&1
echo "tune rc $?"; grep -E "winner" /tmp/tune.log | cut -c1-300
.gpu/bin/tilekit cache --cache-path $C export $OUT/batched-export.json 2>&1 | tail -1
TILEKIT_TUNE_CACHE=$C timeout 100 .gpu/bin/tilekit-bench --only batched --out /tmp/batched-tuned.json > /tmp/batched-tuned.log 2>&1
echo "batched bench tuned rc $?"; grep -E "^batched launch" /tmp/batched-tuned.log | cut -c1-200
echo "total $(( $(date +%s) - start )) s"
