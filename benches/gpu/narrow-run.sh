#!/usr/bin/env bash
# Issue 34 run: narrow-row kernels on the H200.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc
L=$OUT/run.log
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv >> $L 2>&1
echo "== gpu_kernels narrow + smoke" >> $L
t=$(ls .gpu/tests/gpu_kernels-*)
(time $t --ignored --test-threads=1 gpu_narrow_row gpu_smoke gpu_softmax_every gpu_rmsnorm_every) >> $L 2>&1
echo "== tilekit-bench narrow" >> $L
(time .gpu/bin/tilekit-bench --only narrow --out $OUT/narrow.json) >> $L 2>&1
echo "== candle-run" >> $L
(time bash .gpu/candle-run $OUT) >> $L 2>&1
echo done >> $L
