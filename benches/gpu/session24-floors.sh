#!/usr/bin/env bash
# Session 24: issue 28's "resolve only with" column in one device call (nvidia-h200; carry
# .gpu packed with tilekit-bench). The library at `launch()` as a user runs it
# (TK_BENCH_TUNED=1: the shipped H200 layer), twice, around its peers:
#  1. forward + backward at issue 28's five shapes (TK_ATTENTION_TRAIN_ONLY=1), round 1;
#  2. attention_varlen: a uniform batch beside the fixed-length kernel, a ragged batch of 8
#     sequences (full H32; causal GQA 32/8) (TK_ATTENTION_VARLEN=1);
#  3. SDPA cuDNN and flash at the five shapes (inference, training, backward);
#     benches/peers/varlen.py (flash varlen, per-sequence cuDNN) on the varlen batches;
#  4. 1 and 2 again (round 2), and 1 with the declared defaults (no TK_BENCH_TUNED; not with
#     SKIP_DEFAULTS=1);
#  5. with ALL_TESTS=1 first: every gpu_attention test and compute-sanitizer memcheck on the
#     small forward + backward.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc-f TILEKIT_TUNE_CACHE=/tmp/empty-f.sled
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader
start=$(date +%s)
if [[ ${ALL_TESTS:-0} == 1 ]]; then
  T=$(ls .gpu/tests/gpu_attention-*)
  timeout 240 $T --ignored --test-threads=1 > $OUT/attention-tests.log 2>&1; echo "attention tests rc $?"
  timeout 90 /usr/local/cuda/bin/compute-sanitizer --tool memcheck $T --ignored --test-threads=1 gpu_attention_sanitizer_small 2>&1 | grep -E "test result|SUMMARY|Error" | sed "s/^/memcheck: /" >> $OUT/attention-tests.log
  grep -E "^test |test result|SUMMARY|panicked" $OUT/attention-tests.log | cut -c1-300
  echo "t $(( $(date +%s) - start )) s"
fi
B=.gpu/bin/tilekit-bench
for round in 1 2; do
  TK_BENCH_TUNED=1 TK_ATTENTION_TRAIN_ONLY=1 timeout 120 $B --only attention --out $OUT/train-tuned-$round.json > /tmp/t$round.log 2>&1
  echo "train tuned round $round rc $?"; grep -E "tuned configurations|library attention" /tmp/t$round.log | cut -c1-240
  TK_BENCH_TUNED=1 TK_ATTENTION_VARLEN=1 timeout 60 $B --only attention --out $OUT/varlen-tuned-$round.json > /tmp/v$round.log 2>&1
  echo "varlen tuned round $round rc $?"; grep -E "library attention" /tmp/v$round.log | cut -c1-260
  if [[ $round == 1 ]]; then
    timeout 150 python3 benches/peers/sdpa.py --no-user --backends cudnn,flash --out $OUT/sdpa.json > /tmp/sdpa.log 2>&1; echo "sdpa rc $?"
    grep -E "sdpa library" /tmp/sdpa.log | cut -c1-420
    timeout 60 python3 benches/peers/varlen.py --out $OUT/varlen-peers.json 2>&1 | grep -E "varlen peer" | cut -c1-200
  fi
  echo "t $(( $(date +%s) - start )) s"
done
if [[ ${SKIP_DEFAULTS:-0} != 1 ]]; then
  TK_ATTENTION_TRAIN_ONLY=1 timeout 120 $B --only attention --out $OUT/train-defaults.json > /tmp/td.log 2>&1
  echo "train defaults rc $?"; grep -E "library attention" /tmp/td.log | cut -c1-240
fi
echo "total $(( $(date +%s) - start )) s"
