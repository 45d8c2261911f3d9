"""Collection cost of the plugin, against a plain parametrize of the same size.

    python bench/collect_speed.py [--data FOLDER] [--repeat 3]

Baseline, measured in the same run: ``@pytest.mark.parametrize("i", range(N))`` with N the
number of public prompts (70,793) and a trivial body, collected with ``--collect-only -q``.
Ours: ``--defan-model`` with every public prompt as an item, collected the same way.  Prints
the best of ``--repeat`` wall times and the peak RSS of each, their ratios (target <= 1.5x),
and the start-up overhead of the plugin installed but inactive (``-p no:defan`` vs default).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from harness import measure  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=None,
                    help="folder of the public split (default: found as users find it: DEFAN_DATA_DIR, the cache, the pinned download)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    if args.data is None:
        sys.path.insert(0, str(HERE.parent))
        from defan_pytest.dataset import resolve_public_dir

        args.data = str(resolve_public_dir())
    sys.path.insert(0, str(HERE.parent))
    from defan_pytest.dataset import load_public

    n = len(load_public(data_dir=args.data))
    env = dict(os.environ, DEFAN_DATA_DIR=str(Path(args.data).resolve()), PYTHONDONTWRITEBYTECODE="1")
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "baseline"
        base.mkdir()
        (base / "test_plain.py").write_text(
            f"import pytest\n@pytest.mark.parametrize('i', range({n}))\ndef test_case(i):\n    pass\n"
        )
        ours = Path(tmp) / "defan"
        ours.mkdir()
        (ours / "conftest.py").write_text("import defan_pytest\n@defan_pytest.model('noop')\ndef noop(p):\n    return ''\n")
        light = Path(tmp) / "light"
        light.mkdir()
        (light / "test_one.py").write_text("def test_one():\n    pass\n")

        common = ["--collect-only", "-q", "-p", "no:cacheprovider"]
        bt, brss, _ = measure(common, base, env, args.repeat)
        dt, drss, rc = measure([*common, "--defan-model=noop"], ours, env, args.repeat)
        it, irss, _ = measure(["-q", "-p", "no:cacheprovider"], light, env, args.repeat * 2)
        nt, nrss, _ = measure(["-q", "-p", "no:cacheprovider", "-p", "no:defan"], light, env, args.repeat * 2)
    print(f"items                          {n:,}")
    print(f"baseline parametrize collect   {bt:6.2f} s   peak RSS {brss:6.0f} MiB")
    print(f"defan collect                  {dt:6.2f} s   peak RSS {drss:6.0f} MiB")
    print(f"ratio time                     {dt / bt:6.2f}x  (target <= 1.5x)")
    print(f"ratio memory                   {drss / brss:6.2f}x  (target <= 1.5x)")
    print(f"one trivial test, plugin inactive  {it * 1000:6.0f} ms  peak RSS {irss:.0f} MiB")
    print(f"one trivial test, -p no:defan      {nt * 1000:6.0f} ms  peak RSS {nrss:.0f} MiB")
    print(f"start-up overhead when inactive    {(it - nt) * 1000:+6.0f} ms ({(it / nt - 1) * 100:+.1f}%)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
