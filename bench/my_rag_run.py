"""A realistic model end to end: the example pipeline my-rag (examples/my_rag) on the README's
main command, serial against -n 2, answers asked (no cache) and then reused (warm cache).

    python bench/my_rag_run.py [--domain nobel] [--sample 600] [--repeat 2]

The baseline is the serial cold run of the same command in the same session; each figure is the
best of ``--repeat`` runs (wall seconds of pytest.main in a fresh process, peak RSS).  my-rag
costs milliseconds of CPU an answer (BM25 and a spaCy reader), unlike the loopback server of
bench/run_speed.py, so this is where -n 2 can pay for its start-up.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from harness import measure  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--domain", default="nobel")
    parser.add_argument("--sample", default="600")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    env = dict(os.environ, PYTHONHASHSEED="0")
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "cache"
        base = ["-q", "-p", "no:cacheprovider", "--defan-model=my-rag", f"--defan-domain={args.domain}",
                f"--defan-sample={args.sample}", f"--defan-cache={cache}"]
        results = {}
        for label, extra in (("serial", []), ("-n 2", ["-n", "2"])):
            cold = warm = None
            for _ in range(args.repeat):
                shutil.rmtree(cache, ignore_errors=True)
                t_cold, rss_cold, rc = measure([*base, *extra], ROOT, env, 1)
                t_warm, rss_warm, _ = measure([*base, *extra], ROOT, env, 1)
                cold = t_cold if cold is None else min(cold, t_cold)
                warm = t_warm if warm is None else min(warm, t_warm)
            results[label] = (cold, warm, max(rss_cold, rss_warm), rc)
    ref = results["serial"][0]
    print(f"my-rag on {args.domain}, sample {args.sample}; baseline: the serial cold run ({ref:.2f} s)")
    print(f"{'run':8} {'cold s':>8} {'warm s':>8} {'cold/base':>10} {'warm/base':>10} {'peak MiB':>9}  exit")
    for label, (cold, warm, rss, rc) in results.items():
        print(f"{label:8} {cold:8.2f} {warm:8.2f} {cold / ref:10.2f} {warm / ref:10.2f} {rss:9.0f}  {rc}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
