#!/usr/bin/env python3
"""The winners of `tilekit tune --all` on one GPU and on every GPU (`--devices all`), compared.

  multigpu_compare.py diff SINGLE.json MULTI.json SINGLE-EXPORT.json
      SINGLE.json and MULTI.json are the runs' `--out` reports. Prints one line per problem
      (same winner or not, which device tuned it in the multi-GPU run), then a `RETIME` line
      per problem whose winners differ: kernel, shape, dtype, scalars, winner of the single
      run, winner of the multi-GPU run, tab-separated (the shape comes from the export's
      provenance, in the kernel's dimension order, as `tilekit bench --shape` takes it).
  multigpu_compare.py summary OUT.json BENCH.json...
      Each BENCH.json is `tilekit bench --json` of one RETIME line (both winners given,
      named in BENCH.json.cfg: single-GPU winner TAB multi-GPU winner); prints the multi-GPU winner's median over the single-GPU winner's (the issue's target:
      within 2% each) and writes every row to OUT.json.
"""
import json
import sys

from winner import text  # a tuning value as `--config` spells it


def config(c):
    return ",".join(f"{n}={text(v)}" for n, v in c["values"])


def problem(p):
    dims = " ".join(f"{k}={v}" for k, v in p["dims"].items())
    types = " ".join(f"{k}={v.lower()}" for k, v in p["bindings"].items())
    return f"{p['kernel']} {dims} {types}"


def canon(key):
    return json.dumps(key, sort_keys=True)


def diff(single_path, multi_path, export_path):
    single = {problem(r["problem"]): r for r in json.load(open(single_path))}
    multi = {problem(r["problem"]): r for r in json.load(open(multi_path))}
    shapes = {
        canon(e["key"]): e["value"].get("provenance", {}).get("shape")
        for e in json.load(open(export_path))["entries"]
    }
    same = differ = 0
    for name, s in single.items():
        m = multi.get(name)
        if m is None:
            print(f"{name}: only in the single-GPU run")
            continue
        a, b = config(s["winner"]), config(m["winner"])
        where = f"gpu{m.get('device')}"
        if a == b:
            same += 1
            print(f"{name}: same winner {a} ({s['winner_ms']:.4f} / {m['winner_ms']:.4f} ms, multi on {where})")
            continue
        differ += 1
        print(f"{name}: DIFFERENT {a} ({s['winner_ms']:.4f} ms) vs {b} ({m['winner_ms']:.4f} ms, multi on {where})")
        shape = shapes.get(canon(s["key"]))
        if not shape:
            print(f"  (no exact shape in the export for {name}: not re-timed)")
            continue
        p = s["problem"]
        dtype = next(iter(p["bindings"].values())).lower()
        scalars = ",".join(f"{k}={v:g}" for k, v in p.get("scalars", {}).items()) or "-"
        print("\t".join(["RETIME", p["kernel"], shape, dtype, scalars, a, b]))
    for name in multi:
        if name not in single:
            print(f"{name}: only in the multi-GPU run")
    print(f"winners: {same} same, {differ} different, of {len(single)} single / {len(multi)} multi")


def summary(out_path, bench_paths):
    rows = []
    worst = 0.0
    for path in bench_paths:
        try:
            rep = json.load(open(path))
        except (OSError, ValueError) as e:
            print(f"{path}: unreadable ({e})")
            continue
        # PATH.cfg holds the single-GPU winner and the multi-GPU one, tab-separated.
        try:
            want = open(path + ".cfg").read().strip().split("\t")
        except OSError:
            want = []
        by_name = {r["name"]: r for r in rep["rows"]}
        pair = [by_name.get(w) for w in want]
        if len(pair) != 2 or None in pair:
            given = [r for r in rep["rows"] if "given" in r.get("sources", [])]
            if len(given) < 2:
                print(f"{rep.get('problem', path)}: fewer than two given rows")
                continue
            pair = given[:2]
        a, b = pair
        ratio = b["median_ms"] / a["median_ms"]
        worst = max(worst, abs(ratio - 1.0))
        rows.append({"problem": rep.get("problem"), "single": a["name"], "single_ms": a["median_ms"],
                     "multi": b["name"], "multi_ms": b["median_ms"], "ratio": ratio})
        print(f"{rep.get('problem')}: single-GPU winner {a['median_ms']:.4f} ms, multi-GPU winner "
              f"{b['median_ms']:.4f} ms, ratio {ratio:.4f} ({'ok' if abs(ratio - 1) <= 0.02 else 'OVER 2%'})")
    print(f"re-timed {len(rows)} differing winners side by side; worst deviation {worst * 100:.2f}%")
    json.dump(rows, open(out_path, "w"), indent=1)


if __name__ == "__main__":
    if len(sys.argv) >= 5 and sys.argv[1] == "diff":
        diff(sys.argv[2], sys.argv[3], sys.argv[4])
    elif len(sys.argv) >= 3 and sys.argv[1] == "summary":
        summary(sys.argv[2], sys.argv[3:])
    else:
        sys.exit(__doc__)
