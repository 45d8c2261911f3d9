"""Peak memory of a run whose model answers 50 MB per prompt, against one that answers a line.

    python bench/answer_memory.py [--prompts 200] [--size 50e6] [--path auto|litellm] [--repeat 1]

A real pytest session (``--defan-model=openai/test-model`` at a loopback server run as its own
process, ``tests/openai_server.py``, so that its memory is not the run's) asks ``--prompts``
questions of a data set of its own and writes the JSON report and the cache.  Baseline, measured
in the same run: the same session against a server answering ``I don't know.``; then the same
session against a server whose every answer is ``--size`` bytes (written piece by piece, never
held whole by the server).  Printed: the peak RSS of each session and their ratio, the sizes of
the report and of the cache, and the errors the report counts.  With the answer cap
(``--defan-max-answer``, 1 MiB by default) each answer is read up to the cap and no further, so
the ratio stays near 1 (before it: 5.3 GB for 30 answers of 50 MB); target: under 1 GB.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Tuple

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from harness import measure  # noqa: E402 - the benchmarks' shared runner


def serve(faults: List[dict]) -> Tuple[subprocess.Popen, int]:
    """The loopback server in a process of its own, and its port."""
    args = [sys.executable, str(ROOT / "tests" / "openai_server.py"), "--port", "0", "--no-log-requests"]
    for f in faults:
        args += ["--fault", json.dumps(f)]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    if not line.startswith("PORT="):
        proc.kill()
        raise SystemExit(f"the test server did not start: {line!r}")
    return proc, int(line.split("=", 1)[1])


def session(folder: Path, port: int, args: argparse.Namespace, name: str) -> Dict[str, float]:
    """One pytest session against the server at ``port``: its peak RSS and what it wrote."""
    run = folder / name
    run.mkdir()
    rows = [{"question": f"How many moons does planet {i} have?", "answer": str(i % 7), "type": "numeric",
             "domain": "toy", "group": f"g{i // 3}"} for i in range(args.prompts)]
    (run / "toy.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LITELLM_LOCAL_MODEL_COST_MAP": "true"}
    pytest_args = [
        "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "--defan-dataset=toy.jsonl", "--defan-spacy-model=none",
        "--defan-model=openai/test-model", f"--defan-model-arg=api_base=http://127.0.0.1:{port}/v1",
        f"--defan-call-path={args.path}", "--defan-timeout=120", "--defan-retries=0", "--defan-report=r.json",
    ]
    _, peak_mib, rc = measure(pytest_args, run, env, args.repeat)
    report = json.loads((run / "r.json").read_text(encoding="utf-8"))
    cache = sum(p.stat().st_size for p in (run / ".defan_cache").rglob("*") if p.is_file())
    return {"peak_mib": peak_mib, "report_mib": (run / "r.json").stat().st_size / 2**20, "cache_mib": cache / 2**20,
            "errors": report["domains"]["toy"]["errors"], "rc": float(rc)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prompts", type=int, default=200)
    ap.add_argument("--size", type=float, default=50e6, help="bytes of every large answer")
    ap.add_argument("--path", default="auto", choices=("auto", "litellm"), help="--defan-call-path")
    ap.add_argument("--repeat", type=int, default=1, help="sessions of each kind (the largest peak counts)")
    args = ap.parse_args()
    results = {}
    with tempfile.TemporaryDirectory(prefix="defan-answer-memory-") as tmp:
        for name, faults in (("baseline", []), ("large", [{"fault": "huge", "match": "*", "size": int(args.size)}])):
            proc, port = serve(faults)
            try:
                results[name] = session(Path(tmp), port, args, name)
            finally:
                proc.terminate()
                proc.wait(timeout=10)
    base, large = results["baseline"], results["large"]
    print(f"{args.prompts} prompts via --defan-call-path={args.path}; every large answer {args.size / 1e6:g} MB")
    for name, r in results.items():
        print(f"  {name:8s}: peak RSS {r['peak_mib']:7.1f} MiB, report {r['report_mib']:6.2f} MiB, cache "
              f"{r['cache_mib']:6.2f} MiB, {int(r['errors'])} call errors")
    ratio = large["peak_mib"] / base["peak_mib"]
    print(f"peak RSS, large answers / baseline: {ratio:.2f}x ({large['peak_mib']:.0f} MiB; target under 1 GB)")
    return 0 if large["peak_mib"] < 1024 else 1


if __name__ == "__main__":
    sys.exit(main())
