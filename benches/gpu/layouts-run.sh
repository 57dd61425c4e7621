#!/usr/bin/env bash
# The layouts/tensor-core GPU run (issue 9), on the GPU machine from the repository root,
# after `bash benches/gpu/pack.sh` here. Usage: bash benches/gpu/layouts-run.sh PART
#   PART: matmul-tests | pad-tests | pad-ncu | tune-awkward | user2d-tests | more-tests | user-cli | sass | bench | peers |
#         regress | sanitize | ab | tune-matmul | tune-all | compile-all |
#         lnb-ncu | lnb-sass | issue13-table |
#         tune-train (shipped entries for issue 13's kernels) | norms-rounds |
#         train (= train-tests train-bench train-peers train-ncu train-plots, issue 13, < 10 min)
# Writes logs and JSON under $OUT (default /tmp/out).
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export TILEKIT_CUDA_ROOT=/usr/local/cuda
export TILEKIT_CACHE_DIR=${TILEKIT_CACHE_DIR:-/tmp/tkc}
export PYTHONUNBUFFERED=1
# Nsight Compute, for the parts that profile (benches/gpu/train-ncu.sh finds it the same way).
NCU=${NCU:-$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)}

t() {
  local s e rc
  s=$(date +%s%N)
  "$@"
  rc=$?
  e=$(date +%s%N)
  echo "[$(( (e - s) / 1000000 )) ms, rc $rc] $*"
  return $rc
}

for part in "$@"; do
case "$part" in
matmul-tests)
  for b in .gpu/tests/gpu_matmul-* .gpu/tests/gpu_matmul_cols-*; do
    t "$b" --ignored --test-threads=1 2>&1 | tail -n 40 | tee -a "$OUT/matmul-tests.log"
  done
  ;;
regress)
  for b in .gpu/tests/gpu_kernels-* .gpu/tests/gpu_graphs-*; do
    t "$b" --ignored --test-threads=1 2>&1 | tail -n 25 | tee -a "$OUT/regress.log"
  done
  ;;
sass)
  # The default bf16 matmul variant's SASS: HMMA present, no local memory (LDL/STL).
  python3 - <<'PY' 2>&1 | tee -a "$OUT/sass.log"
import glob, os, subprocess
files = sorted(glob.glob(os.environ["TILEKIT_CACHE_DIR"] + "/**/*", recursive=True), key=os.path.getmtime)
n = 0
best = (0, "")
for f in files:
    if not os.path.isfile(f): continue
    b = open(f, "rb").read()
    i = b.find(b"\x7fELF")
    if i < 0: continue
    open("/tmp/k.cubin", "wb").write(b[i:])
    s = subprocess.run(["/usr/local/cuda/bin/cuobjdump", "-sass", "/tmp/k.cubin"], capture_output=True, text=True).stdout
    if "HMMA" not in s: continue
    n += 1
    print(f"{os.path.basename(f)[:16]}: HMMA {s.count('HMMA')}, LDSM {s.count('LDSM')}, LDGSTS {s.count('LDGSTS')}, LDL {s.count('LDL')}, STL {s.count('STL')}, FFMA {s.count('FFMA')}")
    score = s.count("LDGSTS") * 1000 + s.count("HMMA")
    if s.count("LDGSTS") > 0 and score > best[0]:
        best = (score, s)
print(f"{n} cubins with HMMA")
open(os.environ.get("OUT", "/tmp") + "/sass-largest.txt", "w").write(best[1])
PY
  ;;
bench)
  t .gpu/bin/tilekit-bench --only "${BENCH_ONLY:-matmul}" --out "$OUT/tilekit-bench.json" 2>&1 | tee -a "$OUT/bench.log"
  ;;
peers)
  t python3 benches/peers/peers.py --only "${PEERS_ONLY:-matmul}" --out "$OUT/peers.json" 2>&1 | tail -n 30 | tee -a "$OUT/peers.log"
  ;;
