#!/usr/bin/env bash
# Session 25, fetch A/B (nvidia-h200): base 58b0512 (a direct window's slice loaded at the
# slice), new (every slice's load issued at the window: tk::window_fetch); rotary, stencil.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda
for round in 1 2; do
  for which in base new; do
    bin=.gpu/bin/tilekit-bench; [[ $which == base ]] && bin=.gpu/bin/tilekit-bench-base
    TILEKIT_CACHE_DIR=/tmp/tkc-$which timeout 100 $bin --only rotary,stencil --out $OUT/ab-$which-$round.json > /tmp/r.log 2>&1
    echo "== $which round $round rc $?"; grep -E "rotary3d|stencil5" /tmp/r.log | cut -c1-200
  done
done
