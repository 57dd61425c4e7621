#!/usr/bin/env bash
# Session 34, call 5 (nvidia-h200; .gpu packed with PACK_TESTS="epilogues"): the new
# `matmul_residual` (C = alpha * (A @ B) + bias + residual) on the GPU:
#  1. the epilogues GPU tests (every covering configuration against the CPU backend, bitwise
#     on small integers; the residual epilogue's and the others');
#  2. `tilekit tune` at its representative problem (GPT-2 small's MLP down projection over
#     8192 tokens, 8192x3072x768 bf16), exported; `tilekit bench` of the declared default
#     against the tuned entry; and at 4096^3;
#  3. its peers in the same call (benches/peers/residual.py: eager, addmm with the residual
#     as cuBLAS's C, torch.compile).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc
[[ -f .gpu/rest.tar.xz ]] && tar -xJf .gpu/rest.tar.xz -C .gpu
start=$(date +%s)
t() { echo "t $(( $(date +%s) - start )) s"; }
E=$(ls .gpu/tests/epilogues-* | head -1)
timeout 240 $E --ignored --test-threads=1 > $OUT/tests.log 2>&1; echo "epilogues rc $?"
grep -E "^test |test result|panicked" $OUT/tests.log | cut -c1-200
t
S=8192x3072x768
timeout 150 .gpu/bin/tilekit tune --cache-path /tmp/tune.sled --kernel matmul_residual --shape $S --dtype bf16 > $OUT/tune.log 2>&1; echo "tune rc $?"
tail -6 $OUT/tune.log | cut -c1-200
.gpu/bin/tilekit cache --cache-path /tmp/tune.sled export $OUT/matmul_residual-h200.json > /dev/null 2>&1; echo "export rc $?"
t
for s in $S 4096x4096x4096; do
  timeout 120 .gpu/bin/tilekit bench --cache-path /tmp/tune.sled --kernel matmul_residual --shape $s --dtype bf16 --rounds 10 >> $OUT/bench.log 2>&1; echo "bench $s rc $?"
done
cat $OUT/bench.log | cut -c1-200 | tail -30
t
cd benches/peers && timeout 200 python3 residual.py --shapes $S,4096x4096x4096 --out $OUT/residual-peers.json 2>&1 | grep "residual peer" | cut -c1-220; cd ../..
t
