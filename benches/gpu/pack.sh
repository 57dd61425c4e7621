#!/usr/bin/env bash
# Builds the GPU test binaries (the test targets that hold `#[ignore = "needs a CUDA GPU"]`
# tests), `tilekit-bench`, the `tilekit` CLI and, when /work/wt/base has been built, the
# A/B baseline `tilekit-bench-base`, release mode, stripped, into .gpu/ (git-ignored; the
# layout of ../shared/tools/gpu-pack, under the device's 64 MiB). Then carry [".gpu"] and run
# `bash benches/gpu/layouts-run.sh PART..` there.
set -euo pipefail
root=$(git rev-parse --show-toplevel)
cd "$root"
excl=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$excl")"
grep -qx '/.gpu/' "$excl" 2>/dev/null || echo '/.gpu/' >> "$excl"
rm -rf .gpu && mkdir -p .gpu/bin .gpu/tests
targets=(
  -p tilekit-tests --test gpu_matmul --test gpu_matmul_cols --test gpu_kernels --test gpu_graphs --test gpu_views
  --test gpu_training_kernels --test gpu_activations --test gpu_unaligned_rows --test stencil --test nvrtc_variants --test epilogues --test gpu_pad64 --test batched --test gpu_hopper --test gpu_attention --test gpu_devices --test concat --test hopper_engine --test tensor_lists --test gpu_launch_constraints --test rank4 --test stochastic_round --test shared_row
  -p tilekit-benches --test user2d --test attention
  -p tilekit-tuner --test tune_gpu
)
# PACK_TESTS="gpu_kernels tune_gpu": only those test targets (the full set is over the
# device's 64 MiB with the working tree).
if [[ -n "${PACK_TESTS:-}" ]]; then
  kept=() pkg=""
  for ((i = 0; i < ${#targets[@]}; i += 2)); do
    flag=${targets[i]} val=${targets[i+1]}
    if [[ $flag == -p ]]; then pkg=$val; continue; fi
    if [[ " $PACK_TESTS " == *" $val "* ]]; then kept+=(-p "$pkg" --test "$val"); fi
  done
  targets=("${kept[@]}")
fi
cargo test --release "${targets[@]}" --no-run --message-format=json \
  | python3 -c '
import json, sys
for line in sys.stdin:
    try: m = json.loads(line)
    except ValueError: continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        print(m["executable"])' \
  | while read -r exe; do cp "$exe" .gpu/tests/; done
cargo build --release -p tilekit-benches --bin tilekit-bench
cargo build --release -p tilekit-cli --bin tilekit
cargo build --release -p tilekit-tests --bin my-kernels
cp target/release/tilekit-bench target/release/tilekit target/release/my-kernels .gpu/bin/
base=/work/wt/base/target/release/tilekit-bench
[[ -x $base ]] && cp "$base" .gpu/bin/tilekit-bench-base
strip .gpu/bin/* .gpu/tests/* 2>/dev/null || true
ls -la .gpu/bin .gpu/tests
du -sh .gpu
size=$(du -sm .gpu | cut -f1)
if (( size > 60 )); then echo "pack: .gpu is ${size} MiB (> 60)" >&2; exit 1; fi
