"""Coverage of the intervals, stability and power of the gates, by simulation.

    python bench/regression_stability.py [--reps 4000] [--only coverage,paired,rc,stability,gate,wholegate]

Every figure is simulated the way DefAn data look: paraphrase groups of 15 answers, each group
with its own hallucination rate (between-group variation: the intra-class correlation ``rho``),
answers drawn independently given the group's rate. The intervals and decisions measured are
the library's own (:func:`defan_pytest.metrics.summary.cluster_interval`,
:func:`defan_pytest.stats.paired.paired_interval`, :func:`defan_pytest.stats.intervals.mean_interval`, the
same functions :func:`~defan_pytest.metrics.summary.summarize` and
:func:`~defan_pytest.gates.paired.compare` call); "today" is the method they replaced (Wilson at
the cluster effective size with z = 1.96; for a change, ``change -+ 1.96 * cluster se``),
reimplemented here.

Sections (``--only``):

- ``coverage``: the level interval, today's and the new, per G (groups), rho and true rate mu:
  coverage of the true mean rate and mean width.
- ``rc``: RC (a rate over independent groups): exact coverage of Wilson (today) and
  Clopper-Pearson (new), the minimum over true rates 0.1-0.9.
- ``paired``: the paired interval of the regression gate, per G, rho, mu and scenario (true
  change, correlation of group rates between runs, how often an answer stays the same).
- ``stability``: a model compared with an independent second run of itself (answers re-drawn):
  how often the regression gate falsely reports an FCH regression (per domain, overall, and
  any of the 9 scopes), at tolerance 0.02 tested one-sided (the lower bound beyond it), with
  intervals at a two-sided 0.95 and at the gate's level 1 - 2 * 0.05 / 26 (one-sided Bonferroni
  over FCH, PMH and RC judged in 8 domains and overall: 26 changes on the public split, math has
  no RC); and how often a real 5-point FCH rise is caught (power), at 10, 30 and 100 groups per
  domain, 8 domains.
- ``wholegate``: the whole regression gate (:func:`defan_pytest.gates.regression.judge`) on
  records of 8 domains at 5, 10 and 30 groups each: how often a re-run of the same model fails
  it (with 0, 5 and 10% call errors), and how often a real 5- or 10-point FCH rise does (power).
- ``gate``: a model whose true FCH is the limit - 0.03 (or + 0.03): how often the level gate
  fails it when deciding on the point estimate or on the interval, at 10-300 groups.

Seeds are fixed: the same command prints the same numbers. Monte Carlo standard error of a
proportion near 0.95 with 4,000 replicates: 0.0034.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from typing import Callable, Iterable, Sequence

import numpy as np
from numpy.polynomial.hermite_e import hermegauss

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from defan_pytest.dataset import DOMAINS  # noqa: E402
from defan_pytest.metrics.summary import cluster_interval  # noqa: E402
from defan_pytest.stats.distributions import t_quantile  # noqa: E402
from defan_pytest.stats.intervals import clopper_pearson, mean_interval  # noqa: E402
from defan_pytest.stats.paired import paired_interval, stratified_paired_interval  # noqa: E402

K = 15  # answers per paraphrase group
Z = 1.959963984540054


# --------------------------------------------------------------------------------------------
# Simulation models
# --------------------------------------------------------------------------------------------


def beta_groups(rng: np.random.Generator, reps: int, g: int, mu: float, rho: float) -> np.ndarray:
    """Events per group, ``reps x g``: group rate ~ Beta(mean mu, ICC rho), y ~ Bin(15, rate)."""
    a = mu * (1.0 - rho) / rho
    b = (1.0 - mu) * (1.0 - rho) / rho
    return rng.binomial(K, rng.beta(a, b, size=(reps, g)))


_X, _W = hermegauss(96)
_W = _W / _W.sum()


def _expit(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _mean_rate(a: float, s: float) -> float:
    return float((_W * _expit(a + s * _X)).sum())


def _solve_location(mu: float, s: float) -> float:
    lo, hi = -40.0, 40.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if _mean_rate(mid, s) < mu:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def logit_normal(mu: float, rho: float) -> tuple[float, float]:
    """(location, scale) of a logit-normal group rate with mean mu and ICC rho."""
    lo, hi = 1e-6, 30.0
    for _ in range(100):
        s = 0.5 * (lo + hi)
        a = _solve_location(mu, s)
        m = _mean_rate(a, s)
        var = float((_W * _expit(a + s * _X) ** 2).sum()) - m * m
        if var / (mu * (1.0 - mu)) < rho:
            lo = s
        else:
            hi = s
    return _solve_location(mu, s), s


def paired_runs(rng: np.random.Generator, reps: int, g: int, mu: float, rho: float, delta: float,
                r: float, stick: float) -> tuple[np.ndarray, np.ndarray, float]:
    """Two runs on the same ``g`` groups of 15 prompts: (old events, new events) as boolean
    ``reps x g x 15`` arrays, and the true change of the mean rate.

    Group rates are logit-normal (mean mu, ICC rho) in the old run and shifted to mean
    mu + delta in the new one, their latent normals correlated ``r`` between runs; an answer
    keeps its old uniform draw with probability ``stick`` (most answers of a model that
    changed a little stay as they were) and is re-drawn otherwise.
    """
    a, s = logit_normal(mu, rho)
    a2 = _solve_location(mu + delta, s)
    z = rng.standard_normal((reps, g))
    z2 = r * z + math.sqrt(max(0.0, 1.0 - r * r)) * rng.standard_normal((reps, g))
    p_old = _expit(a + s * z)[..., None]
    p_new = _expit(a2 + s * z2)[..., None]
    u = rng.random((reps, g, K))
    v = np.where(rng.random((reps, g, K)) < stick, u, rng.random((reps, g, K)))
    return u < p_old, v < p_new, _mean_rate(a2, s) - _mean_rate(a, s)


def units_of(old: np.ndarray, new: np.ndarray) -> np.ndarray:
    """Per replicate and group: (b, c, m) = (event in new only, in old only, pairs)."""
    b = (new & ~old).sum(axis=2)
    c = (old & ~new).sum(axis=2)
    m = np.full_like(b, old.shape[2])
    return np.stack([b, c, m], axis=2)


# --------------------------------------------------------------------------------------------
# Today's methods (what the new ones replaced), vectorized
# --------------------------------------------------------------------------------------------


def wilson(p: np.ndarray, n: np.ndarray, z: float) -> tuple[np.ndarray, np.ndarray]:
    z2 = z * z
    denom = 1.0 + z2 / n
    center = (p + z2 / (2.0 * n)) / denom
    half = (z / denom) * np.sqrt(np.maximum(p * (1.0 - p) / n + z2 / (4.0 * n * n), 0.0))
    return np.maximum(0.0, center - half), np.minimum(1.0, center + half)


def old_level(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Today's cluster_interval: Wilson at the cluster effective size, z = 1.96, n_eff = G when
    the variance is 0, capped at N."""
    g = y.shape[1]
    n_total = K * g
    events = y.sum(axis=1)
    s = ((y * n_total - events[:, None] * K) ** 2).sum(axis=1).astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        n_eff = events * (n_total - events) * n_total**2 * (g - 1) / (g * s)
    n_eff = np.where((s == 0) | (events == 0) | (events == n_total), float(g), np.minimum(n_eff, n_total))
    return wilson(events / n_total, n_eff, 1.96)


