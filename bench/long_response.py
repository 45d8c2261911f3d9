"""Scoring cost of one long response, from 1 KB to 10 MB: time and peak memory per size.

    python bench/long_response.py [--nlp auto|none] [--sizes 1e3,1e4,1e5,1e6,1e7]

Each size is scored in a fresh process (so its peak memory is its own) for every answer type,
with a runaway generation of prose, names, numbers and dates and no explicit answer mark (the
slowest path: every candidate in reading order).  Baseline, measured in the same run: the same
process scoring a 1 KB response; the ratios show how cost grows with the size.  Responses over
``scoring.MAX_WHOLE`` characters are scored on a window (the row carries a note), so their cost
is flat; below it, cost should grow linearly.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHILD = r'''
import json, random, resource, sys, time
sys.path.insert(0, sys.argv[3])
from defan_pytest.scoring.scorer import Scorer
size, nlp = int(float(sys.argv[1])), (None if sys.argv[2] == "none" else sys.argv[2])
words = ("the model weighed options and Marie Curie was named with Lorem Ipsum and Dolor Sit amet "
         "in 1903 then 42.5 million on July 4, 1950 ranked 3rd").split()
rng = random.Random(7)
parts, n = [], 0
while n < size:
    w = rng.choice(words) + ("\n" if rng.random() < 0.05 else " ")
    parts.append(w)
    n += len(w)
text = "".join(parts)[:size]
scorer = Scorer(nlp=nlp)
scorer.score("Warm up?", "Ada", "name", "Ada")
if scorer.ner is not None:
    scorer.ner.entities(["Marie Curie was born in Warsaw."])
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
out = {}
for typ, gold in (("name", "Pierre Curie"), ("numeric", "42.5"), ("date", "07/04/1950"), ("rank", "3"), ("city", "Paris")):
    t = time.perf_counter()
    s = scorer.score("Who won the Nobel Prize in Physics in 1903?", gold, typ, text, domain="nobel")
    out[typ] = (time.perf_counter() - t, s.note is not None)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"times": out, "peak_mb": peak / 1024, "growth_mb": (peak - base) / 1024}))
'''


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nlp", default="auto")
    ap.add_argument("--sizes", default="1e3,1e4,1e5,1e6,1e7")
    args = ap.parse_args()
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    rows = []
    for size in sizes:
        out = subprocess.run([sys.executable, "-c", CHILD, str(size), args.nlp, str(HERE.parent)],
                             capture_output=True, text=True, check=True)
        rows.append((size, json.loads(out.stdout.strip().splitlines()[-1])))
    base = rows[0][1]
    print(f"nlp={args.nlp}; seconds per answer type, peak RSS of the process, growth over the start-up")
    print(f"{'size':>10}  {'name':>7} {'numeric':>7} {'date':>7} {'rank':>7} {'city':>7}  {'max s':>6} {'x 1KB':>7}  {'peak MB':>8} {'growth':>7}  window")
    for size, r in rows:
        t = r["times"]
        worst = max(v[0] for v in t.values())
        ratio = worst / max(1e-6, max(v[0] for v in base["times"].values()))
        windowed = any(v[1] for v in t.values())
        print(f"{size:>10,}  " + " ".join(f"{t[k][0]:7.3f}" for k in ("name", "numeric", "date", "rank", "city"))
              + f"  {worst:6.2f} {ratio:7.0f}  {r['peak_mb']:8.0f} {r['growth_mb']:7.0f}  {'yes' if windowed else 'no'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
