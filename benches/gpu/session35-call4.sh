#!/usr/bin/env bash
# Session 35, call 4 (nvidia-h200; .gpu packed with PACK_TESTS="shared_row gpu_unaligned_rows
# gpu_training_kernels"; run 217, a prelude change reverted after it): general variants' contiguous loads and stores as vectors where the
# view has unit stride and the group's address is aligned (`tk::contig_vec_ok`).
#  1. GPU tests: shared_row (kept log-softmax within one bf16 ulp) + racecheck; every
#     misalignment of the row kernels; the softmax family and cross-entropy;
#  2. log_softmax / softmax_online / log_softmax_bwd 4096x50257 bf16 at the configurations of
#     runs 214-215 (`tilekit bench`, general variant: rows 2 bytes off alignment), twice;
#  3. softmax 32768x4096 bf16 with the shipped layer; peers.py --quick --only train,norms.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
start=$(date +%s)
tar -xJf .gpu/rest.tar.xz -C .gpu
S=$(ls .gpu/tests/shared_row-* | head -1); U=$(ls .gpu/tests/gpu_unaligned_rows-* | head -1); K=$(ls .gpu/tests/gpu_training_kernels-* | head -1)
timeout 100 $S --ignored --test-threads=1 > $OUT/tests.log 2>&1; echo "shared_row rc $?"
timeout 200 $U --ignored --test-threads=1 >> $OUT/tests.log 2>&1; echo "unaligned rows rc $?"
timeout 200 $K --ignored gpu_softmax_family --test-threads=1 >> $OUT/tests.log 2>&1; echo "softmax family rc $?"
timeout 200 $K --ignored gpu_cross_entropy --test-threads=1 >> $OUT/tests.log 2>&1; echo "cross-entropy rc $?"
grep -E "^test |test result|panicked" $OUT/tests.log | cut -c1-200
timeout 150 /usr/local/cuda/bin/compute-sanitizer --tool racecheck --print-limit 5 $S --ignored gpu_shared_row --test-threads=1 > $OUT/racecheck.log 2>&1
echo "racecheck rc $?: $(grep -E "RACECHECK SUMMARY|test result" $OUT/racecheck.log | tr '\n' ' ')"
echo "t $(( $(date +%s) - start )) s"
B=.gpu/bin/tilekit
for round in 1 2; do
  for kc in "log_softmax BLOCK=1024,WARPS=16,MIN_BLOCKS=1" "log_softmax BLOCK=4096,WARPS=8,MIN_BLOCKS=2" "softmax_online BLOCK=2048,WARPS=16" "log_softmax_bwd BLOCK=2048,WARPS=32"; do
    set -- $kc
    timeout 60 $B bench --kernel $1 --shape 4096x50257 --dtype bf16 --config $2 --cache-path /tmp/none.sled > /tmp/b.log 2>&1
    echo "round $round $1 $2: $(grep -E 'given' /tmp/b.log | tr -s ' ' | cut -c1-120)" | tee -a $OUT/rows.log
  done
done
timeout 60 $B bench --kernel softmax --shape 32768x4096 --dtype bf16 --cache-path /tmp/none.sled > /tmp/b.log 2>&1
echo "softmax bf16: $(grep -E '^BLOCK' /tmp/b.log | tr -s ' ' | tr '\n' ';')" | tee -a $OUT/rows.log
echo "t $(( $(date +%s) - start )) s"
timeout 200 python3 benches/peers/peers.py --quick --only train,norms --out $OUT/peers.json > $OUT/peers.log 2>&1; echo "peers rc $?"
grep -E "(eager|triton|compile) +(log_softmax|softmax) " $OUT/peers.log | sort -u | cut -c1-160
echo "total $(( $(date +%s) - start )) s"
