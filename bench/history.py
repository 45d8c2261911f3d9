"""``defan history`` over a folder of full-size reports: its time and its peak memory, against
loading one such report, measured in the same run.

    python bench/history.py [--rows 20000] [--reports 2,6] [--keep DIR]

Builds reports of ``--rows`` prompts in the public split's shape (bench/html_report.py's
builder: eight domains, paraphrase groups of 15, synthetic verdicts that differ report by
report), each with its own time, and runs ``defan history FOLDER --html`` over the first K of
them for each K of ``--reports``, each in a fresh process.  Baseline, in a fresh process too:
``load_report`` of one of those reports.  Prints, for each K, the wall time and its ratio to K
loads (a history reads each report once and compares each with the one before: about 1 plus the
paired test's share), and the peak RSS and its ratio to the baseline's (two reports in memory at
once, whatever K: the ratio should not grow with K).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import List, Tuple

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

PROBE = (
    "import resource, sys, time\n"
    "t = time.perf_counter()\n"
    "{body}\n"
    "print('BENCH', time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
)


def _run(body: str, cwd: Path) -> Tuple[float, float]:
    """Wall time (s) and peak RSS (MiB) of ``body`` in a fresh Python."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE.parent), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", PROBE.format(body=body)], cwd=cwd, env=env, capture_output=True,
                         text=True)
    line = [ln for ln in out.stdout.splitlines() if ln.startswith("BENCH")]
    if out.returncode != 0 or not line:
        raise SystemExit(f"failed:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    _, t, rss = line[-1].split()
    return float(t), int(rss) / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--reports", default="2,6", help="the history sizes to measure, comma-separated")
    parser.add_argument("--keep", type=Path, default=None, help="keep the reports and pages in this folder")
    args = parser.parse_args()
    sizes: List[int] = sorted({int(k) for k in args.reports.split(",")})
    import html_report  # bench/html_report.py: the report builder

    work = args.keep or Path(tempfile.mkdtemp(prefix="defan-history-bench-"))
    folder = work / "reports"
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(max(sizes)):
        data = html_report.build(args.rows, shift=i % 3).to_json()
        data["meta"]["created"] = f"2030-01-{i + 1:02d}T03:17:00Z"
        (folder / f"run-{i:02d}.json").write_text(json.dumps(data), encoding="utf-8")
    one = folder / "run-00.json"
    base_t, base_rss = _run(f"from defan_pytest.report import schema; schema.load_report({str(one)!r})", work)
    print(f"{args.rows:,} prompts a report ({one.stat().st_size / 2**20:.1f} MiB of JSON)")
    print(f"baseline, load_report of one report: {base_t:.2f} s, peak RSS {base_rss:.0f} MiB")
    for k in sizes:
        sub = work / f"first-{k}"
        sub.mkdir(exist_ok=True)
        for i in range(k):
            target = sub / f"run-{i:02d}.json"
            if not target.exists():
                target.symlink_to(folder / f"run-{i:02d}.json")
        t, rss = _run(
            "from defan_pytest.cli import main\n"
            f"assert main(['history', {str(sub)!r}, '--html', {str(work / f'history-{k}.html')!r}]) == 0", work,
        )
        print(f"history of {k} reports: {t:.2f} s ({t / (k * base_t):.2f} x {k} loads), "
              f"peak RSS {rss:.0f} MiB ({rss / base_rss:.2f} x the baseline's)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