def old_paired(units: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What today's machinery gives for a change: change -+ 1.96 * cluster-robust se."""
    g = units.shape[1]
    d = units[..., 0] - units[..., 1]
    m = units[..., 2]
    total = m.sum(axis=1)
    change = d.sum(axis=1) / total
    var = g / (g - 1) * ((d - change[:, None] * m) ** 2).sum(axis=1) / total**2
    half = Z * np.sqrt(var)
    return change, change - half, change + half


# --------------------------------------------------------------------------------------------
# The new methods, one replicate at a time through the library
# --------------------------------------------------------------------------------------------


def new_level(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    lo = np.empty(len(y))
    hi = np.empty(len(y))
    for i, row in enumerate(y.tolist()):
        found = cluster_interval([(v, K) for v in row])
        assert found is not None
        lo[i], hi[i] = found
    return lo, hi


def new_paired(units: np.ndarray, confidence: float = 0.95) -> np.ndarray:
    """``reps x 4``: change, lo, hi, df of :func:`paired_interval` per replicate."""
    out = np.empty((len(units), 4))
    for i, rows in enumerate(units.tolist()):
        found = paired_interval([tuple(u) for u in rows], confidence)
        assert found is not None
        out[i] = found
    return out


# --------------------------------------------------------------------------------------------
# Sections
# --------------------------------------------------------------------------------------------

GS = (5, 10, 30, 100)
RHOS = (0.05, 0.2, 0.5)


def _row(cells: Iterable[object]) -> str:
    return " ".join(f"{c:>8}" if not isinstance(c, float) else f"{c:8.4f}" for c in cells)


def section_coverage(reps: int) -> None:
    print(f"\n## Level interval: coverage of the true rate (95% nominal), {reps} replicates per cell")
    print(_row(["G", "rho", "mu", "cov_old", "cov_new", "width_old", "width_new", "ratio"]))
    rng = np.random.default_rng(20240601)
    worst_old = worst_new = 1.0
    for g in GS:
        for rho in RHOS:
            for mu in (0.05, 0.1, 0.3, 0.5):
                y = beta_groups(rng, reps, g, mu, rho)
                lo0, hi0 = old_level(y)
                lo1, hi1 = new_level(y)
                c0 = float(((lo0 <= mu) & (mu <= hi0)).mean())
                c1 = float(((lo1 <= mu) & (mu <= hi1)).mean())
                w0, w1 = float((hi0 - lo0).mean()), float((hi1 - lo1).mean())
                if mu >= 0.1:
                    worst_old, worst_new = min(worst_old, c0), min(worst_new, c1)
                print(_row([g, rho, mu, c0, c1, w0, w1, w1 / w0]), flush=True)
    print(f"lowest coverage at mu >= 0.1: today {worst_old:.4f}, new {worst_new:.4f}")


def section_rc() -> None:
    print("\n## RC over independent groups: exact coverage (95% nominal), minimum over true RC 0.1..0.9")
    print(_row(["G", "wilson", "exact", "w_wilson", "w_exact"]))
    rates = np.linspace(0.1, 0.9, 161)
    for g in GS:
        x = np.arange(g + 1)
        lo_w, hi_w = wilson(x / g, np.full(g + 1, float(g)), 1.96)
        exact = np.array([clopper_pearson(float(k), float(g)) for k in x])
        pmf = np.array([[math.comb(g, k) * p**k * (1 - p) ** (g - k) for k in x] for p in rates])
        cov_w = (pmf * ((lo_w[None] <= rates[:, None]) & (rates[:, None] <= hi_w[None]))).sum(axis=1)
        cov_e = (pmf * ((exact[None, :, 0] <= rates[:, None]) & (rates[:, None] <= exact[None, :, 1]))).sum(axis=1)
        width_w = float((pmf * (hi_w - lo_w)[None]).sum(axis=1).mean())
        width_e = float((pmf * (exact[:, 1] - exact[:, 0])[None]).sum(axis=1).mean())
        print(_row([g, float(cov_w.min()), float(cov_e.min()), width_w, width_e]))


SCENARIOS = (
    # (true change, correlation of group rates between runs, P(answer kept))
    (0.0, 1.0, 0.0),    # the same model, answers re-drawn
    (0.03, 0.9, 0.8),   # a small change, most answers unchanged
    (0.05, 0.7, 0.0),   # a bigger change, answers re-drawn
    (-0.05, 0.95, 0.95),  # an improvement, answers very sticky
)


def section_paired(reps: int) -> None:
    print(f"\n## Paired interval: coverage of the true change (95% nominal), {reps} replicates per cell")
    print(_row(["G", "mu", "rho", "delta", "r", "stick", "cov_old", "cov_new", "width_new"]))
    rng = np.random.default_rng(20240602)
    worst = {g: (1.0, 1.0) for g in GS}
    for g in GS:
        for mu in (0.1, 0.3, 0.5):
            for rho in RHOS:
                for delta, r, stick in SCENARIOS:
                    old, new, true = paired_runs(rng, reps, g, mu, rho, delta, r, stick)
                    units = units_of(old, new)
                    _, lo0, hi0 = old_paired(units)
                    res = new_paired(units)
                    eps = 1e-12
                    c0 = float(((lo0 <= true + eps) & (true - eps <= hi0)).mean())
                    c1 = float(((res[:, 1] <= true + eps) & (true - eps <= res[:, 2])).mean())
                    worst[g] = (min(worst[g][0], c0), min(worst[g][1], c1))
                    print(_row([g, mu, rho, delta, r, stick, c0, c1, float((res[:, 2] - res[:, 1]).mean())]),
                          flush=True)
    for g, (c0, c1) in worst.items():
        print(f"G={g}: lowest coverage today {c0:.4f}, new {c1:.4f}")


def _gate_decisions(units_by_domain: Sequence[np.ndarray], tolerance: float, confidence: float = 0.95
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Per replicate: (regressed per domain ``reps x D``, overall mean regressed ``reps``),
    exactly as :func:`compare` decides FCH (lower is better): the interval's lower bound (one-sided
    at (1 + confidence) / 2) beyond the tolerance; the overall mean from the stratified variance."""
    reps = len(units_by_domain[0])
    d = len(units_by_domain)
    per = np.zeros((reps, d), dtype=bool)
    overall = np.zeros(reps, dtype=bool)
    for i in range(reps):
        strata = []
        for j, units in enumerate(units_by_domain):
            rows = [tuple(u) for u in units[i].tolist()]
            strata.append(rows)
            _, lo, _, _ = paired_interval(rows, confidence)
            per[i, j] = lo > tolerance
        _, lo, _, _ = stratified_paired_interval(strata, confidence)
        overall[i] = lo > tolerance
    return per, overall


def _records(rng: np.random.Generator, g: int, p: np.ndarray, errors: float) -> list[dict[str, object]]:
    """One run's records over the eight domains: ``p`` the group rates ``8 x g``; a wrong answer
    claims one of two wrong values (so groups can be inconsistent), a call fails at ``errors``."""
    wrong = rng.random((8, g, K)) < p[..., None]
    other = rng.random((8, g, K)) < 0.5
    failed = rng.random((8, g, K)) < errors
    out: list[dict[str, object]] = []
    for d, domain in enumerate(DOMAINS):
        for j in range(g):
            for i in range(K):
                key = f"{domain}-q{j:04d}"
                if failed[d, j, i]:
                    out.append({"id": f"{key}-p{i:02d}", "domain": domain, "group": key, "type": "numeric",
                                "claim": None, "aligned": None, "correct": None, "error": "TimeoutError"})
                    continue
                bad = bool(wrong[d, j, i])
                claim = ("334" if other[d, j, i] else "335") if bad else "386"
                out.append({"id": f"{key}-p{i:02d}", "domain": domain, "group": key, "type": "numeric",
                            "claim": claim, "aligned": not bad, "correct": not bad, "error": None})
    return out


def section_wholegate(reps: int) -> None:
    """The whole regression gate (:func:`defan_pytest.gates.regression.judge`: FCH, PMH and RC in
    8 domains and overall, one-sided Bonferroni over the K judged changes at the default
    confidence 0.95, tolerance 0.02) on records: how often it fails."""
    from defan_pytest.gates.regression import judge
    from defan_pytest.gates.thresholds import parse_thresholds

    thresholds = parse_thresholds({"regression": {"confidence": 0.95}})
    reps = max(reps // 4, 50)
    print(f"\n## The whole regression gate (judge) on records, 8 domains, {reps} replicates per row")
    print("group FCH rates ~ Beta(mean 0.2, ICC 1/3); false: a re-run of the same model (answers re-drawn); "
          "power: every group's rate + delta (answers re-drawn); calls fail at 'errors'")
    print(_row(["groups/d", "case", "delta", "errors", "K", "gate fails"]))
    rng = np.random.default_rng(20261202)
    for g in (5, 10, 30):
        for case, delta, errors in (("false", 0.0, 0.0), ("false", 0.0, 0.05), ("false", 0.0, 0.10),
                                    ("power", 0.05, 0.0), ("power", 0.10, 0.0)):
            failed = 0
            judged = 0
            for _ in range(reps):
                p = rng.beta(0.4, 1.6, size=(8, g))
                old = _records(rng, g, p, errors)
                new = _records(rng, g, np.minimum(p + delta, 1.0), errors)
                result = judge({"rows": old}, new, thresholds)
                failed += result["status"] == "fail"
                judged = int(result["judged"])
            print(_row([g, case, delta, errors, judged, failed / reps]), flush=True)


def section_stability(reps: int) -> None:
    domains = 8
    tol = 0.02
    print(f"\n## Regression gate on FCH: false regressions and power, {domains} domains, tolerance {tol}, "
          f"{reps} replicates per row")
    print("false: the model against an independent second run of itself (answers re-drawn);")
    print("power: a real +5-point FCH rise (answers re-drawn, or 80% of answers kept).")
    print("domain: rate per domain; overall: the mean of domains; any: any of the 9 scopes regressed.")
    per_test = 1 - 2 * 0.05 / 26
    print(f"Intervals at a two-sided 0.95 (no correction) and {per_test:.5f}: what the gate uses with its "
          "default confidence 0.95 when FCH, PMH and RC are judged in 8 domains and overall (26 changes on the "
          "public split: math has no RC), one-sided Bonferroni: a regression when the lower bound passes the "
          "tolerance; 'any' counts FCH's 9 scopes only.")
    print(_row(["groups/d", "FCH", "rho", "case", "dom.95", "all.95", "any.95", "dom.gate", "all.gate", "any.gate"]))
    rng = np.random.default_rng(20240603)
    for g in (10, 30, 100):
        for mu, rho in ((0.3, 0.2), (0.3, 0.5), (0.1, 0.5)):
            for case, delta, r, stick in (("false", 0.0, 1.0, 0.0), ("power", 0.05, 1.0, 0.0),
                                          ("power.8", 0.05, 1.0, 0.8)):
                units = []
                for _ in range(domains):
                    old, new, _true = paired_runs(rng, reps, g, mu, rho, delta, r, stick)
                    units.append(units_of(old, new))
                cells: list[object] = [g, mu, rho, case]
                for confidence in (0.95, per_test):
                    per, overall = _gate_decisions(units, tol, confidence)
                    any_scope = per.any(axis=1) | overall
                    cells += [float(per.mean()), float(overall.mean()), float(any_scope.mean())]
                print(_row(cells), flush=True)


def section_gate(reps: int) -> None:
    print(f"\n## Level gate on one domain: point estimate vs interval, limit 0.33, {reps} replicates per row")
    print("fail rate of a model whose true FCH is 0.30 (limit - 0.03; a failure is false) and 0.36 (limit + 0.03)")
    print(_row(["groups", "rho", "true", "point", "interval"]))
    rng = np.random.default_rng(20240604)
    limit = 0.33
    for rho in (0.2, 0.5):
        for true in (limit - 0.03, limit + 0.03):
            for g in (10, 30, 100, 300):
                n = reps if g <= 100 else max(reps // 4, 500)
                y = beta_groups(rng, n, g, true, rho)
                point = y.sum(axis=1) / (K * g) > limit
                lo, _ = new_level(y)
                print(_row([g, rho, true, float(point.mean()), float((lo > limit).mean())]), flush=True)


SECTIONS: dict[str, Callable[[int], None]] = {
    "coverage": section_coverage,
    "rc": lambda reps: section_rc(),
    "paired": section_paired,
    "stability": section_stability,
    "gate": section_gate,
    "wholegate": section_wholegate,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=4000)
    parser.add_argument("--only", default=",".join(SECTIONS))
    args = parser.parse_args()
    print(f"t(0.975, 9) = {t_quantile(0.975, 9):.7f}; replicates {args.reps}")
    for name in args.only.split(","):
        start = time.perf_counter()
        SECTIONS[name](args.reps if name != "stability" else max(args.reps // 2, 200))
        print(f"({name}: {time.perf_counter() - start:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
