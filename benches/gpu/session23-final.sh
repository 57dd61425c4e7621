#!/usr/bin/env bash
# Session 23's last device call (nvidia-h200; carry .gpu packed with
# PACK_TESTS="gpu_attention hopper_engine"): the scalar-gather GPU test (a chained-form
# kernel whose key rows start at an offset read before the loop), the attention backward
# test after the delta pre-pass's change, and `tilekit tune` of attention_bwd_delta (the
# shipped entry).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc-f
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv > $OUT/gpu.txt
start=$(date +%s)
T=$(ls .gpu/tests/hopper_engine-*)
timeout 60 $T --ignored --test-threads=1 > $OUT/hopper-engine-tests.log 2>&1; echo "hopper_engine GPU test rc $?"
grep -E "^test |test result|panicked" $OUT/hopper-engine-tests.log | cut -c1-300
T=$(ls .gpu/tests/gpu_attention-*)
timeout 200 $T --ignored --test-threads=1 gpu_attention_backward gpu_attention_sanitizer > $OUT/attention-tests.log 2>&1; echo "attention backward tests rc $?"
grep -E "^test |test result|panicked" $OUT/attention-tests.log | cut -c1-300
C=/tmp/tune-delta.sled
timeout 60 .gpu/bin/tilekit tune --cache-path $C --kernel attention_bwd_delta --shape 128x4096x128 --dtype bf16 > /tmp/tune.log 2>&1
echo "tune rc $?"; grep -E "winner" /tmp/tune.log | cut -c1-300
.gpu/bin/tilekit cache --cache-path $C export $OUT/delta-export.json 2>&1 | tail -1
echo "total $(( $(date +%s) - start )) s"
