#!/usr/bin/env bash
# Session 34, call 7 (nvidia-h200; .gpu packed after the attention_varlen entries were
# re-keyed): attention_varlen at `launch()` with the shipped H200 layer again
# (TK_ATTENTION_VARLEN=1, two rounds) beside benches/peers/varlen.py — run 208's varlen
# figures ran the declared default, the entries' codegen key having gone stale when this
# session's doc edit moved the template's source-line comments.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc-v TILEKIT_TUNE_CACHE=/tmp/empty-v.sled
[[ -f .gpu/rest.tar.xz ]] && tar -xJf .gpu/rest.tar.xz -C .gpu
for round in 1 2; do
  TK_BENCH_TUNED=1 TK_ATTENTION_VARLEN=1 timeout 60 .gpu/bin/tilekit-bench --only attention --out $OUT/varlen-tuned-$round.json > /tmp/v$round.log 2>&1
  echo "varlen tuned round $round rc $?"; grep -E "tuned configurations|library attention" /tmp/v$round.log | cut -c1-260
  [[ $round == 1 ]] && timeout 60 python3 benches/peers/varlen.py --out $OUT/varlen-peers.json 2>&1 | grep -E "varlen peer" | cut -c1-200
done