pad-tests)
  # Issue 10: PAD64 and misaligned outputs (bitwise against PAD64 = false and the CPU),
  # the launch graphs (the scratch pool under capture).
  for b in .gpu/tests/gpu_pad64-* .gpu/tests/gpu_graphs-* .gpu/tests/batched-*; do
    t "$b" --ignored --test-threads=1 2>&1 | grep -v "^test .* ok$" | tail -n 30 | tee -a "$OUT/pad-tests.log"
  done
  ;;
user2d-tests)
  for b in .gpu/tests/user2d-*; do
    t "$b" --ignored --test-threads=1 2>&1 | tail -n 20 | tee -a "$OUT/user2d-tests.log"
  done
  ;;
ab)
  # The 1-D kernels, launch and graph figures (AB_ONLY adds others, e.g. matmul) before a
  # change (tilekit-bench-base, built from /work/wt/base by pack.sh) and after,
  # interleaved: base, new, base, new; each with its own CUBIN cache.
  for r in 1 2; do
    for which in base new; do
      bin=.gpu/bin/tilekit-bench; [ $which = base ] && bin=.gpu/bin/tilekit-bench-base
      t env TILEKIT_CACHE_DIR=/tmp/tkc-ab-$which $bin --only "${AB_ONLY:-chain,norms,launch,graph}" --out "$OUT/ab_${which}_$r.json" 2>&1 | grep -v "^  " | tail -n 40 > "$OUT/ab_${which}_$r.log"
      tail -n 3 "$OUT/ab_${which}_$r.log"
    done
  done
  ;;
tune-matmul)
  # Cold tune (empty CUBIN and tuning caches) of matmul 4096^3 bf16, then exhaustive.
  TK=.gpu/bin/tilekit
  export TILEKIT_TUNE_CACHE=/tmp/tune-q.sled
  rm -rf /tmp/tkc-q /tmp/tune-q.sled
  export TILEKIT_CACHE_DIR=/tmp/tkc-q CUDA_CACHE_DISABLE=1
  t $TK tune --kernel matmul --shape 4096x4096x4096 --dtype bf16 --seed 1 --out "$OUT/q_matmul_cold.json" 2>&1 | tail -n 14
  t $TK tune --kernel matmul --shape 4096x4096x4096 --dtype bf16 --seed 1 --dry-run --exhaustive --force --out "$OUT/q_matmul_exhaustive.json" 2>&1 | tail -n 6
  a=$(python3 benches/gpu/winner.py "$OUT/q_matmul_cold.json")
  e=$(python3 benches/gpu/winner.py "$OUT/q_matmul_exhaustive.json")
  echo "adaptive pick: $a; exhaustive best: $e"
  t $TK bench --kernel matmul --shape 4096x4096x4096 --dtype bf16 --config "$a" --config "$e" --out "$OUT/q_matmul_retime.json" 2>&1 | tail -n 12
  ;;
more-tests)
  # Everything else with GPU tests: attention (accumulator layouts), views, stencil, the
  # tuner's GPU tests.
  for b in .gpu/tests/attention-* .gpu/tests/gpu_views-* .gpu/tests/stencil-* .gpu/tests/tune_gpu-* .gpu/tests/epilogues-*; do
    [ -x "$b" ] || continue
    t "$b" --ignored --test-threads=1 2>&1 | tail -n 25 | tee -a "$OUT/more-tests.log"
  done
  ;;
user-cli)
  # A user's binary (tests/src/bin/my_kernels.rs, `tilekit::cli_main`) tuning and timing its
  # own kernel on the GPU, workers being that same binary.
  export TILEKIT_TUNE_CACHE=/tmp/tune-user.sled
  rm -rf /tmp/tune-user.sled
  t .gpu/bin/my-kernels tune --kernel double --shape 268435456 --dtype bf16 --out "$OUT/user_cli_tune.json" 2>&1 | tail -n 12 | tee -a "$OUT/user-cli.log"
  t .gpu/bin/my-kernels bench --kernel double --shape 268435456 --dtype bf16 --out "$OUT/user_cli_bench.json" 2>&1 | tail -n 12 | tee -a "$OUT/user-cli.log"
  ;;
