"""End to end against Inspect AI: the same prompts called, scored and gated, side by side.

    python bench/end_to_end.py [--prompts 2000] [--concurrency 64] [--latency 0.05] [--repeat 3]

A loopback OpenAI-protocol server (``tests/openai_server.py``, a process of its own, ``--latency``
seconds per request) answers the QS-ranking prompts of the public split (domain ``qs_ranking``:
a stratified sample of ``--prompts``, exactly as ``--defan-sample`` selects it), right for even
question groups and wrong for odd ones.  Then, interleaved, ``--repeat`` times each:

* Inspect AI (``inspect eval``, the openai provider pointed at the server with
  ``--model-base-url`` and ``-M responses_api=false`` (chat completions, which the server
  speaks), ``generate()`` and the trivial ``includes()`` scorer, ``--max-connections`` and
  ``--max-samples`` at the concurrency, ``--display none``), installed into a virtualenv of the
  benchmark's own (``--inspect-venv``, created on first use: never a dependency of the package);
* ``pytest --defan-model=openai/test-model`` (no cache, the same concurrency, the sample, a
  ``thresholds.toml`` so that the run is gated), serial;
* the same with ``-n 2``;
* the same, serial, with ``--defan-call-path=litellm`` (every call through litellm: the path all
  calls took before the lean one).

Each run is a fresh process tree; its wall time, CPU time (every process of it: xdist workers
and Inspect's subprocesses included) and peak memory (the largest process) are printed, then
the medians with their ranges and the median of the per-repeat ratios against Inspect.  The
test extras' pytest plugins (not what a user runs) are switched off, as in bench/run_speed.py.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Dict, List, Sequence

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

#: The Inspect AI version measured (pinned, so that the figures can be reproduced).
INSPECT = "inspect-ai==0.3.285"

# Runs a command (its output to the file named first) and reports its own children's resources:
# wall time, CPU time of the whole process tree, the largest process's peak RSS (KiB).
TIMER = (
    "import resource, subprocess, sys, time\n"
    "t = time.perf_counter()\n"
    "with open(sys.argv[1], 'w') as log:\n"
    "    rc = subprocess.run(sys.argv[2:], stdout=log, stderr=subprocess.STDOUT).returncode\n"
    "wall = time.perf_counter() - t\n"
    "r = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "print('BENCH', wall, r.ru_utime + r.ru_stime, r.ru_maxrss, rc)\n"
)

TASK = '''
from inspect_ai import Task, task
from inspect_ai.dataset import json_dataset
from inspect_ai.scorer import includes
from inspect_ai.solver import generate


@task
def qs_ranking():
    return Task(dataset=json_dataset("samples.jsonl"), solver=generate(), scorer=includes())
'''

# The test extras' plugins: nothing a user of defan-pytest runs by default.
OFF = ["rerunfailures", "randomly", "sugar", "cov", "html", "allure_pytest", "json-report", "split", "timeout",
       "pytest_github_actions_annotate_failures", "cacheprovider", "hypothesispytest"]


def inspect_python(venv: Path) -> Path:
    """The Inspect AI virtualenv's interpreter, creating the virtualenv first if need be."""
    python = venv / "bin" / "python"
    if not (venv / "bin" / "inspect").exists():
        print(f"installing {INSPECT} into {venv} (once) ...", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", INSPECT, "openai"], check=True)
    return python


def measure(cmd: Sequence[str], cwd: Path, env: Dict[str, str]) -> Dict[str, float]:
    log = cwd / "last-run.log"
    out = subprocess.run([sys.executable, "-c", TIMER, str(log), *cmd], cwd=cwd, env=env, capture_output=True,
                         text=True)
    line = [ln for ln in out.stdout.splitlines() if ln.startswith("BENCH")]
    if not line or line[-1].split()[-1] != "0":
        raise SystemExit(f"{' '.join(cmd)} failed:\n{log.read_text()[-3000:] if log.exists() else ''}\n"
                         f"{out.stderr[-2000:]}")
    _, wall, cpu, rss, rc = line[-1].split()
    return {"wall": float(wall), "cpu": float(cpu), "rss": int(rss) / 1024, "rc": int(rc)}


def server_total(base: str) -> int:
    with urllib.request.urlopen(base.replace("/v1", "") + "/_stats") as r:
        return int(json.loads(r.read())["total"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prompts", type=int, default=2000)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--latency", type=float, default=0.05)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--inspect-venv", default=str(HERE / ".venv-inspect"),
                    help="virtualenv for Inspect AI (created on first use; default: bench/.venv-inspect)")
    ap.add_argument("--data", default=None, help="folder of the public split (default: found as users find it)")
    ap.add_argument("--only", choices=["inspect", "serial", "n2", "litellm"], action="append",
                    help="run only these (repeatable; default: all four)")
    a = ap.parse_args()
    from defan_pytest.dataset import load_public, resolve_public_dir
    from defan_pytest.dataset.sampling import parse_sample, select

    data = Path(a.data) if a.data else resolve_public_dir()
    rows = select(load_public(domains=["qs_ranking"], data_dir=data), parse_sample(str(a.prompts)), 0)
    answers = {r.question: (f"It ranked {r.answer.strip()} in the QS World University Rankings." if r.group % 2 == 0
                            else "It ranked 999 in the QS World University Rankings.") for r in rows}
    which = a.only or ["inspect", "serial", "n2", "litellm"]
    py = inspect_python(Path(a.inspect_venv)) if "inspect" in which else None

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "answers.json").write_text(json.dumps(answers))
        with open(folder / "samples.jsonl", "w") as f:
            for r in rows:
                f.write(json.dumps({"input": r.question, "target": r.answer.strip(), "id": r.id}) + "\n")
        (folder / "qs_task.py").write_text(TASK)
        (folder / "thresholds.toml").write_text("[defaults]\nmax_fch = 0.9\nmax_error_rate = 0.02\n")
        (folder / "pytest.ini").write_text("[pytest]\n")
        server = subprocess.Popen([sys.executable, str(ROOT / "tests" / "openai_server.py"), "--port", "0",
                                   "--latency", str(a.latency), "--no-log-requests",
                                   "--answers", str(folder / "answers.json")], stdout=subprocess.PIPE, text=True)
        try:
            port = int(server.stdout.readline().strip().split("=")[1])  # type: ignore[union-attr]
            base = f"http://127.0.0.1:{port}/v1"
            env = dict(os.environ, OPENAI_API_KEY="sk-bench", DEFAN_DATA_DIR=str(data), PYTHONDONTWRITEBYTECODE="1",
                       PYTEST_ADDOPTS="", DEFAN_PROGRESS_SECONDS="600", INSPECT_LOG_DIR=str(folder / "logs"))
            off = [x for name in OFF for x in ("-p", f"no:{name}")]
            ours = [sys.executable, "-m", "pytest", "-q", *off, "--defan-model=openai/test-model",
                    f"--defan-model-arg=api_base={base}", "--defan-model-arg=api_key=sk-bench", "--defan-cache=off",
                    f"--defan-concurrency={a.concurrency}", "--defan-domain=qs_ranking", f"--defan-sample={a.prompts}"]
            commands = {
                "inspect": [str(py), "-m", "inspect_ai", "eval", "qs_task.py", "--model", "openai/test-model",
                            "--model-base-url", base, "-M", "responses_api=false",  # chat completions
                            "--max-connections", str(a.concurrency), "--max-samples",
                            str(a.concurrency), "--temperature", "0", "--display", "none",
                            "--log-dir", str(folder / "logs")],
                "serial": ours,
                "n2": [*ours, "-n", "2"],
                "litellm": [*ours, "--defan-call-path=litellm"],
            }
            runs: Dict[str, List[Dict[str, float]]] = {k: [] for k in which}
            print(f"{len(rows):,} QS-ranking prompts, concurrency {a.concurrency}, {a.latency * 1000:.0f} ms per request "
                  f"(loopback server); wire limit {len(rows) * a.latency / a.concurrency:.1f} s")
            for i in range(a.repeat):  # interleaved: machine noise hits every tool alike
                for name in which:
                    before = server_total(base)
                    r = measure(commands[name], folder, env)
                    r["sent"] = server_total(base) - before
                    if r["sent"] != len(rows):  # every tool must really ask every prompt once
                        raise SystemExit(f"{name} sent {r['sent']} requests for {len(rows)} prompts")
                    runs[name].append(r)
                    print(f"  repeat {i + 1}  {name:8s} wall {r['wall']:6.2f} s  CPU {r['cpu']:6.2f} s  peak RSS "
                          f"{r['rss']:5.0f} MiB  exit {r['rc']}  requests {r['sent']:,}", flush=True)
        finally:
            server.terminate()
            server.wait()

    label = {"inspect": "Inspect AI (inspect eval)", "serial": "defan-pytest, serial", "n2": "defan-pytest, -n 2",
             "litellm": "defan-pytest, serial, litellm"}
    print(f"\nmedians of {a.repeat} interleaved repeats [range]")
    for name, rs in runs.items():
        def med(k: str) -> str:
            vals = [r[k] for r in rs]
            return f"{statistics.median(vals):6.2f} [{min(vals):.2f}-{max(vals):.2f}]"
        print(f"  {label[name]:30s} wall {med('wall')} s   CPU {med('cpu')} s   peak RSS {med('rss')} MiB")
    if "inspect" in runs:
        for name in ("serial", "n2", "litellm"):
            if name in runs:
                ratios = sorted(o["wall"] / b["wall"] for o, b in zip(runs[name], runs["inspect"]))
                target = "   (target <= 0.20)" if name == "serial" else ""
                print(f"  wall ratio {label[name]} / Inspect AI: {statistics.median(ratios):.3f} "
                      f"[{ratios[0]:.3f}-{ratios[-1]:.3f}]{target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
