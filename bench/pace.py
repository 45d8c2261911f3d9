"""The pace of the calls against a server of fixed capacity, as a user runs the plugin.

    python bench/pace.py [--prompts 80] [--slots 2] [--latency 0.25] [--timeout 1.2] [--concurrency 16]

A loopback OpenAI-protocol server (tests/openai_server.py) serves ``--slots`` requests at once,
each for ``--latency`` seconds, and queues the rest, as llama.cpp's ``llama-server -np N`` does.
The plugin asks it ``--prompts`` prompts at ``--defan-concurrency`` with ``--defan-timeout``, in a
fresh temporary folder, four ways:

* ``fixed``: ``--defan-pace=fixed``, the baseline (every request sent at once, as before);
* ``adaptive``: the server states nothing: timeouts under load are the only signal;
* ``timings``: the server adds llama.cpp's ``timings`` to each answer (its own time);
* ``props``: the server states its slots (llama.cpp's ``GET /props``).

Each line: wall seconds (and the ratio to ``fixed``), requests the server received per prompt,
the most it held at once, retries and failed prompts as the summary counts them, and the
summary's concurrency line.  Not a test: it takes a minute.
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from openai_server import OpenAIServer  # noqa: E402

MODES = {"fixed": {}, "adaptive": {}, "timings": {"timings": True}, "props": {"props": True}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=80)
    parser.add_argument("--slots", type=int, default=2)
    parser.add_argument("--latency", type=float, default=0.25)
    parser.add_argument("--timeout", type=float, default=1.2)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("pytest_args", nargs="*", help="more pytest arguments (-n 2), after --")
    args = parser.parse_args()
    rows = [{"question": f"How many moons does planet {i} have?", "answer": str(i % 7), "type": "numeric",
             "domain": "toy", "group": f"g{i // 3}"} for i in range(args.prompts)]
    answers = {r["question"]: r["answer"] for r in rows}
    print(f"{args.prompts} prompts, a server of {args.slots} slots x {args.latency:g} s, --defan-concurrency="
          f"{args.concurrency}, --defan-timeout={args.timeout:g}")
    base = None
    with tempfile.TemporaryDirectory(prefix="defan-pace-") as tmp:
        Path(tmp, "toy.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        for mode, extra in MODES.items():
            with OpenAIServer(answers=answers, slots=args.slots, latency=args.latency, log_requests=False,
                              **extra) as srv:
                t0 = time.monotonic()
                out = subprocess.run(
                    [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
                     "--defan-dataset=toy.jsonl", "--defan-spacy-model=none", "--defan-model=openai/bench",
                     f"--defan-model-arg=api_base={srv.base_url}", f"--defan-timeout={args.timeout}",
                     f"--defan-concurrency={args.concurrency}", "--defan-cache=off",
                     f"--defan-pace={'fixed' if mode == 'fixed' else 'adaptive'}", *args.pytest_args],
                    cwd=tmp, capture_output=True, text=True,
                )
                wall = time.monotonic() - t0
                base = base or wall
                text = out.stdout
                m = re.search(r"(\d+) prompts: .*?(\d+) failed; (\d+) retr", text)
                pace = next((ln for ln in text.splitlines() if ln.startswith("concurrency ")), "concurrency kept")
                failed, retries = (m.group(2), m.group(3)) if m else ("?", "?")
                print(f"{mode:9} wall {wall:5.1f} s ({wall / base:.2f} x fixed); {srv.total / args.prompts:.2f} requests a "
                      f"prompt, at most {srv.peak_in_flight} at once; {retries} retries, {failed} failed; {pace[:150]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
