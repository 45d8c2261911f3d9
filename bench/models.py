"""Several models in one session against one session a model (issue 23).

    python bench/models.py [--prompts 300] [--latency 0.05] [--repeat 2]

Two registered callables, each answering every prompt of a toy set after ``--latency`` seconds
(a remote model's wait), at ``--defan-concurrency=4``.  Our path: one session with both
(``--defan-model=a,b``: their calls side by side).  Baseline, measured in the same run: the two
models in two sessions, one after the other, as a team without the option would run them.
Prints each wall time (the best of ``--repeat``), the ratio, the peak memory, and checks that
both ways give the same figures.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import measure  # noqa: E402

CONFTEST = '''
import os, time
import defan_pytest

LATENCY = float(os.environ["BENCH_LATENCY"])

@defan_pytest.model("a", version="1")
def a(prompt):
    time.sleep(LATENCY)
    return prompt.split()[-1].rstrip("?")

@defan_pytest.model("b", version="1")
def b(prompt):
    time.sleep(LATENCY)
    return "I do not know."
'''


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prompts", type=int, default=300)
    ap.add_argument("--latency", type=float, default=0.05)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        rows = [{"question": f"What is the answer to question {i // 3} (asked {i % 3})? {i // 3}", "answer": str(i // 3),
                 "type": "numeric", "domain": "toy", "group": f"g{i // 3}"} for i in range(args.prompts)]
        (root / "toy.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        (root / "conftest.py").write_text(CONFTEST, encoding="utf-8")
        env = {**os.environ, "BENCH_LATENCY": str(args.latency), "LITELLM_LOCAL_MODEL_COST_MAP": "true"}
        common = ["--defan-dataset=toy.jsonl", "--defan-spacy-model=none", "--defan-cache=off", "--defan-concurrency=4",
                  "-p", "no:cacheprovider", "-p", "no:randomly", "-q"]
        both_t, both_rss, _ = measure(["--defan-model=a,b", "--defan-report=both.json", *common], root, env, args.repeat)
        one_t = 0.0
        for m in ("a", "b"):
            t, _rss, _ = measure([f"--defan-model={m}", f"--defan-report={m}.json", *common], root, env, args.repeat)
            one_t += t
        both = json.loads((root / "both.json").read_text())
        same = all(
            {k: run[k] for k in ("domains", "overall")} == {k: alone[k] for k in ("domains", "overall")}
            for run, alone in zip(both["runs"], (json.loads((root / f"{m}.json").read_text()) for m in ("a", "b")))
        )
    print(f"{args.prompts} prompts x 2 models, {args.latency * 1000:.0f} ms a call, 4 at once")
    print(f"baseline: two sessions one after the other  {one_t:6.2f} s")
    print(f"ours: one session of both models            {both_t:6.2f} s  ({both_t / one_t:.2f}x the baseline)")
    print(f"peak memory of the session of both: {both_rss:.0f} MiB; the same figures both ways: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
