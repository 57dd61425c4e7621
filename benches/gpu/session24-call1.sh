#!/usr/bin/env bash
# Session 24, first call (nvidia-h200; carry .gpu packed with PACK_TESTS="gpu_attention"):
#  1. every gpu_attention test (the varlen test's first GPU run; the backward's causal M > N
#     and N = 1 cases), compute-sanitizer memcheck on the small forward + backward;
#  2. `tilekit tune` of attention_varlen (32x128x32x4x4096x4096, the `tune --all` problem)
#     into a fresh cache, exported (the shipped H200 entry);
#  3. the varlen bench (TK_ATTENTION_VARLEN=1) with the declared default (empty cache) and
#     with the tuned entry; its peers (benches/peers/varlen.py: flash varlen, per-sequence
#     cuDNN) and SDPA cuDNN on the uniform case, same call.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc-1
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
start=$(date +%s)
T=$(ls .gpu/tests/gpu_attention-*)
timeout 240 $T --ignored --test-threads=1 > $OUT/attention-tests.log 2>&1; echo "attention tests rc $?"
timeout 90 /usr/local/cuda/bin/compute-sanitizer --tool memcheck $T --ignored --test-threads=1 gpu_attention_sanitizer_small 2>&1 | grep -E "test result|SUMMARY|Error" | sed "s/^/memcheck: /" >> $OUT/attention-tests.log
grep -E "^test |test result|SUMMARY|panicked" $OUT/attention-tests.log | cut -c1-300
echo "t $(( $(date +%s) - start )) s"
C=/tmp/tune-varlen.sled
timeout 150 .gpu/bin/tilekit tune --cache-path $C --kernel attention_varlen --shape 32x128x32x4x4096x4096 --dtype bf16 > $OUT/tune-varlen.log 2>&1; echo "tune rc $?"; grep -E "winner|tuned" $OUT/tune-varlen.log | cut -c1-250
.gpu/bin/tilekit cache --cache-path $C export $OUT/varlen-h200-export.json 2>&1 | tail -1
echo "t $(( $(date +%s) - start )) s"
for which in default tuned; do
  cache=/tmp/empty-v.sled; [[ $which == tuned ]] && cache=$C
  TK_ATTENTION_VARLEN=1 TILEKIT_TUNE_CACHE=$cache timeout 60 .gpu/bin/tilekit-bench --only attention --out $OUT/varlen-bench-$which.json > /tmp/varlen-$which.log 2>&1
  echo "varlen bench $which rc $?"; grep -E "varlen" /tmp/varlen-$which.log | cut -c1-260
done
timeout 60 python3 benches/peers/varlen.py --out $OUT/varlen-peers.json 2>&1 | grep -E "varlen peer" | cut -c1-260
timeout 40 python3 benches/peers/sdpa.py --no-user --cases 0,1 --backends cudnn --out $OUT/sdpa.json > /tmp/sdpa.log 2>&1; echo "sdpa rc $?"
grep -E "sdpa library" /tmp/sdpa.log | cut -c1-300
echo "total $(( $(date +%s) - start )) s"
