#!/usr/bin/env bash
# Session 31, call 7 (the final code, 4f7219d + the sanitizer test's split-tail shapes):
# gpu_hopper in full; compute-sanitizer memcheck / racecheck / synccheck on the small test
# (which now runs split tails); cold tunes of matmul at 4097^3 and 1024x8192x1024 (does
# the tuner pick TAIL_SPLIT?), exported; `tilekit bench` with the tuned entry beside the
# peers (peers.py awkward: cuBLAS, hand-padded, torch.compile dynamic=False).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64 TILEKIT_CUDA_ROOT=/usr/local/cuda TILEKIT_CACHE_DIR=/tmp/tkc
start=$(date +%s)
t() { echo "t $(( $(date +%s) - start )) s"; }
B=.gpu/bin/tilekit
T=$(ls .gpu/tests/gpu_hopper-*)
timeout 220 $T --ignored --test-threads=1 > $OUT/hopper-tests.log 2>&1; echo "gpu_hopper rc $?"
grep -E "^test |test result" $OUT/hopper-tests.log | head -14
t
for tool in memcheck racecheck synccheck; do
  timeout 150 /usr/local/cuda/bin/compute-sanitizer --tool $tool $T --ignored --test-threads=1 gpu_hopper_sanitizer_small > /tmp/san-$tool.log 2>&1; echo "$tool rc $?"
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY|test result" /tmp/san-$tool.log | head -3
  cat /tmp/san-$tool.log >> $OUT/sanitizer.log
  t
done
rm -rf /tmp/t.sled
for s in 4097x4097x4097 1024x8192x1024; do
  { time timeout 150 $B tune --cache-path /tmp/t.sled --kernel matmul --shape $s --dtype bf16 --seed 7; } > /tmp/tune-$s.log 2>&1; echo "tune $s rc $?"
  grep -iE "winner|real|candidates" /tmp/tune-$s.log | cut -c1-300 | head -5
  cat /tmp/tune-$s.log >> $OUT/tune.log
  t
done
$B cache export --cache-path /tmp/t.sled $OUT/tuned-export.json > /dev/null 2>&1; echo "export rc $?"
bench() { # label, args...
  local label=$1; shift
  timeout 120 $B bench --seed 7 --rounds 20 "$@" > /tmp/b.txt 2>&1; echo "== $label rc $?" | tee -a $OUT/bench.log
  grep -E "^BM|error" /tmp/b.txt | tee -a $OUT/bench.log | cut -c1-175
}
bench 4097-tuned --cache-path /tmp/t.sled --kernel matmul --shape 4097x4097x4097 --config BM=128,BN=128,BK=64,STAGES=5,WARPS=8,SMEM=Swizzle128,CLUSTER=1,PAD64=true,TAIL_SPLIT=1
bench 1024x8192x1024-tuned --cache-path /tmp/t.sled --kernel matmul --shape 1024x8192x1024
t
timeout 200 python3 benches/peers/peers.py --quick --only awkward --out /tmp/peers.json > $OUT/peers.log 2>&1; echo "peers rc $?"
grep -iE "awkward" $OUT/peers.log | cut -c1-170 | head -9
timeout 60 python3 - >> $OUT/peers.log 2>&1 <<'PY'
import torch
a = torch.randn(1024, 8192, device="cuda", dtype=torch.bfloat16); b = torch.randn(8192, 1024, device="cuda", dtype=torch.bfloat16)
c = torch.empty(1024, 1024, device="cuda", dtype=torch.bfloat16)
for _ in range(10): torch.matmul(a, b, out=c)
st, en = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
ts = []
for _ in range(50):
    st.record(); torch.matmul(a, b, out=c); en.record(); torch.cuda.synchronize(); ts.append(st.elapsed_time(en))
ts.sort(); ms = ts[len(ts) // 2]
print(f"cuBLAS bf16 1024x8192x1024 (events, median of 50): {ms:.4f} ms {2 * 1024 * 8192 * 1024 / (ms * 1e-3) / 1e12:.1f} TFLOP/s")
PY
grep "1024x8192x1024" $OUT/peers.log
t
