"""What the regression gate catches and what it lets pass, by simulation (issue 33).

    python bench/gate_power.py [--reps 1000] [--full-reps 200] [--only rerun,change,interval,power,shared]

Two runs of an application on DefAn-shaped data (8 domains with the public split's paraphrase
groups: the README's pull-request sample, ``--defan-sample=3000``, 3 to 645 groups a domain, 28 in
nobel; or the full set, 70,793 prompts), judged by the library's own test against no change
(:func:`defan_pytest.stats.flips.against_noise` and :func:`~defan_pytest.stats.flips.combine`, the
noise of a group measured by :func:`defan_pytest.gates.paired.measured_noise` when the runs repeat)
and the gate's rule: a scope's figure regresses when the test is significant one-sided at the
gate's level (0.05 over the changes it judges: FCH, PMH and RC in each domain with 5 paraphrase
groups in common and overall, math without RC: 20 at the pull-request sample, 26 on the full set)
and the estimated change is past the tolerance (0.02). ``--check`` runs a few replicates through
:func:`defan_pytest.gates.regression.judge` itself and compares every decision.

The application (per prompt: wrong or right, misaligned or not, a claim for RC):

- a group "knows" its fact with a chance set so that FCH is about 0.70 (the issue's case); a
  prompt of a known group is right 90% of the time, of an unknown one 10% (deterministically:
  the same prompt, the same answer);
- its own noise: a share ``2 f`` of the prompts is uncertain (each ask right or wrong with even
  chances), so two asks of a prompt differ in FCH's verdict with probability ``f`` (the flip rate
  ``--defan-repeat`` reports); ``--defan-repeat=3`` asks every prompt three times in both runs;
- call errors: each ask fails with the given chance (left out of the pairs);
- a wrong answer claims the group's usual wrong value 80% of the time (else another), so RC
  (every answer of the group the same claim) moves with the answers.

Scenarios (``change``): an even rise of 3, 5 or 10 points of nobel's FCH (each right answer of
nobel turns wrong with the same chance); a category collapse (a sixth of nobel's groups, every
right answer in them turns wrong: the issue's one-line bug). ``rerun``: the same application
again, flip rates 0, 10 and 25%, with and without repeats and 10% call errors. ``shared``: noise
shared by a question's paraphrases (a cache keyed by meaning): the default gate, and
``[regression] noise = "question"``. ``interval``: coverage of the overall FCH interval the
report shows (:func:`defan_pytest.metrics.summary.summarize`, the plugin's path) at 1, 2, 3 and
5 groups per domain. ``power``: the smallest rise the run states it catches
(:func:`defan_pytest.gates.regression.power`), against the simulated rate of catching it.

Every rate is printed with its Monte Carlo standard error; seeds are fixed.
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

from defan_pytest.gates.paired import measured_noise  # noqa: E402
from defan_pytest.metrics.groups import PairedValue  # noqa: E402
from defan_pytest.stats.intervals import welch_df
from defan_pytest.stats.flips import GroupChange, PowerPart, against_noise, catchable_rise, combine  # noqa: E402

#: Paraphrase groups per domain: the README's pull-request sample (--defan-sample=3000, seed 1)
#: and the full public split; math's groups are single prompts.
PR = {"sports": 4, "census": 22, "nobel": 28, "entertainment": 32, "world_org": 8, "qs_ranking": 61,
      "conference_venue": 3, "math": 645}
FULL = {"sports": 87, "census": 527, "nobel": 653, "entertainment": 761, "world_org": 183, "qs_ranking": 1433,
        "conference_venue": 61, "math": 15218}
#: A scope needs this many paraphrase groups in common to be judged (min_samples' default):
#: sports (4) and conference_venue (3) are not judged at the pull-request sample.
MIN_SAMPLES = 5
ALPHA = 0.05
TOL = 0.02


def _se(p: float, n: int) -> float:
    return math.sqrt(max(p * (1 - p), 1e-12) / n)


def _rate(hits: int, n: int) -> str:
    p = hits / n
    return f"{100 * p:5.1f}% +-{100 * _se(p, n):.1f}"


class App:
    """One domain of an application: each prompt's chance of a wrong answer (0, 1, or 0.5 for
    an uncertain one), of a misaligned one, and the wrong claim its group usually gives."""

    def __init__(self, rng: np.random.Generator, groups: int, size: int, flip: float, fch: float = 0.70,
                 shared: bool = False) -> None:
        known = rng.random(groups) < max(0.0, min(1.0, (1 - fch - 0.1) / 0.8))
        right = rng.random((groups, size)) < np.where(known[:, None], 0.9, 0.1)
        self.p_wrong = (~right).astype(float)
        if flip > 0:
            unsure = (np.repeat((rng.random(groups) < 2 * flip)[:, None], size, 1) if shared
                      else rng.random((groups, size)) < 2 * flip)
            self.p_wrong = np.where(unsure, 0.5, self.p_wrong)
        self.shared = unsure if (flip > 0 and shared) else None
        self.p_misaligned = np.where(rng.random((groups, size)) < 0.15, 1.0, 0.0)
        self.usual = rng.random((groups, size)) < 0.8  # a wrong answer's claim: the usual one

    def ask(self, rng: np.random.Generator, p_wrong: np.ndarray, asks: int, errors: float) -> dict[str, np.ndarray]:
        """``asks`` asks of every prompt: wrong, misaligned, the claim (0 right, 1 usual wrong,
        2 other), and whether the call failed; each ``asks x groups x size``."""
        shape = (asks, *p_wrong.shape)
        draw = rng.random(shape)
        if self.shared is not None:
            # Noise shared by a question's paraphrases: one draw per group and ask.
            group_draw = np.broadcast_to(rng.random((asks, p_wrong.shape[0], 1)), shape)
            draw = np.where(self.shared[None], group_draw, draw)
        wrong = draw < p_wrong
        misaligned = rng.random(shape) < self.p_misaligned
        claim = np.where(wrong, np.where(self.usual[None], 1, 2), 0)
        failed = rng.random(shape) < errors
        return {"wrong": wrong, "misaligned": misaligned, "claim": claim, "failed": failed}


def _prompt_values(run: dict[str, np.ndarray], key: str) -> tuple[np.ndarray, np.ndarray]:
    """Each prompt's share of its answered asks with the event, and its answered asks."""
    ok = ~run["failed"]
    answered = ok.sum(0)
    hits = (run[key] & ok).sum(0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(answered > 0, hits / np.maximum(answered, 1), np.nan), answered


def _consistent(run: dict[str, np.ndarray]) -> np.ndarray:
    """Each group's consistency per round (``asks x groups``; NaN with fewer than 2 answers)."""
    ok = ~run["failed"]
    claims = np.where(ok, run["claim"], -1)
    n = ok.sum(2)
    same = np.ones(n.shape, dtype=bool)
    for c in (0, 1, 2):
        has = ((claims == c) & ok).any(2)
        others = ((claims != c) & ok).any(2)
        same &= ~(has & others)
    return np.where(n >= 2, same.astype(float), np.nan)


def _asks(run: dict[str, np.ndarray], key: str, g: int, i: int) -> tuple[int | None, ...]:
    if run[key].shape[0] < 2:
        return ()
    return tuple(None if run["failed"][k, g, i] else int(run[key][k, g, i]) for k in range(run[key].shape[0]))


def _round_spread(run: dict[str, np.ndarray], key: str, keep: np.ndarray) -> np.ndarray:
    """Per group, the variance of one round's sum between the rounds of one run, each prompt
    centred at its own mean (what :func:`defan_pytest.gates.paired.measured_noise` computes,
    vectorised; ``--check`` compares the two)."""
    ok = ~run["failed"] & keep[None]
    events = run[key].astype(float)
    answered = ok.sum(0)
    mean = np.where(answered > 0, (events * ok).sum(0) / np.maximum(answered, 1), 0.0)
    weight = events.shape[0] / np.maximum(answered, 1)
    resid = np.where(ok, weight[None] * (events - mean[None]), 0.0)
    totals = resid.sum(2)  # rounds x groups
    return (totals ** 2).sum(0) / (events.shape[0] - 1)


def _scope_changes(old: dict[str, np.ndarray], new: dict[str, np.ndarray], key: str, both_ok: np.ndarray,
                   noise_measured: bool) -> tuple[list[GroupChange], float, int, float]:
    """The GroupChanges of FCH (``wrong``) or PMH (``misaligned``), the estimate, the pairs
    and the baseline's level, as :func:`defan_pytest.gates.paired.compare` counts them."""
    v_old, _ = _prompt_values(old, key)
    v_new, _ = _prompt_values(new, key)
    diff = np.where(both_ok, v_new - v_old, 0.0)
    measured = None
    df = math.inf
    if noise_measured:
        rounds_old, rounds_new = old[key].shape[0], new[key].shape[0]
        measured = (_round_spread(old, key, both_ok) / rounds_old + _round_spread(new, key, both_ok) / rounds_new)
        df = float(rounds_old - 1 + rounds_new - 1)
    counts = both_ok.sum(1)
    changes = [
        GroupChange(tuple(row[mask].tolist()), None if measured is None else float(measured[g]), df)
        for g, (row, mask) in enumerate(zip(diff, both_ok)) if counts[g]
    ]
    pairs = int(counts.sum())
    total = float(diff.sum())
    level_old = float(np.where(both_ok, v_old, 0.0).sum())
    return changes, (total / pairs if pairs else 0.0), pairs, (level_old / pairs if pairs else 0.0)


def _rc_changes(old: dict[str, np.ndarray], new: dict[str, np.ndarray], both_ok: np.ndarray,
                noise_measured: bool) -> tuple[list[GroupChange], float, int, float]:
    """RC: one pair a group (over the prompts answered in both runs), worse-signed (a drop)."""
    mask_old = dict(old, failed=old["failed"] | ~both_ok[None])
    mask_new = dict(new, failed=new["failed"] | ~both_ok[None])
    c_old, c_new = _consistent(mask_old), _consistent(mask_new)
    changes = []
    total = 0.0
    pairs = 0
    level = 0.0
    for g in range(c_old.shape[1]):
        co, cn = c_old[:, g], c_new[:, g]
        if np.all(np.isnan(co)) or np.all(np.isnan(cn)):
            continue
        vo, vn = float(np.nanmean(co)), float(np.nanmean(cn))
        measured = None
        if noise_measured and (len(co) > 1 or len(cn) > 1):
            asks_o = tuple(None if math.isnan(x) else int(x) for x in co) if len(co) > 1 else ()
            asks_n = tuple(None if math.isnan(x) else int(x) for x in cn) if len(cn) > 1 else ()
            found = measured_noise([PairedValue(vo, vn, asks_o, asks_n)])
            measured = None if found is None else found
        changes.append(GroupChange((vo - vn,), None if measured is None else measured[0],
                                   math.inf if measured is None else measured[1]))
        total += vn - vo
        pairs += 1
        level += vo
    return changes, (total / pairs if pairs else 0.0), pairs, (level / pairs if pairs else 0.0)


def _level(domains: dict[str, int]) -> float:
    """The gate's one-sided level a change: 0.05 over the changes it judges (FCH, PMH and RC in
    each domain with min_samples groups and overall; math has no RC): 20 at the pull-request
    sample, 26 on the full set."""
    judged = sum(2 if name == "math" else 3 for name, groups in domains.items() if groups >= MIN_SAMPLES) + 3
    return ALPHA / judged


def simulate(rng: np.random.Generator, domains: dict[str, int], *, flip: float = 0.0, repeat: int = 1,
             errors: float = 0.0, rise: float = 0.0, collapse: bool = False, shared: bool = False,
             noise: str = "answer", keep: bool = False) -> dict[str, Any]:
    """One replicate: the whole gate's decision, nobel's FCH decision, and (``keep``) the
    scopes' parts for the power calculation."""
    failed_any = False
    nobel_fch = False
    level = _level(domains)
    parts: dict[str, list[tuple[float, Any, float, int, float, str]]] = {"fch": [], "pmh": [], "rc": []}
    for name, groups in domains.items():
        if groups < MIN_SAMPLES:
            continue  # the gate judges no scope of fewer groups in common (min_samples)
        size = 1 if name == "math" else 15
        app = App(rng, groups, size, flip, shared=shared)
        p_new = app.p_wrong.copy()
        if name == "nobel" and rise:
            right = app.p_wrong < 0.5
            share = right.mean()
            p_new = np.where(right & (rng.random(p_new.shape) < rise / max(share, 1e-9)), 1.0, p_new)
        if name == "nobel" and collapse:
            category = np.zeros(groups, dtype=bool)
            category[: max(1, round(groups / 6))] = True
            rng.shuffle(category)
            p_new[category] = np.where(app.p_wrong[category] < 0.5, 1.0, app.p_wrong[category])
        old = app.ask(rng, app.p_wrong, repeat, errors)
        new = app.ask(rng, p_new, repeat, errors)
        both_ok = (~old["failed"]).any(0) & (~new["failed"]).any(0)
        measured = repeat > 1
        found = {
            "fch": _scope_changes(old, new, "wrong", both_ok, measured),
            "pmh": _scope_changes(old, new, "misaligned", both_ok, measured),
        }
        if size > 1:
            found["rc"] = _rc_changes(old, new, both_ok, measured)
        for metric, (changes, estimate, pairs, _baseline_figure) in found.items():
            if not pairs:
                continue
            test = against_noise(changes, noise)
            assert test is not None
            worse = -estimate if metric == "rc" else estimate
            regressed = test.p_value < level and worse > TOL
            failed_any |= regressed
            if name == "nobel" and metric == "fch":
                nobel_fch = regressed
            spread = [(g.measured, g.df) for g in changes if g.measured is not None]
            parts[metric].append((worse, test, _baseline_figure, pairs, sum(v for v, _ in spread), name,
                                  welch_df([v for v, _ in spread], [d for _, d in spread]) if spread else math.inf))
    for metric, found_parts in parts.items():
        d = len(found_parts)
        tests = [(1.0 / (d * pairs), test) for _, test, _, pairs, *_ in found_parts]
        combined = combine(tests)
        worse = sum(w for w, *_ in found_parts) / d
        if combined is not None and combined.p_value < level and worse > TOL:
            failed_any = True
    return {"whole": failed_any, "nobel_fch": nobel_fch, "parts": parts if keep else None}


def section_rerun(reps: int, full_reps: int) -> None:
    print("\n## A model against its own re-run: how often the whole gate fails (target: at most 5%)")
    print("| sample | flip rate | repeats | call errors | whole gate fails |")
    print("|---|---|---|---|---|")
    cells = [(f, k, e) for f in (0.0, 0.10, 0.25) for k in (1, 3) for e in (0.0, 0.10)]
    for label, domains, n in (("README PR sample", PR, reps), ("full set", FULL, full_reps)):
        for flip, repeat, errors in cells:
            if label == "full set" and (repeat > 1 or errors) and flip != 0.25:
                continue  # the hardest noise stands for the rest on the full set
            rng = np.random.default_rng(int(1000 * flip) + 10 * repeat + int(100 * errors))
            hits = sum(simulate(rng, domains, flip=flip, repeat=repeat, errors=errors)["whole"] for _ in range(n))
            print(f"| {label} | {flip:.0%} | {repeat} | {errors:.0%} | {_rate(hits, n)} ({n} runs) |")


def section_change(reps: int, full_reps: int) -> None:
    print("\n## Changes the gate must catch: how often it fails (nobel's FCH verdict; the whole gate)")
    print("| sample | change | model | nobel FCH regressed | whole gate fails |")
    print("|---|---|---|---|---|")
    scenarios = [
        ("even rise of 3 points", dict(rise=0.03)),
        ("even rise of 5 points", dict(rise=0.05)),
        ("even rise of 10 points", dict(rise=0.10)),
        ("category collapse (a sixth of nobel)", dict(collapse=True)),
    ]
    models = [("deterministic", dict()), ("flip rate 10%", dict(flip=0.10)), ("flip rate 10%, --defan-repeat=3",
                                                                              dict(flip=0.10, repeat=3))]
    for label, domains, n in (("README PR sample", PR, reps), ("full set", FULL, full_reps)):
        for s_label, s_kw in scenarios:
            for m_label, m_kw in models:
                if label == "full set" and m_kw.get("repeat"):
                    continue
                rng = np.random.default_rng(hash((s_label, m_label)) % 2**32)
                got = [simulate(rng, domains, **s_kw, **m_kw) for _ in range(n)]
                nobel = sum(g["nobel_fch"] for g in got)
                whole = sum(g["whole"] for g in got)
                print(f"| {label} | {s_label} | {m_label} | {_rate(nobel, n)} | {_rate(whole, n)} |")


def section_shared(reps: int) -> None:
    print("\n## Noise shared by a question's paraphrases (a cache keyed by meaning): the whole gate on a re-run")
    print("| flip rate | [regression] noise | whole gate fails | category collapse caught (nobel FCH) |")
    print("|---|---|---|---|")
    for flip in (0.05, 0.25):
        for noise in ("answer", "question"):
            rng = np.random.default_rng(77 + int(100 * flip))
            hits = sum(simulate(rng, PR, flip=flip, shared=True, noise=noise)["whole"] for _ in range(reps))
            caught = sum(simulate(rng, PR, flip=0.0, collapse=True, noise=noise)["nobel_fch"] for _ in range(reps))
            print(f"| {flip:.0%} | {noise} | {_rate(hits, reps)} | {_rate(caught, reps)} (deterministic) |")


def section_interval(reps: int) -> None:
    from defan_pytest.metrics.summary import summarize

    print("\n## The overall FCH interval the report shows: how often it covers the true mean of domains (target 0.94)")
    print("| groups per domain | coverage |")
    print("|---|---|")
    mus = (0.05, 0.1, 0.2, 0.3, 0.5, 0.6, 0.8, 0.95)
    rng = np.random.default_rng(33)
    for groups in (1, 2, 3, 5):
        hits = 0
        for _ in range(reps):
            records = []
            for d, mu in enumerate(mus):
                s = 1.0 / 0.3 - 1.0
                rates = rng.beta(mu * s, (1 - mu) * s, size=groups)
                for g in range(groups):
                    wrong = rng.random(15) < rates[g]
                    for i in range(15):
                        records.append({"id": f"d{d}-g{g}-{i}", "domain": f"d{d}", "group": f"d{d}-g{g}", "type": "numeric",
                                        "claim": "1" if not wrong[i] else "2", "aligned": True, "correct": not wrong[i],
                                        "error": None})
            lo, hi = summarize(records)["overall"]["mean"]["fch_ci"]
            hits += lo <= sum(mus) / len(mus) <= hi
        print(f"| {groups} | {_rate(hits, reps)} |")


def section_power(reps: int) -> None:
    print("\n## The smallest rise a run states it catches (80% power), and how often the gate catches it (nobel FCH)")
    print("| sample | model | stated smallest rise | caught at that rise |")
    print("|---|---|---|---|")
    for label, domains in (("README PR sample", PR),):
        for m_label, kw in (("deterministic", dict()), ("flip rate 10%, --defan-repeat=3", dict(flip=0.10, repeat=3))):
            rng = np.random.default_rng(5)
            # The statement a run makes of itself: its pairs, its noise (measured by repeats; a
            # deterministic application has none), the room nobel's FCH has to rise.
            found = simulate(rng, domains, keep=True, **kw)["parts"]["fch"]
            nobel = next(p for p in found if p[5] == "nobel")
            _, _, level_old, pairs, measured, _, df = nobel
            noise = measured / pairs
            stated = catchable_rise([PowerPart(1.0 / pairs, pairs, noise, 1.0 - level_old, df)], _level(domains), TOL,
                                    measured=bool(kw.get("repeat")))
            assert stated is not None
            hits = sum(simulate(rng, domains, rise=stated, **kw)["nobel_fch"] for _ in range(reps))
            print(f"| {label} | {m_label} | {100 * stated:.1f} points | {_rate(hits, reps)} |")


def check(n: int) -> None:
    """A few replicates through the gate itself (regression.judge on records), against the
    bench's own counting of the same data: every decision the same."""
    print("\n--check: the bench's decisions against defan_pytest.gates.regression.judge on the same records")
    from defan_pytest.gates import regression
    from defan_pytest.gates.thresholds import parse_thresholds

    rng = np.random.default_rng(99)
    agree = 0
    for r in range(n):
        app = App(rng, 28, 15, 0.10)
        p_new = np.where((app.p_wrong < 0.5) & (rng.random(app.p_wrong.shape) < 0.2), 1.0, app.p_wrong)
        old, new = app.ask(rng, app.p_wrong, 1, 0.05), app.ask(rng, p_new, 1, 0.05)

        def records(run: dict[str, np.ndarray]) -> list[dict[str, Any]]:
            out = []
            for g in range(28):
                for i in range(15):
                    failed = bool(run["failed"][0, g, i])
                    claim = {0: "right", 1: f"usual{g}", 2: f"other{g}"}[int(run["claim"][0, g, i])]
                    out.append({"id": f"nobel-q{g:04d}-p{i:02d}", "domain": "nobel", "group": f"nobel-q{g:04d}",
                                "type": "name", "claim": None if failed else claim,
                                "aligned": None if failed else not bool(run["misaligned"][0, g, i]),
                                "correct": None if failed else not bool(run["wrong"][0, g, i]),
                                "error": "TimeoutError" if failed else None})
            return out

        judged = regression.judge({"rows": records(old)}, records(new), parse_thresholds({}))
        fch = judged["scopes"]["nobel"]["fch"]
        both_ok = (~old["failed"]).any(0) & (~new["failed"]).any(0)
        changes, estimate, _, _ = _scope_changes(old, new, "wrong", both_ok, False)
        test = against_noise(changes)
        assert test is not None
        level = (1 - judged["per_test_confidence"]) / 2
        mine = test.p_value < level and estimate > TOL
        agree += mine == fch["regressed"] and abs(test.p_value - fch["p_value"]) < 1e-9
    print(f"{agree} of {n} replicates: the same p-value and decision")
    same = 0
    for r in range(n):
        app = App(rng, 10, 15, 0.25)
        old, new = app.ask(rng, app.p_wrong, 3, 0.1), app.ask(rng, app.p_wrong, 3, 0.1)
        both_ok = (~old["failed"]).any(0) & (~new["failed"]).any(0)
        mine = _round_spread(old, "wrong", both_ok) / 3 + _round_spread(new, "wrong", both_ok) / 3
        v_old, _ = _prompt_values(old, "wrong")
        v_new, _ = _prompt_values(new, "wrong")
        theirs = [measured_noise([PairedValue(v_old[g, i], v_new[g, i], _asks(old, "wrong", g, i), _asks(new, "wrong", g, i))
                                  for i in np.nonzero(both_ok[g])[0]]) for g in range(10)]
        same += all(abs(a - (b[0] if b else 0.0)) < 1e-9 for a, b in zip(mine, theirs))
    print(f"{same} of {n} replicates: the vectorised noise of repeats equals measured_noise's")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=1000, help="replicates a cell at the pull-request sample")
    parser.add_argument("--full-reps", type=int, default=200, help="replicates a cell on the full set")
    parser.add_argument("--only", default="rerun,change,shared,interval,power",
                        help="sections: rerun, change, shared, interval, power")
    parser.add_argument("--check", type=int, default=0, help="replicates run through regression.judge")
    args = parser.parse_args()
    started = time.time()
    only = set(args.only.split(","))
    print(f"# bench/gate_power.py: whole gate at one-sided 0.05 / 20 = {_level(PR):.4f} a change at the pull-request sample "
          f"(sports and conference_venue have fewer than {MIN_SAMPLES} groups: not judged), 0.05 / 26 = {_level(FULL):.4f} "
          f"on the full set; tolerance {TOL}")
    if args.check:
        check(args.check)
    if "rerun" in only:
        section_rerun(args.reps, args.full_reps)
    if "change" in only:
        section_change(args.reps, args.full_reps)
    if "shared" in only:
        section_shared(args.reps)
    if "interval" in only:
        section_interval(args.reps)
    if "power" in only:
        section_power(args.reps)
    print(f"\n({time.time() - started:.0f} s)")


if __name__ == "__main__":
    main()