pad-ncu)
  # Issue 10: where a padded 4097^3 launch's time goes: the third launch's three kernels
  # (copy of A, copy of B, the GEMM), duration, DRAM bytes, SM and memory throughput.
  export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export TILEKIT_CUDA_ROOT=${TILEKIT_CUDA_ROOT:-/usr/local/cuda} TILEKIT_CACHE_DIR=/tmp/tkc-ncu
  .gpu/bin/tilekit-bench ncu-target pad64 > "$OUT/ncu-pad64.app.log" 2>&1
  t "$NCU" --csv --print-units base --launch-skip 6 --launch-count 3 \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed,launch__grid_size,launch__registers_per_thread \
    .gpu/bin/tilekit-bench ncu-target pad64 > "$OUT/ncu-pad64.csv" 2> "$OUT/ncu-pad64.err"
  grep -E '^"' "$OUT/ncu-pad64.csv" | cut -d, -f5,12- | tail -n 30
  ;;
tune-awkward)
  # Issue 10: cold tunes at the awkward shapes; the tuner's PAD64 choice per shape.
  TK=.gpu/bin/tilekit
  export TILEKIT_TUNE_CACHE=/tmp/tune-awk.sled TILEKIT_CACHE_DIR=/tmp/tkc-awk
  rm -rf /tmp/tune-awk.sled /tmp/tkc-awk
  for spec in "matmul 4097x4097x4097" "matmul 1000x1000x1000" "matmul 8192x768x50257" "matmul_bias_act 4097x4097x4097"; do
    set -- $spec
    t $TK tune --kernel $1 --shape $2 --dtype bf16 --seed 1 --out "$OUT/awk_$1_$2.json" 2>&1 | tail -n 8 | tee -a "$OUT/tune-awkward.log"
  done
  ;;
tune-all)
  TK=.gpu/bin/tilekit
  export TILEKIT_TUNE_CACHE=/tmp/tune-all.sled TILEKIT_CACHE_DIR=/tmp/tkc-all
  t $TK tune --all --out "$OUT/tune_all.json" 2>&1 | tail -n 40
  t $TK cache export "$OUT/h100.json"
  ;;
tune-train)
  # Shipped entries for issue 13's kernels: `tilekit tune --all --kernel K` (each kernel's
  # representative problems, kernels-lib/src/representative.rs: the one list of shapes),
  # most important kernel first, each cut off after TUNE_EACH_S seconds, all stopped
  # TUNE_TOTAL_S seconds in, then the cache exported. TUNE_KERNELS="a b .." tunes those.
  TK=.gpu/bin/tilekit
  export TILEKIT_TUNE_CACHE=/tmp/tune-train.sled TILEKIT_CACHE_DIR=/tmp/tkc-train
  start=$(date +%s)
  for kern in ${TUNE_KERNELS:-log_softmax cross_entropy layernorm layernorm_bwd rmsnorm_bwd swiglu \
                rmsnorm_residual partial_sum cross_entropy_inplace swiglu_bwd softmax_online softmax_bwd \
                log_softmax_bwd gelu gelu_bwd bias_gelu silu silu_bwd bias_add residual_add scale}; do
    left=$(( ${TUNE_TOTAL_S:-480} - ($(date +%s) - start) ))
    [ "$left" -lt 20 ] && { echo "tune-train: time box reached before $kern"; break; }
    each=${TUNE_EACH_S:-150}
    [ "$each" -gt "$left" ] && each=$left
    t timeout "$each" $TK tune --all --kernel "$kern" --quiet 2>&1 | tail -n 3 | tee -a "$OUT/tune-train.log"
  done
  t $TK cache export "$OUT/h100-train.json" 2>&1 | tail -n 3 | tee -a "$OUT/tune-train.log"
  ;;
train)
  # Issue 13 in one call: GPU tests, the bench, the peers, ncu's DRAM bytes, roofline plots.
  bash "$0" train-tests train-bench train-peers train-ncu train-plots
  ;;
