"""Prints `--peer NAME=MS` arguments for `tilekit bench` from a peers.py JSON file:
    python3 benches/gpu/train_peers.py PEERS_JSON CASE [DTYPE]
CASE is a key of results.train (log_softmax, layernorm, cross_entropy, swiglu, ...);
DTYPE defaults to bf16. Providers with an error or a wrong result are left out."""
import json, sys

path, case = sys.argv[1], sys.argv[2]
dt = sys.argv[3] if len(sys.argv) > 3 else "bf16"
try:
    provs = json.load(open(path))["results"]["train"][case][dt]
except (OSError, KeyError, ValueError):
    provs = {}
names = {"eager": "torch-eager", "compile": "torch.compile", "triton": "Triton"}  # no spaces: the shell splits the list
args = []
for p, rec in provs.items():
    if isinstance(rec, dict) and "ms" in rec and rec.get("ok", True):
        args.append(f"--peer={names.get(p, p)}={rec['ms']:.5f}")
print(" ".join(args))
