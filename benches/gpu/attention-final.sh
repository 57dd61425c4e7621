#!/usr/bin/env bash
# The final attention call of session 20: the Hopper GPU tests (GEMM regression), the attention
# GPU tests + sanitizer + bench + SDPA (attention-run.sh), then `tilekit tune` of the library
# attention at B4 H32 S4096 D128 bf16, full and causal, into a fresh cache exported to
# $OUT/attention-h200-export.json (the shipped H200 entries). Carry .gpu.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc
timeout 100 .gpu/tests/gpu_hopper-* --ignored --test-threads=1 2>&1 | grep -E "^test |test result" > $OUT/hopper.log; cat $OUT/hopper.log | tail -1
bash benches/gpu/attention-run.sh 2>&1 | grep -v "^+" | grep -E "test result|tests rc|SUMMARY|attention|rc " | cut -c1-220