issue13-table)
  # Issue 13's "resolve only with" table in one call (< 10 min; run 75's three commands):
  # the tilekit bench of copy, the x*2 chain, the norms and the training kernels, the
  # peers of the same workloads (torch eager, torch.compile, Triton), and ncu's DRAM bytes
  # of the wide-row kernels and the LayerNorm backward.
  BENCH_ONLY=copy,chain,norms,train bash "$0" bench
  t python3 benches/peers/peers.py --quick --only copy,chain,norms,train --out "$OUT/peers.json" 2>&1 \
    | tail -n 60 | tee -a "$OUT/peers.log"
  t bash benches/gpu/train-ncu.sh log_softmax cross_entropy layernorm_bwd 2>&1 | tail -n 4
  # Keep the summary ($OUT/train-ncu.log); the per-kernel files would crowd out the rest of
  # what the device call returns.
  rm -f "$OUT"/ncu-*
  ;;
norms-rounds)
  # Softmax and RMSNorm forward against the peers in interleaved rounds (issue 13's first
  # row asks for medians of interleaved rounds): ROUNDS (default 5) times the tilekit bench
  # of the norms, then the peers' script of the same workloads, alternately; the medians
  # over rounds and their ratios in $OUT/norms-rounds.log and .json (benches/gpu/norms_rounds.py).
  # NORMS_IDLE=1: each round also times tilekit with the stream idle before each launch.
  mkdir -p "$OUT/nr"
  for i in $(seq 1 "${ROUNDS:-5}"); do
    t .gpu/bin/tilekit-bench --only norms --out "$OUT/nr/tilekit-$i.json" > /dev/null 2>&1
    [ "${NORMS_IDLE:-0}" = 1 ] && t env TILEKIT_BENCH_IDLE=1 .gpu/bin/tilekit-bench --only norms \
      --out "$OUT/nr/tilekit-idle-$i.json" > /dev/null 2>&1
    t python3 benches/peers/peers.py --quick --only norms --out "$OUT/nr/peers-$i.json" > /dev/null 2>&1
  done
  python3 benches/gpu/norms_rounds.py "$OUT/nr" 2>&1 | tee -a "$OUT/norms-rounds.log"
  mv "$OUT/nr/norms-rounds.json" "$OUT/" 2>/dev/null
  # The rounds' own files would crowd out what the call returns.
  rm -rf "$OUT/nr"
  ;;
train-tests-quick)
  # The activations and the misaligned-rows tests (without the 8-minute gpu_training_kernels).
  for b in .gpu/tests/gpu_activations-* .gpu/tests/gpu_unaligned_rows-*; do
    t "$b" --ignored --test-threads=1 2>&1 | grep -v "^test .* ok$" | tail -n 40 | tee -a "$OUT/train-tests.log"
  done
  ;;
train-tests)
  # Eight test threads: the cold cache's NVRTC compiles run in parallel on the 16 cores
  # (gpu_training_kernels 212 s instead of 466 s, BENCHMARKS run 88).
  for b in .gpu/tests/gpu_training_kernels-* .gpu/tests/gpu_activations-* .gpu/tests/gpu_unaligned_rows-*; do
    t "$b" --ignored --test-threads=8 2>&1 | grep -v "^test .* ok$" | tail -n 40 | tee -a "$OUT/train-tests.log"
  done
  # Misaligned row views: no access may leave a view.
  t /usr/local/cuda/bin/compute-sanitizer --tool memcheck --print-limit 10 .gpu/tests/gpu_unaligned_rows-* --ignored \
    --test-threads=1 gpu_row_copy 2>&1 | tail -n 8 | tee -a "$OUT/train-tests.log"
  ;;
train-bench)
  t .gpu/bin/tilekit-bench --only train --out "$OUT/train-bench.json" 2>&1 | tee -a "$OUT/train-bench.log"
  ;;
