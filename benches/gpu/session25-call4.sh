#!/usr/bin/env bash
# Session 25, call 4 (nvidia-h200; .gpu/bin/tilekit-bench-base = this tree with
# `__launch_bounds__(threads)`, .gpu/bin/tilekit-bench = the same with `(threads, 1)` where
# no MIN_BLOCKS is given: ptxas then does not cap registers for occupancy; the rotary's
# default variant spilled under the cap, 2.56 M local requests in run 149's ncu):
#  A/B base / new: `--only rotary,stencil,chain,norms,train` (declared defaults and every
#  configuration), then base / new again for rotary,stencil,norms.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda
start=$(date +%s)
for which in base new; do
  bin=.gpu/bin/tilekit-bench; [[ $which == base ]] && bin=.gpu/bin/tilekit-bench-base
  TILEKIT_CACHE_DIR=/tmp/tkc-$which timeout 200 $bin --only rotary,stencil,chain,norms,train --out $OUT/ab-$which.json > $OUT/ab-$which.log 2>&1
  echo "== $which rc $? t $(( $(date +%s) - start )) s"
done
for which in base new; do
  bin=.gpu/bin/tilekit-bench; [[ $which == base ]] && bin=.gpu/bin/tilekit-bench-base
  TILEKIT_CACHE_DIR=/tmp/tkc-$which timeout 100 $bin --only rotary,stencil,norms --out /dev/null > /tmp/r2.log 2>&1
  echo "== $which round 2 rc $?"; grep -E "rotary3d|stencil5|norms " /tmp/r2.log | cut -c1-200 | tee -a $OUT/round2.log
done
python3 - <<'PY'
import re, os
out = os.environ["OUT"]
def rows(path):
    d = {}
    for l in open(path):
        m = re.match(r"(\w+)\s+(.+?)\s+launch\(\)\s+([\d.]+) ms.*best of space\s+([\d.]+) ms", l)
        if m: d[m.group(2).strip()] = (float(m.group(3)), float(m.group(4)))
        m = re.match(r"chain\s+tilekit default\s+(R=\d+)\s+([\d.]+) ms", l)
        if m: d["chain " + m.group(1)] = (float(m.group(2)), float(m.group(2)))
    return d
b, n = rows(f"{out}/ab-base.log"), rows(f"{out}/ab-new.log")
for k in b:
    if k in n:
        print(f"{k:<40} default {b[k][0]:.4f} -> {n[k][0]:.4f} ({b[k][0]/n[k][0]:.3f}x)  best {b[k][1]:.4f} -> {n[k][1]:.4f} ({b[k][1]/n[k][1]:.3f}x)")
PY
echo "total $(( $(date +%s) - start )) s"
