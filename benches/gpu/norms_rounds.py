"""Softmax and RMSNorm forward, tilekit against its peers in interleaved rounds:
    python3 benches/gpu/norms_rounds.py DIR
DIR holds `tilekit-N.json` (`tilekit-bench --only norms`) and `peers-N.json`
(`peers.py --quick --only norms`) of rounds N = 1, 2, .. that ran alternately in one call
(`layouts-run.sh norms-rounds`), so drift of the device touches both sides alike, and
optionally `tilekit-idle-N.json` (the same bench with `TILEKIT_BENCH_IDLE=1`: the stream
idle before each timed launch, this bench's method up to run 94). Prints,
per kernel and element type, the median over rounds of tilekit's `launch()` and best of
space and of the fastest correct peer in each round, and the ratio of the medians (peer ms
/ tilekit ms: above 1, tilekit is faster); writes the same as DIR/norms-rounds.json."""
import glob
import json
import os
import re
import statistics
import sys

d = sys.argv[1]


def rounds(prefix):
    out = {}
    for p in glob.glob(os.path.join(d, f"{prefix}-*.json")):
        m = re.search(rf"{prefix}-(\d+)\.json$", p)
        if m:
            with open(p) as f:
                out[int(m.group(1))] = json.load(f)
    return out


tk, peers, idle = rounds("tilekit"), rounds("peers"), rounds("tilekit-idle")
common = sorted(set(tk) & set(peers))
if not common:
    sys.exit(f"no round has both tilekit-N.json and peers-N.json in {d}")
rows = []


def med_ms(runs, tk_dt, kernel, field):
    return statistics.median(runs[r]["results"][tk_dt][kernel][field]["ms"] for r in common if r in runs)


for kernel in ("softmax", "rmsnorm"):
    for dt, tk_dt in (("bf16", "norms_bf16"), ("fp32", "norms_f32")):
        launch, best, peer, names = [], [], [], []
        for r in common:
            t = tk[r]["results"][tk_dt][kernel]
            launch.append(t["launch_default"]["ms"])
            best.append(t["best"]["ms"])
            provs = peers[r]["results"]["norms"][kernel][dt]
            ok = {p: v["ms"] for p, v in provs.items() if isinstance(v, dict) and "ms" in v and v.get("ok", True)}
            p = min(ok, key=ok.get)
            peer.append(ok[p])
            names.append(p)
        ml, mb, mp = statistics.median(launch), statistics.median(best), statistics.median(peer)
        row = {"kernel": kernel, "dtype": dt, "rounds": len(common), "launch_ms": ml, "best_ms": mb,
               "peer_ms": mp, "peers": names, "ratio_launch": mp / ml, "ratio_best": mp / mb,
               "per_round_launch": [p / l for p, l in zip(peer, launch)]}
        line = (f"{kernel:8} {dt:5} rounds {len(common)}  tilekit launch {ml:.4f} ms, best {mb:.4f}  "
                f"best peer {mp:.4f} ({'/'.join(sorted(set(names)))})  "
                f"ratio {mp / ml:.3f}x launch, {mp / mb:.3f}x best  "
                f"per round {' '.join(f'{x:.3f}' for x in row['per_round_launch'])}")
        if any(r in idle for r in common):
            il, ib = med_ms(idle, tk_dt, kernel, "launch_default"), med_ms(idle, tk_dt, kernel, "best")
            row.update({"idle_launch_ms": il, "idle_best_ms": ib, "idle_ratio_launch": mp / il})
            line += f"  | idle stream: launch {il:.4f} ms, best {ib:.4f}, ratio {mp / il:.3f}x"
        rows.append(row)
        print(line)
with open(os.path.join(d, "norms-rounds.json"), "w") as f:
    json.dump(rows, f, indent=1)