lnb-ncu)
  # LayerNorm backward, where its time goes: ncu's sections (SpeedOfLight, memory,
  # warp stalls, scheduler, occupancy) for the library's layernorm_bwd and
  # torch.compile's main kernel of the same backward
  # (benches/peers/inductor_lnb.py, which also prints inductor's kernel times and config).
  t env NCU_SECTIONS=1 bash benches/gpu/train-ncu.sh layernorm_bwd 2>&1 | tail -n 4
  t python3 benches/peers/inductor_lnb.py > "$OUT/inductor-lnb.txt" 2>&1
  t "$NCU" --print-units base -k regex:triton_per --launch-skip 3 --launch-count 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats \
    --section SchedulerStats --section Occupancy --section LaunchStats \
    python3 benches/peers/inductor_lnb.py > "$OUT/ncu-inductor-lnb-sections.txt" 2>&1
  ;;
lnb-sass)
  # Per-SASS-instruction warp stall samples (ncu's source page) of the library's
  # layernorm_bwd and of torch.compile's main LayerNorm-backward kernel, gzipped CSV.
  .gpu/bin/tilekit-bench ncu-target layernorm_bwd > /dev/null 2>&1
  t "$NCU" --section SourceCounters --section WarpStateStats --page source --print-source sass --csv \
    -k regex:tilekit_kernel --launch-skip 2 --launch-count 1 .gpu/bin/tilekit-bench ncu-target layernorm_bwd \
    2> "$OUT/lnb-sass.err" | gzip > "$OUT/lnb-sass.csv.gz"
  t "$NCU" --section SourceCounters --section WarpStateStats --page source --print-source sass --csv \
    -k regex:triton_per --launch-skip 3 --launch-count 1 python3 benches/peers/inductor_lnb.py \
    2> "$OUT/ind-sass.err" | gzip > "$OUT/ind-sass.csv.gz"
  ;;
train-peers)
  t python3 benches/peers/peers.py --quick --only train --out "$OUT/train-peers.json" 2>&1 | tail -n 40 | tee -a "$OUT/train-peers.log"
  ;;
train-ncu)
  t bash benches/gpu/train-ncu.sh 2>&1 | tail -n 12
  ;;
train-plots)
  # `tilekit bench` (tuned vs default, interleaved) with the peers' times of the same run,
  # and its roofline SVG, for three kernels.
  TK=.gpu/bin/tilekit
  for spec in "log_softmax 4096x50257 log_softmax" "cross_entropy 8192x50304 cross_entropy --scalar=label_smoothing=0" \
              "swiglu 16384x11008 swiglu"; do
    set -- $spec
    kern=$1 shape=$2 case=$3; shift 3
    peers=$(python3 benches/gpu/train_peers.py "$OUT/train-peers.json" "$case")
    t $TK bench --kernel "$kern" --shape "$shape" --dtype bf16 --rounds 10 "$@" $peers \
      --svg "$OUT/roofline-$kern.svg" --out "$OUT/bench-$kern.json" 2>&1 | tail -n 10 | tee -a "$OUT/train-plots.log"
  done
  ;;
compile-all)
  # `cargo xtask compile-all` on the GPU machine's 16 cores: the NVRTC variant test with
  # TILEKIT_COMPILE_ALL=1 (every valid variant of every library kernel, sm_80 and sm_90a),
  # with the CUDA toolkit's NVRTC and headers. COMPILE_KERNELS=a,b limits it to those
  # kernels (to split the work over calls under the 10-minute limit). No `tail` in the pipe:
  # a call cut off at its limit keeps the lines of the kernels that finished.
  for b in .gpu/tests/nvrtc_variants-*; do
    TILEKIT_COMPILE_ALL=1 TILEKIT_COMPILE_KERNELS=${COMPILE_KERNELS:-} \
      t "$b" --nocapture 2>&1 | grep --line-buffered -v "^test .* ok$" | tee -a "$OUT/compile-all.log"
  done
  ;;
sanitize)
  for tool in memcheck racecheck synccheck; do
    t /usr/local/cuda/bin/compute-sanitizer --tool $tool --print-limit 10 .gpu/tests/gpu_matmul-* --ignored --test-threads=1 gpu_matmul_sanitizer_small 2>&1 | tail -n 8 | tee -a "$OUT/sanitize.log"
  done
  ;;
esac
done
