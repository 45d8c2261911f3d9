"""What the pytest-session benchmarks share: run pytest in a fresh process, time it, and read its
peak memory (the best of a few runs, so that machine noise does not decide a ratio)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import List, Mapping, Tuple

RUNNER = (
    "import pytest, resource, sys, time\n"
    "t = time.perf_counter()\n"
    "rc = pytest.main(sys.argv[1:])\n"
    "print('BENCH', time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, rc)\n"
)


def measure(args: List[str], cwd: Path, env: Mapping[str, str], repeat: int) -> Tuple[float, float, str]:
    """Best wall time (s) and largest peak RSS (MiB) of ``repeat`` pytest runs, and the exit code."""
    best_t, best_rss, rc = float("inf"), 0, ""
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", RUNNER, *args], cwd=cwd, env=dict(env), capture_output=True, text=True)
        line = [ln for ln in out.stdout.splitlines() if ln.startswith("BENCH")]
        if not line:
            raise SystemExit(f"pytest {' '.join(args)} failed:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
        _, t, rss, rc = line[-1].split()
        best_t = min(best_t, float(t))
        best_rss = max(best_rss, int(rss))
    return best_t, best_rss / 1024, rc
