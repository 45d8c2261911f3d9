"""What ``--defan-sequential`` saves and what it keeps, by simulation (issue 39).

    python bench/sequential.py [--reps 200] [--only broken,rerun,close] [--flips 0,0.05]

The application of ``bench/gate_power.py`` (:class:`gate_power.App`: 8 domains with the public
split's paraphrase groups at the README's pull-request sample, ``--defan-sample=3000``; FCH about
0.70; a share ``2 f`` of prompts uncertain, so that two asks differ with probability ``f``),
asked twice: a baseline run of every prompt, then the pull request's run, asked the way the
plugin asks it: :class:`defan_pytest.run.sequential.Asking` (whole groups in batches, in the
seed's order, each domain's prefix) and :class:`defan_pytest.gates.sequential.Judge` between
batches, both the library's own. When it stops, the gate's verdict is the regression gate's own
(:func:`defan_pytest.gates.regression.judge`) on the prompts asked, with the default thresholds
(tolerance 0.02, confidence 0.95, the built-in error-rate limit).

Scenarios:

- ``broken``: a 10-point rise of nobel's FCH (each right answer of nobel turns wrong with the
  same chance): how much of the sample is asked, and how often the gate fails;
- ``rerun``: the same application again (no effect): how much is asked, and the whole gate's
  false regression rate (any scope regressed) under the sequential stop, against the
  configured 5%;
- ``close``: a rise of 2.5 points in nobel (near the 2-point tolerance): how often the run
  asks the whole sample, and how often its verdict is the one the whole sample gives;
- ``noise``: the fail side alone against no change, in many more runs (the library's
  :class:`~defan_pytest.stats.sequential.BetTest` on each judged change's stream of symmetric
  flips, looked at after every batch): how often any scope settles failing.

Every rate and mean is printed with its Monte Carlo standard error; seeds are fixed. The
machine is shared: times are not figures.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from gate_power import PR, App  # noqa: E402

from defan_pytest.gates import regression  # noqa: E402
from defan_pytest.stats.sequential import BetTest  # noqa: E402
from defan_pytest.gates.sequential import Judge  # noqa: E402
from defan_pytest.gates.thresholds import parse_thresholds  # noqa: E402
from defan_pytest.run.sequential import Asking  # noqa: E402

TYPES = {"sports": "name", "census": "numeric", "nobel": "name", "entertainment": "name", "world_org": "name",
         "qs_ranking": "rank", "conference_venue": "city", "math": "numeric"}


class Row:
    """What :class:`Asking` reads of a row."""

    __slots__ = ("id", "domain", "group_key", "type")

    def __init__(self, domain: str, g: int, p: int) -> None:
        self.id = f"{domain}-q{g:04d}-p{p:02d}"
        self.domain = domain
        self.group_key = f"{domain}-q{g:04d}"
        self.type = TYPES[domain]


def _records(domain: str, run: dict[str, np.ndarray]) -> dict[str, dict[str, Any]]:
    out = {}
    _, groups, size = run["wrong"].shape
    for g in range(groups):
        for i in range(size):
            failed = bool(run["failed"][0, g, i])
            claim = {0: "right", 1: f"usual{g}", 2: f"other{g}"}[int(run["claim"][0, g, i])]
            row = Row(domain, g, i)
            out[row.id] = {"id": row.id, "domain": domain, "group": row.group_key, "type": row.type,
                           "claim": None if failed else claim,
                           "aligned": None if failed else not bool(run["misaligned"][0, g, i]),
                           "correct": None if failed else not bool(run["wrong"][0, g, i]),
                           "error": "TimeoutError" if failed else None}
    return out


def replicate(rng: np.random.Generator, flip: float, rise: float = 0.0, errors: float = 0.0) -> dict[str, Any]:
    """One pull request: the baseline, the sequential run, where it stopped and its verdict (and
    the verdict of the whole sample, for comparison)."""
    rows: list[Row] = []
    old: dict[str, dict[str, Any]] = {}
    new: dict[str, dict[str, Any]] = {}
    order: list[str] = []
    for domain, groups in PR.items():
        size = 1 if domain == "math" else 15
        app = App(rng, groups, size, flip)
        p_new = app.p_wrong.copy()
        if domain == "nobel" and rise:
            right = app.p_wrong < 0.5
            p_new = np.where(right & (rng.random(p_new.shape) < rise / max(right.mean(), 1e-9)), 1.0, p_new)
        old.update(_records(domain, app.ask(rng, app.p_wrong, 1, errors)))
        new.update(_records(domain, app.ask(rng, p_new, 1, errors)))
        rows.extend(Row(domain, g, i) for g in range(groups) for i in range(size))
        keys = [f"{domain}-q{g:04d}" for g in range(groups)]
        rng.shuffle(keys)  # the seed's order
        order.extend(keys)
    thresholds = parse_thresholds({})
    planned = {d: (g, g * (1 if d == "math" else 15)) for d, g in PR.items()}
    judge = Judge(thresholds, planned, list(old.values()))
    asking = Asking(rows, order, judge, lambda batch: [new[r.id] for r in batch])
    batch = asking.first()
    while batch:
        batch = asking.next()
    asked = [new[i] for i in asking.asked]
    baseline = {"rows": list(old.values())}
    verdict = regression.judge(baseline, asked, thresholds)
    whole = regression.judge(baseline, list(new.values()), thresholds) if len(asked) < len(new) else verdict
    return {"share": len(asked) / len(new), "settled": asking.settled, "fail": verdict["status"] == "fail",
            "whole_fail": whole["status"] == "fail", "open": asking.info()["open"]}


def _mean(values: list[float]) -> str:
    n = len(values)
    m = sum(values) / n
    sd = math.sqrt(sum((v - m) ** 2 for v in values) / max(1, n - 1))
    return f"{100 * m:5.1f}% +-{100 * sd / math.sqrt(n):.1f}"


def _rate(hits: int, n: int) -> str:
    p = hits / n
    return f"{100 * p:5.1f}% +-{100 * math.sqrt(max(p * (1 - p), 1e-12) / n):.1f}"


def scenario(name: str, reps: int, flip: float, rise: float, seed: int) -> None:
    rng = np.random.default_rng(seed)
    found = [replicate(rng, flip, rise) for _ in range(reps)]
    shares = [f["share"] for f in found]
    fails = sum(f["fail"] for f in found)
    whole = sum(f["whole_fail"] for f in found)
    same = sum(f["fail"] == f["whole_fail"] for f in found)
    to_end = sum(not f["settled"] for f in found)
    print(f"| {name} | {flip:.2f} | {reps} | {_mean(shares)} | {_rate(to_end, reps)} | {_rate(fails, reps)} | "
          f"{_rate(whole, reps)} | {_rate(same, reps)} |")


def noise_section(reps: int) -> None:
    """The fail side alone against no change, with many more runs than the whole gate's cells:
    each judged change of the pull-request sample (FCH and PMH of the 6 judged domains, a stream
    of per-prompt flips, each way as likely; RC of the 5 with paraphrases, per group) looked at
    after every batch of 5%, a scope settling failing when both its tests ("no change" and "at
    most the tolerance") reach 1 / (0.05 / K): how often any does."""
    prompts = {d: g * (1 if d == "math" else 15) for d, g in PR.items() if g >= 5}
    streams = [(n, 1.0) for n in prompts.values() for _ in range(2)]
    streams += [(g, 1.0) for d, g in PR.items() if g >= 5 and d != "math"]
    alpha = 0.05 / (len(streams) + 3)  # and the overall figure's three
    print(f"\n| flip rate (prompt; RC groups flip 3x as often) | runs | any of the {len(streams)} changes settles failing |")
    print("|---|---|---|")
    for flip in (0.1, 0.25):
        rng = np.random.default_rng(400 + int(100 * flip))
        hits = 0
        for _ in range(reps):
            fired = False
            for units, _ in streams:
                p = min(0.9, flip * (3 if units < 100 else 1))
                xs = rng.choice([-1.0, 0.0, 1.0], size=units, p=[p / 2, 1 - p, p / 2])
                noise, tol = BetTest(0.0, 1), BetTest(0.02, 1)
                step = max(1, math.ceil(0.05 * units))
                for i, x in enumerate(xs, 1):
                    noise.add(float(x))
                    tol.add(float(x))
                    if (i % step == 0 or i == units) and noise.rejects(alpha) and tol.rejects(alpha):
                        fired = True
                        break
                if fired:
                    break
            hits += fired
        print(f"| {flip:.2f} | {reps} | {_rate(hits, reps)} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--only", default="broken,rerun,close,noise")
    parser.add_argument("--noise-reps", type=int, default=2000)
    parser.add_argument("--flips", default="0,0.05,0.1")
    args = parser.parse_args()
    started = time.time()
    print("# bench/sequential.py: the README's pull-request sample (3,000 prompts: "
          + ", ".join(f"{d} {g}" for d, g in PR.items()) + " groups), default thresholds")
    only = set(args.only.split(","))
    if only & {"broken", "rerun", "close"}:
        print("\n| scenario | flip rate | runs | asked of the sample (mean) | asked to the end | gate fails "
              "(sequential) | gate fails (whole sample) | same verdict |")
        print("|---|---|---|---|---|---|---|---|")
    for i, flip in enumerate(float(f) for f in args.flips.split(",")):
        if "broken" in only:
            scenario("broken: nobel FCH +10 points", args.reps, flip, 0.10, 100 + i)
        if "rerun" in only:
            scenario("no effect: the model against its own re-run", args.reps, flip, 0.0, 200 + i)
        if "close" in only:
            scenario("close: nobel FCH +2.5 points", args.reps, flip, 0.025, 300 + i)
    if "noise" in only:
        noise_section(args.noise_reps)
    print(f"\n({time.time() - started:.0f} s on a shared, loaded machine)")


if __name__ == "__main__":
    main()
