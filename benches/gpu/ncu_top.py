"""The SASS lines with the most warp-stall samples from an ncu source export
(`ncu -i REP --page source --csv --print-source sass > /tmp/src.csv`), 45 of them, and the
total: `python3 benches/gpu/ncu_top.py /tmp/src.csv > $OUT/top.txt`."""
import csv, sys
path = sys.argv[1] if len(sys.argv) > 1 else '/tmp/src.csv'
import csv, os
rows=list(csv.reader(open(path)))
hdr=None
for i,r in enumerate(rows):
    if 'Source' in r and any('Sampling' in c for c in r):
        hdr=i; break
if hdr is None:
    print(open(path).read()[:3000]); raise SystemExit
h=rows[hdr]; print(h)
si=[j for j,c in enumerate(h) if 'Warp Stall Sampling (All' in c][0]
src=h.index('Source')
body=[r for r in rows[hdr+1:] if len(r)==len(h)]
tot=sum(float(r[si] or 0) for r in body)
print('total samples',tot,'instructions',len(body))
for r in sorted(body,key=lambda r:-float(r[si] or 0))[:45]:
    print(r[si], r[src][:110])
