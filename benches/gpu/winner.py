#!/usr/bin/env python3
"""Prints the winner of the first report of a `tilekit tune --out` file as NAME=V,NAME=V."""
import json, sys


def text(v):
    """A tuning value as `--config` spells it: enums keep their case, booleans are lowercase."""
    if isinstance(v, dict):
        v = next(iter(v.values()))
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


if __name__ == "__main__":
    w = json.load(open(sys.argv[1]))[0]["winner"]
    print(",".join(f"{n}={text(v)}" for n, v in w["values"]))
