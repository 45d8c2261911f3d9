"""Does ``-n 2`` make a run faster?  Serial against ``-n 2``, interleaved, in one run (issue 35).

    python bench/xdist_speed.py [--prompts 2000] [--concurrency 64] [--latency 0.05] [--repeat 3]
                                [--only wire] [--only cached]

* ``wire``: ``--prompts`` QS-ranking prompts of the public split (a stratified sample) asked of
  the loopback OpenAI-protocol server (``tests/openai_server.py``, a process of its own,
  ``--latency`` seconds a request), no cache, ``--concurrency`` at once: serial and ``-n 2``.
  Besides the wall times, the calls phase (``meta.durations.calls`` of each run's report) against
  the wire's limit (prompts x latency / concurrency).  Target: ``-n 2`` at most 0.8x serial; the
  calls phase at most 1.3x the wire's limit.
* ``cached``: the whole Nobel domain (9,795 prompts) answered by a registered callable (synthetic
  answers, version pinned), a first unmeasured run filling the cache: serial and ``-n 2``, warm.
  Target: ``-n 2`` at most 1.0x serial.

Every ratio is per repeat (the two runs of a repeat follow each other), then the median and the
range; the machine's load average is printed with them.  The test extras' pytest plugins are
switched off, as in bench/end_to_end.py.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Dict, List

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from end_to_end import OFF, measure, server_total  # noqa: E402

CALLABLE = f'''
import sys
sys.path.insert(0, {str(HERE)!r})
import defan_pytest
from defan_pytest import dataset
from synthetic import respond

_ROWS = {{}}
for r in dataset.load_public(domains=["nobel"]):
    _ROWS.setdefault(r.question, r)

@defan_pytest.model("synth", version="1")
def synth(prompt):
    r = _ROWS[prompt]
    return respond(r.id, r.question, r.answer, r.type)
'''

#: Limits every run passes (the benchmark times runs, not verdicts: a failed gate exits 1).
LENIENT = "[defaults]\nmax_fch = 1.0\nmax_pmh = 1.0\nmin_rc = 0.0\nmax_error_rate = 1.0\n"


def load() -> str:
    try:
        return "load average " + " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "load average unknown"


def calls_of(report: Path) -> float:
    meta = json.loads(report.read_text())["meta"]
    return float(meta["durations"]["calls"] or 0.0)


def ratios(runs: Dict[str, List[Dict[str, float]]], key: str, over: str) -> str:
    rs = sorted(a[key] / b[key] for a, b in zip(runs[over], runs["serial"]))
    return f"{statistics.median(rs):.3f} [{rs[0]:.3f}-{rs[-1]:.3f}]"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prompts", type=int, default=2000)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--latency", type=float, default=0.05)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", choices=["wire", "cached"], action="append")
    a = ap.parse_args()
    from defan_pytest.dataset import load_public, resolve_public_dir
    from defan_pytest.dataset.sampling import parse_sample, select

    data = resolve_public_dir()
    off = [x for name in OFF for x in ("-p", f"no:{name}")]
    env = dict(os.environ, OPENAI_API_KEY="sk-bench", DEFAN_DATA_DIR=str(data), PYTHONDONTWRITEBYTECODE="1",
               PYTEST_ADDOPTS="", DEFAN_PROGRESS_SECONDS="600", PYTHONPATH=str(ROOT))
    print(f"machine: {os.cpu_count()} cores, {load()} (other agents share it)", flush=True)
    if "wire" in (a.only or ["wire"]):
        import subprocess

        rows = select(load_public(domains=["qs_ranking"], data_dir=data), parse_sample(str(a.prompts)), 0)
        answers = {r.question: f"It ranked {r.answer.strip()} in the QS World University Rankings." for r in rows}
        wire = len(rows) * a.latency / a.concurrency
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            (folder / "answers.json").write_text(json.dumps(answers))
            (folder / "pytest.ini").write_text("[pytest]\n")
            (folder / "thresholds.toml").write_text(LENIENT)
            server = subprocess.Popen([sys.executable, str(ROOT / "tests" / "openai_server.py"), "--port", "0",
                                       "--latency", str(a.latency), "--no-log-requests",
                                       "--answers", str(folder / "answers.json")], stdout=subprocess.PIPE, text=True)
            try:
                port = int(server.stdout.readline().strip().split("=")[1])  # type: ignore[union-attr]
                base = f"http://127.0.0.1:{port}/v1"
                ours = [sys.executable, "-m", "pytest", "-q", *off, "--defan-model=openai/test-model",
                        f"--defan-model-arg=api_base={base}", "--defan-model-arg=api_key=sk-bench",
                        "--defan-cache=off", f"--defan-concurrency={a.concurrency}", "--defan-domain=qs_ranking",
                        f"--defan-sample={a.prompts}", "--defan-report=r.json", "--defan-spacy-model=none"]
                tfolder = Path(tempfile.mkdtemp())  # apart: the defan runs collect their own folder
                (tfolder / "pytest.ini").write_text("[pytest]\n")
                (tfolder / "test_trivial.py").write_text(
                    f"import pytest\n@pytest.mark.parametrize('i', range({len(rows)}))\ndef test_case(i):\n    pass\n")
                trivial = [sys.executable, "-m", "pytest", "-q", *off, "test_trivial.py"]
                commands = {"serial": ours, "n2": [*ours, "-n", "2"]}
                floors = {"serial": trivial, "n2": [*trivial, "-n", "2"]}
                runs: Dict[str, List[Dict[str, float]]] = {k: [] for k in commands}
                floor: Dict[str, List[Dict[str, float]]] = {k: [] for k in floors}
                print(f"\nwire: {len(rows):,} QS-ranking prompts, concurrency {a.concurrency}, "
                      f"{a.latency * 1000:.0f} ms a request, no cache; the wire's limit {wire:.2f} s", flush=True)
                for i in range(a.repeat):
                    for name, cmd in commands.items():
                        before = server_total(base)
                        r = measure(cmd, folder, env)
                        sent = server_total(base) - before
                        if sent != len(rows):
                            raise SystemExit(f"{name} sent {sent} requests for {len(rows)} prompts")
                        r["calls"] = calls_of(folder / "r.json")
                        r["wire"] = r["calls"] / wire
                        runs[name].append(r)
                        print(f"  repeat {i + 1}  {name:6s} wall {r['wall']:6.2f} s  CPU {r['cpu']:6.2f} s  calls "
                              f"{r['calls']:5.2f} s ({r['wire']:.2f}x the wire)  {load()}", flush=True)
                    for name, cmd in floors.items():  # pytest's own cost of as many tests: the floor
                        r = measure(cmd, tfolder, env)
                        floor[name].append(r)
                        print(f"  repeat {i + 1}  trivial {name:6s} wall {r['wall']:6.2f} s  CPU {r['cpu']:6.2f} s", flush=True)
            finally:
                server.terminate()
                server.wait()
        print(f"  -n 2 / serial wall: {ratios(runs, 'wall', 'n2')}  (target <= 0.8)")
        print(f"  trivial tests, -n 2 / serial wall: {ratios(floor, 'wall', 'n2')}  (pytest-xdist's own floor)")
        for name in commands:
            over = sorted(a["wall"] / b["wall"] for a, b in zip(runs[name], floor[name]))
            print(f"  {name}: defan-pytest / as many trivial tests, wall: {statistics.median(over):.2f} "
                  f"[{over[0]:.2f}-{over[-1]:.2f}]  (the run's own cost over pytest's)")
        for name in commands:
            w = sorted(r["wire"] for r in runs[name])
            print(f"  {name} calls phase / the wire's limit: {statistics.median(w):.2f} [{w[0]:.2f}-{w[-1]:.2f}]"
                  "  (target <= 1.3)")
    if "cached" in (a.only or ["cached"]):
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            (folder / "conftest.py").write_text(CALLABLE)
            (folder / "pytest.ini").write_text("[pytest]\n")
            (folder / "thresholds.toml").write_text(LENIENT)
            ours = [sys.executable, "-m", "pytest", "-q", *off, "--defan-model=synth", "--defan-domain=nobel",
                    "--defan-spacy-model=none", "--defan-report=r.json"]
            commands = {"serial": ours, "n2": [*ours, "-n", "2"]}
            measure(ours, folder, env)  # fills the cache (not measured)
            runs = {k: [] for k in commands}
            n = len(json.loads((folder / "r.json").read_text())["rows"])
            print(f"\ncached: the Nobel domain, {n:,} prompts, every answer in the cache", flush=True)
            for i in range(a.repeat):
                for name, cmd in commands.items():
                    r = measure(cmd, folder, env)
                    runs[name].append(r)
                    print(f"  repeat {i + 1}  {name:6s} wall {r['wall']:6.2f} s  CPU {r['cpu']:6.2f} s  {load()}", flush=True)
        print(f"  -n 2 / serial wall: {ratios(runs, 'wall', 'n2')}  (target <= 1.0)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
