#!/usr/bin/env python3
"""Prints the winner of the first report of a `tilekit tune --out` file as NAME=V,NAME=V."""
import json, sys

w = json.load(open(sys.argv[1]))[0]["winner"]
print(",".join(f"{n}={str(next(iter(v.values())) if isinstance(v, dict) else v).lower()}" for n, v in w["values"]))
