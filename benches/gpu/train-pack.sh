#!/usr/bin/env bash
# Builds what `benches/gpu/layouts-run.sh train` needs, and nothing else, into .gpu/
# (git-ignored, the layout of ../shared/tools/gpu-pack): the GPU test binaries of the
# training kernels and activations, `tilekit-bench` and the `tilekit` CLI, release mode,
# stripped. Then carry [".gpu"] and run `bash benches/gpu/layouts-run.sh train`.
set -euo pipefail
root=$(git rev-parse --show-toplevel)
cd "$root"
excl=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$excl")"
grep -qx '/.gpu/' "$excl" 2>/dev/null || echo '/.gpu/' >> "$excl"
rm -rf .gpu && mkdir -p .gpu/bin .gpu/tests
cargo test --release -p tilekit-tests --test gpu_training_kernels --test gpu_activations \
  --no-run --message-format=json \
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
cp target/release/tilekit-bench target/release/tilekit .gpu/bin/
strip .gpu/bin/* .gpu/tests/* 2>/dev/null || true
ls -la .gpu/bin .gpu/tests
du -sh .gpu
