#!/usr/bin/env bash
# Session 34, call 1 (nvidia-h200; .gpu packed with PACK_TESTS="gpu_attention", then
# `cargo xtask candle-pack`, .gpu/bin/tilekit-bench-base = the build of 9a07694, the code
# before softmax's exp2):
#  1. every gpu_attention test (new: GQA 32/8 values, a backward at 4097, a sampled check
#     at S = 4096, varlen / D = 256 / f16 under the sanitizer) and compute-sanitizer
#     memcheck / racecheck / synccheck on the sanitizer tests;
#  2. tilekit-candle's GPU tests (new: scaled_dot_product_attention's training-step check);
#  3. softmax with exp2: A/B base, new, base, new (`tilekit-bench --only norms`,
#     TK_BENCH_LABEL=softmax: the declared default and best of space, bf16 and f32), the
#     new kernel tuned (bf16, f32 32768x4096) and launched from that cache, peers.py's
#     softmax peers (Triton, torch.compile, eager) in the same call.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_TUNE_CACHE=/tmp/e.sled
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
start=$(date +%s)
[[ -f .gpu/rest.tar.xz ]] && tar -xJf .gpu/rest.tar.xz -C .gpu
t() { echo "t $(( $(date +%s) - start )) s"; }
T=$(ls .gpu/tests/gpu_attention-* | head -1)
TILEKIT_CACHE_DIR=/tmp/tkc-t timeout 330 $T --ignored --test-threads=1 > $OUT/attention-tests.log 2>&1; echo "attention tests rc $?"
grep -E "^test |test result|panicked" $OUT/attention-tests.log | cut -c1-200
t
for tool in memcheck racecheck synccheck; do
  TILEKIT_CACHE_DIR=/tmp/tkc-t timeout 120 /usr/local/cuda/bin/compute-sanitizer --tool $tool $T --ignored --test-threads=1 gpu_attention_sanitizer 2>&1 | grep -E "^test |test result|SUMMARY|Error" | sed "s/^/$tool: /" >> $OUT/attention-tests.log
done
grep -E "^(memcheck|racecheck|synccheck)" $OUT/attention-tests.log | cut -c1-200
t
TILEKIT_CACHE_DIR=/tmp/tkc-c timeout 200 .gpu/candle-run $OUT > $OUT/candle.log 2>&1; echo "candle rc $?"
grep -E "^== |test result|panicked|FAILED|attention" $OUT/candle.log | cut -c1-200 | tail -20
t
for round in 1 2; do
  for which in base new; do
    bin=.gpu/bin/tilekit-bench; [[ $which == base ]] && bin=.gpu/bin/tilekit-bench-base
    echo "== $which round $round" >> $OUT/softmax.log
    TK_BENCH_LABEL=softmax TILEKIT_CACHE_DIR=/tmp/tkc-$which timeout 100 $bin --only norms --out /tmp/sm-$which-$round.json 2>&1 | grep -E "softmax" >> $OUT/softmax.log
  done
done
grep -E "^== |softmax" $OUT/softmax.log | cut -c1-200
t
for dt in bf16 f32; do
  timeout 100 .gpu/bin/tilekit tune --cache-path /tmp/tune-softmax.sled --kernel softmax --shape 32768x4096 --dtype $dt > /tmp/tune-$dt.log 2>&1; echo "tune softmax $dt rc $?"
  tail -4 /tmp/tune-$dt.log | cut -c1-200 | tee -a $OUT/softmax.log
done
.gpu/bin/tilekit cache --cache-path /tmp/tune-softmax.sled export $OUT/softmax-h200.json > /dev/null 2>&1; echo "export rc $?"
for round in 1 2; do
  echo "== new, tuned cache, round $round" >> $OUT/softmax.log
  TK_BENCH_TUNED=1 TILEKIT_TUNE_CACHE=/tmp/tune-softmax.sled TK_BENCH_LABEL=softmax TILEKIT_CACHE_DIR=/tmp/tkc-new timeout 100 .gpu/bin/tilekit-bench --only norms --out /tmp/sm-tuned-$round.json 2>&1 | grep -E "softmax" >> $OUT/softmax.log
  timeout 150 python3 benches/peers/peers.py --quick --only norms --out /tmp/peers-$round.json > /tmp/peers-$round.log 2>&1; echo "peers rc $?"
  grep -iE "softmax" /tmp/peers-$round.log | sed "s/^/peers $round: /" >> $OUT/softmax.log
done
grep -E "^== new, tuned|softmax|peers" $OUT/softmax.log | tail -16 | cut -c1-200
mkdir -p /tmp/res && cp /tmp/sm-*.json /tmp/peers-*.json /tmp/tune-*.log /tmp/res/ 2>/dev/null
tar -cJf $OUT/softmax-json.tar.xz -C /tmp res
t
