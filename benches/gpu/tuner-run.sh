#!/usr/bin/env bash
# The tuner's GPU run (issue 5), on the GPU machine from the repository root, after
#   ../shared/tools/gpu-pack -p tilekit-tests -p tilekit-benches -p tilekit-tuner -p tilekit-cli
# here (and the example copied: cp target/release/examples/tune_user_kernel .gpu/bin/).
#   bash benches/gpu/tuner-run.sh PART     (PART: tests | all | quality | triton)
# Writes logs and JSON under $OUT (default /tmp/out).
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export TILEKIT_CUDA_ROOT=/usr/local/cuda
export TILEKIT_TUNE_CACHE=${TILEKIT_TUNE_CACHE:-/tmp/tune.sled}
TK=.gpu/bin/tilekit

# t CMD...: runs CMD, then prints its wall time and exit code.
t() {
  local s e rc
  s=$(date +%s%N)
  "$@"
  rc=$?
  e=$(date +%s%N)
  echo "[$(( (e - s) / 1000000 )) ms, rc $rc] $*"
  return $rc
}

case "${1:-all}" in
tests)
  export TILEKIT_CACHE_DIR=/tmp/tkc-tests
  for b in .gpu/tests/tune_gpu-* .gpu/tests/gpu_kernels-* .gpu/tests/gpu_graphs-*; do
    t "$b" --ignored --test-threads=1 2>&1 | tail -n 30
  done
  ;;
all)
  # Cold: empty CUBIN cache, the driver's compute cache off, empty tuning cache.
  rm -rf /tmp/tkc-all "$TILEKIT_TUNE_CACHE"
  export TILEKIT_CACHE_DIR=/tmp/tkc-all CUDA_CACHE_DISABLE=1
  nvidia-smi -L
  t $TK devices
  t $TK tune --all --out "$OUT/tune_all.json" 2>&1 | tee "$OUT/tune_all.log" | tail -n 80
  # A second process sees the winners; a second --all skips them (resumable).
  t $TK cache show 2>&1 | tee "$OUT/cache_show.txt"
  t $TK cache export "$OUT/h100.json"
  t $TK tune --all 2>&1 | tail -n 12
  for spec in "softmax 32768x4096 bf16" "rmsnorm 32768x4096 bf16" "softmax 32768x4096 f32" "matmul 4096x4096x4096 bf16"; do
    set -- $spec
    t $TK bench --kernel "$1" --shape "$2" --dtype "$3" --svg "$OUT/roofline_$1_$3.svg" --out "$OUT/bench_$1_$3.json" 2>&1 | tail -n 20
  done
  t $TK bench --kernel scale_chain --shape 268435456 --dtype f32 --scalar repeats=256 --out "$OUT/bench_chain256.json" 2>&1 | tail -n 20
  if [ -x .gpu/bin/tune_user_kernel ]; then
    t .gpu/bin/tune_user_kernel 2>&1 | tail -n 20
  fi
  ;;
quality)
  # Adaptive vs exhaustive on the same space; cold and warm tuning wall time.
  for spec in "softmax 32768x4096 bf16" "matmul 4096x4096x4096 bf16"; do
    set -- $spec
    rm -rf /tmp/tkc-q
    export TILEKIT_CACHE_DIR=/tmp/tkc-q CUDA_CACHE_DISABLE=1
    t $TK tune --kernel "$1" --shape "$2" --dtype "$3" --dry-run --seed 1 --out "$OUT/q_$1_adaptive_cold.json" 2>&1 | tail -n 4
    t $TK tune --kernel "$1" --shape "$2" --dtype "$3" --dry-run --seed 1 --out "$OUT/q_$1_adaptive_warm.json" 2>&1 | tail -n 4
    t $TK tune --kernel "$1" --shape "$2" --dtype "$3" --dry-run --seed 1 --exhaustive --out "$OUT/q_$1_exhaustive.json" 2>&1 | tail -n 4
    a=$(python3 benches/gpu/winner.py "$OUT/q_$1_adaptive_warm.json")
    e=$(python3 benches/gpu/winner.py "$OUT/q_$1_exhaustive.json")
    echo "adaptive pick: $a; exhaustive best: $e"
    t $TK bench --kernel "$1" --shape "$2" --dtype "$3" --config "$a" --config "$e" --out "$OUT/q_$1_retime.json" 2>&1 | tail -n 12
  done
  ;;
triton)
  t python3 benches/peers/triton_autotune.py --out "$OUT/triton_autotune.json" 2>&1 | tail -n 8
  ;;
esac
