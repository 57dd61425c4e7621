#!/usr/bin/env bash
# Issue 33 on the GPU machine, from the repository root, after `PACK_TESTS=gpu_training_kernels
# bash benches/gpu/pack.sh` here (and the baseline CLI copied to .gpu/bin/tilekit-base).
# Usage: bash benches/gpu/compile-time-run.sh PART..
#   ab:    the affected kernels' declared defaults at their representative shapes, the
#          baseline CLI (`tilekit-base bench`) and this tree's (`tilekit bench`) in turn, three
#          times each, each a fresh process (20 interleaved rounds each);
#   nvrtc: NVRTC's seconds here for a few variants' sources;
#   cold:  `tilekit-bench --only cold`: every representative problem's first launch on an
#          empty CUBIN cache;
#   cold-awkward: the same for cross_entropy and log_softmax at 8192x50257 (unaligned rows)
#          and the awkward matmul;
#   tests: the GPU tests of the training kernels.
# Writes logs and JSON under $OUT (default /tmp/out).
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export TILEKIT_CUDA_ROOT=/usr/local/cuda

problems=(
  "log_softmax 4096x50257"
  "log_softmax 32768x4096"
  "softmax_online 4096x50257"
  "softmax_bwd 4096x50257"
  "log_softmax_bwd 4096x50257"
  "cross_entropy 8192x50304"
  "cross_entropy_inplace 8192x50304"
  "partial_sum 264x4096"
)

for part in "$@"; do
case "$part" in
ab)
  # Per problem: base, new, base, new, base, new (separate processes, 20 interleaved rounds
  # each); one line per run with the default's median, all in ab.log.
  for p in "${problems[@]}"; do
    set -- $p
    for round in 1 2 3; do
      for side in base new; do
        bin=.gpu/bin/tilekit
        [[ $side == base ]] && bin=.gpu/bin/tilekit-base
        TILEKIT_CACHE_DIR=/tmp/tkc-$side $bin bench --kernel "$1" --shape "$2" --dtype bf16 \
          --rounds 20 > /tmp/ab.txt 2>&1
        echo "$side $round $1 $2 rc $? $(grep -E 'default +[0-9.]+ ' /tmp/ab.txt | head -n 1)"
      done
    done
  done | tee "$OUT/ab.log"
  ;;
nvrtc)
  # NVRTC's seconds on this machine for the variants a cold first launch compiles, beside the
  # same sources on the CI machine (pip NVRTC 13.0.88): is the difference the NVRTC build?
  python3 - <<'PY' 2>&1 | tee "$OUT/nvrtc.log"
import ctypes, subprocess, time
lib = ctypes.CDLL("/usr/local/cuda/lib64/libnvrtc.so")
major, minor = ctypes.c_int(), ctypes.c_int()
lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
print("NVRTC", major.value, minor.value)
for k, cfg, extra in [("log_softmax", None, ["--unaligned"]), ("cross_entropy", None, ["--unaligned"]),
                      ("softmax", None, []), ("matmul_bias_act", None, []),
                      ("log_softmax_bwd", "BLOCK=2048,WARPS=4", ["--unaligned"])]:
    args = [".gpu/bin/tilekit", "show", k, "--dtype", "bf16"] + (["--config", cfg] if cfg else []) + extra
    src = subprocess.run(args, capture_output=True).stdout
    prog = ctypes.c_void_p()
    lib.nvrtcCreateProgram(ctypes.byref(prog), src, b"k.cu", 0, None, None)
    opts = ["--gpu-architecture=sm_90a", "-std=c++17", "--ptxas-options=-v",
            "--include-path=/usr/local/cuda/include", "-lineinfo"]
    # The prelude headers: tilekit's own, from the repository.
    opts.append("--include-path=codegen/prelude")
    arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
    t = time.time(); rc = lib.nvrtcCompileProgram(prog, len(opts), arr); dt = time.time() - t
    print(f"{k} {cfg or 'default'} {' '.join(extra)}: rc {rc}, {dt:.2f} s, source {len(src)} bytes")
PY
  ;;
cold)
  TILEKIT_CACHE_DIR=/tmp/tkc-cold .gpu/bin/tilekit-bench --only cold --out "$OUT/cold.json" 2>&1 | tee "$OUT/cold.log"
  ;;
cold-awkward)
  # The issue's own first-launch target (rows of 50257 bf16 are not 16-byte aligned: the
  # general variant), and the awkward matmul, each in a new process on an empty cache.
  for p in "cross_entropy 8192x50257 bf16" "log_softmax 8192x50257 bf16" "matmul 8192x768x50257 bf16"; do
    set -- $p
    d=$(mktemp -d)
    TILEKIT_CACHE_DIR=$d .gpu/bin/tilekit-bench cold-child "$1" "$2" "$3" 2>&1 | tee -a "$OUT/cold-awkward.log"
    rm -rf "$d"
  done
  ;;
tests)
  export TILEKIT_CACHE_DIR=/tmp/tkc
  for b in .gpu/tests/gpu_training_kernels-*; do
    "$b" --ignored --test-threads=1 2>&1 | tail -n 30 | tee -a "$OUT/tests.log"
  done
  ;;
*)
  echo "unknown part $part" >&2
  ;;
esac
done
