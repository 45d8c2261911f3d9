"""Per-domain and overall DefAn figures with group-level 95% intervals.

The figures follow ``SCORING.md`` ("Per domain"):

- **FCH** = responses not correct / responses scored,
- **PMH** = responses not aligned / responses scored,
- **RC** = consistent paraphrase groups / groups of more than one response with every response
  scored (``None`` for a domain without such groups, e.g. ``math``, whose groups are singletons),
- **error rate** = errored responses / responses asked.

An errored response (``error`` set: the model call failed) is never a hallucination: it is left
out of the FCH and PMH numerators *and* denominators and only counts towards the error rate.
A scored response whose ``correct`` (``aligned``) is ``None`` counts as not correct (not
aligned): "no claim is never correct", and an unknown alignment must not flatter a model.

Why the intervals look the way they do
--------------------------------------

DefAn asks every question fifteen ways. Those fifteen responses are not independent draws: a
model that does not know an answer tends to get all paraphrases wrong together. A binomial
interval over responses would therefore pretend to have fifteen times the information it has
and come out far too narrow. The honest unit is the paraphrase group, so every rate is treated
as a ratio estimator over clusters:

    p = sum_g y_g / sum_g n_g        (y_g: events in group g, n_g: responses counted in g)

and its variance is the cluster-robust (linearization, "sandwich") variance with the usual
small-sample factor G/(G-1):

    V = G/(G-1) * sum_g (y_g - p*n_g)^2 / (sum_g n_g)^2

That variance is turned into an *effective sample size* n_eff = p(1-p)/V, capped to the number
of responses n (clustering can only lose information), and the interval is the Wilson score
interval at n_eff. Wilson rather than Wald because rates near 0 or 1 are common here (a strong
model's FCH on an easy domain) and Wald collapses to a zero-width interval there. When V is
exactly 0 (every group has the same rate, in particular p = 0 or p = 1) the variance says
nothing, and we fall back to n_eff = G, the number of groups: the interval then treats each group
as a single observation, which is conservative. With a single group (G = 1) nothing can be
estimated across groups, so n_eff = 1. (For G >= 2 one can show n_eff >= 2(G-1)/G >= 1, so no
floor is needed.) V is computed from integers, so "exactly 0" is exact, not a float accident.

RC is already a per-group figure, so its interval is a plain Wilson interval over the groups that
count for RC. The error rate uses the same cluster-robust interval as FCH and PMH, over all groups
(errors cluster too: a provider outage takes out a run of calls).

Everything is deterministic (no bootstrap), so the same records always give the same report.
Intervals are ``[lo, hi]`` rounded to 4 decimals; point estimates are exact ratios.

Overall figures
---------------

``overall["mean"]`` is the unweighted mean of the domain figures, as the paper reports it (RC over
the domains that have RC). Its interval treats domains as independent: each domain interval is
read as approximate standard errors on each side, ``(p_d - lo_d) / 1.96`` below and
``(hi_d - p_d) / 1.96`` above (Wilson intervals are asymmetric near 0 and 1), and the mean's
lower and upper half-widths are ``1.96 * sqrt(sum se_d^2) / D`` from those, clipped to [0, 1];
with one domain this is that domain's own interval. ``overall["pooled"]`` computes the same
figures over all records together, with all groups as clusters. The two differ when domains
differ in size: the pooled figure is dominated by the big domains, the mean is not.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from defan_pytest.dataset import DOMAINS

__all__ = [
    "DOMAIN_ORDER",
    "Z",
    "cluster_interval",
    "summarize",
    "wilson_interval",
]

#: Two-sided 95% normal quantile (the rounded value the overall-mean formula is written with).
Z = 1.96

#: DefAn domain ids in registry (file) order; the report lists domains in this order, then any
#: other (user) domain alphabetically.
DOMAIN_ORDER: tuple[str, ...] = tuple(DOMAINS)

_RATES = ("fch", "pmh", "rc", "error_rate")


def wilson_interval(p: float, n: float, z: float = Z) -> tuple[float, float]:
    """Wilson score interval for a proportion ``p`` observed on (effective) sample size ``n``.

    ``n`` may be fractional (an effective sample size). Returns unrounded ``(lo, hi)`` clipped
    to [0, 1]. ``n`` must be positive.
    """
    if n <= 0:
        raise ValueError(f"wilson_interval needs n > 0, got {n!r}")
    z2 = z * z
    denom = 1.0 + z2 / n
    center = (p + z2 / (2.0 * n)) / denom
    half = (z / denom) * math.sqrt(max(p * (1.0 - p) / n + z2 / (4.0 * n * n), 0.0))
    return max(0.0, center - half), min(1.0, center + half)


def cluster_interval(units: Sequence[tuple[int, int]], z: float = Z) -> tuple[float, float] | None:
    """95% interval for ``sum(y) / sum(n)`` over clusters ``units = [(y_g, n_g), ...]``.

    Cluster-robust ratio-estimator variance, effective sample size, Wilson interval: see the
    module docstring. Clusters with ``n_g == 0`` carry no information and are ignored (they would
    otherwise inflate G). Returns ``None`` when no response is counted at all.
    """
    units = [(int(y), int(n)) for y, n in units if n > 0]
    total = sum(n for _, n in units)
    if total == 0:
        return None
    events = sum(y for y, _ in units)
    p = events / total
    g = len(units)
    if g == 1:
        n_eff: float = 1.0
    else:
        # (y_g - p*n_g) * N = y_g*N - Y*n_g is an integer, so S == 0 is an exact test.
        s = sum((y * total - events * n) ** 2 for y, n in units)
        if s == 0 or events in (0, total):
            n_eff = float(g)
        else:
            # n_eff = p(1-p)/V with V = G/(G-1) * S / N^4, simplified to stay in integers.
            n_eff = events * (total - events) * total * total * (g - 1) / (g * s)
            n_eff = min(n_eff, float(total))
    return wilson_interval(p, n_eff, z)


@dataclass
class _Group:
    """Running counts for one paraphrase group."""

    domain: str
    type: str
    size: int = 0
    errors: int = 0
    not_correct: int = 0
    not_aligned: int = 0
    claims: list[str | None] = field(default_factory=list)
    consistent: bool | None = None

    @property
    def scored(self) -> int:
        return self.size - self.errors

    @property
    def counts_for_rc(self) -> bool:
        return self.size > 1 and self.errors == 0


def _is_error(rec: Mapping[str, Any]) -> bool:
    # An empty string is what CSV/JSONL converters write for "no error"; only a message counts.
    return bool(rec.get("error"))


def _collect(records: Iterable[Mapping[str, Any]]) -> dict[tuple[str, Any], _Group]:
    groups: dict[tuple[str, Any], _Group] = {}
    for index, rec in enumerate(records):
        domain = rec.get("domain")
        if not isinstance(domain, str) or not domain:
            raise ValueError(f"record {index} has no domain: {dict(rec)!r}")
        key = rec.get("group")
        if key is None:
            # No group key: the record is its own group (never merged with another).
            key = ("__row__", index)
        # Keyed by domain too: group keys are meant to be unique across domains, but a user set
        # that reuses "q1" in two domains must not merge two different questions.
        gkey = (domain, key)
        grp = groups.get(gkey)
        if grp is None:
            grp = groups[gkey] = _Group(domain=domain, type=str(rec.get("type") or ""))
        grp.size += 1
        if _is_error(rec):
            grp.errors += 1
            grp.claims.append(None)
            continue
        if rec.get("correct") is not True:
            grp.not_correct += 1
        if rec.get("aligned") is not True:
            grp.not_aligned += 1
        grp.claims.append(rec.get("claim"))
    return groups


def _ci(interval: tuple[float, float] | None) -> list[float] | None:
    if interval is None:
        return None
    return [round(interval[0], 4), round(interval[1], 4)]


def _figures(groups: Sequence[_Group]) -> tuple[dict[str, Any], dict[str, tuple[float, float] | None]]:
    """Figures for a set of groups, plus the unrounded intervals (for the overall mean)."""
    n = sum(g.size for g in groups)
    errors = sum(g.errors for g in groups)
    scored = n - errors
    fch_count = sum(g.not_correct for g in groups)
    pmh_count = sum(g.not_aligned for g in groups)
    rc_groups = [g for g in groups if g.counts_for_rc]
    consistent = sum(1 for g in rc_groups if g.consistent)

    raw: dict[str, tuple[float, float] | None] = {
        "fch": cluster_interval([(g.not_correct, g.scored) for g in groups]),
        "pmh": cluster_interval([(g.not_aligned, g.scored) for g in groups]),
        "rc": wilson_interval(consistent / len(rc_groups), len(rc_groups)) if rc_groups else None,
        "error_rate": cluster_interval([(g.errors, g.size) for g in groups]),
    }
    out: dict[str, Any] = {
        "n": n,
        "scored": scored,
        "errors": errors,
        "groups": len(groups),
        "rc_groups": len(rc_groups),
        "consistent_groups": consistent,
        "fch_count": fch_count,
        "pmh_count": pmh_count,
        "fch": fch_count / scored if scored else None,
        "fch_ci": _ci(raw["fch"]),
        "pmh": pmh_count / scored if scored else None,
        "pmh_ci": _ci(raw["pmh"]),
        "rc": consistent / len(rc_groups) if rc_groups else None,
        "rc_ci": _ci(raw["rc"]),
        "error_rate": errors / n if n else None,
        "error_rate_ci": _ci(raw["error_rate"]),
    }
    return out, raw


def _domain_sort_key(name: str) -> tuple[int, int, str]:
    try:
        return (0, DOMAIN_ORDER.index(name), "")
    except ValueError:
        return (1, 0, name)


def _mean(
    per_domain: Sequence[tuple[dict[str, Any], dict[str, tuple[float, float] | None]]],
    totals: Mapping[str, Any],
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "domains": len(per_domain),
        "rc_domains": sum(1 for figs, _ in per_domain if figs["rc"] is not None),
        "n": totals["n"],
        "scored": totals["scored"],
        "errors": totals["errors"],
        "groups": totals["groups"],
    }
    for rate in _RATES:
        # A domain without the figure (no scored response; no RC groups) has nothing to average.
        present = [
            (figs[rate], raw[rate]) for figs, raw in per_domain
            if figs[rate] is not None and raw[rate] is not None
        ]
        if not present:
            out[rate] = None
            out[f"{rate}_ci"] = None
            continue
        d = len(present)
        mean = sum(value for value, _ in present) / d
        # Each side of a domain interval read as 1.96 SE on that side (Wilson intervals are
        # asymmetric near 0 and 1); independent domains add variances.  With one domain this
        # gives back that domain's own interval.
        below = Z * math.sqrt(sum(((value - lo) / Z) ** 2 for value, (lo, _) in present)) / d
        above = Z * math.sqrt(sum(((hi - value) / Z) ** 2 for value, (_, hi) in present)) / d
        out[rate] = mean
        out[f"{rate}_ci"] = _ci((max(0.0, mean - below), min(1.0, mean + above)))
    return out


def summarize(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Summarize per-response records into per-domain and overall figures.

    Each record is a plain dict with ``id``, ``domain``, ``group`` (the paraphrase-group key,
    unique across domains), ``type``, ``claim``, ``aligned``, ``correct`` and ``error``.

    Returns ``{"domains": {domain: figures}, "overall": {"mean": ..., "pooled": ...}}``. Domain
    figures: ``n``, ``scored``, ``errors``, ``groups``, ``rc_groups``, ``consistent_groups``,
    ``fch_count``, ``pmh_count``, ``fch``, ``pmh``, ``rc``, ``error_rate`` and a ``<rate>_ci``
    ``[lo, hi]`` (95%, 4 decimals) for each rate; a rate that cannot be computed is ``None``
    together with its interval. ``pooled`` has the same keys over all records; ``mean`` has
    ``domains``, ``rc_domains``, the total counts ``n``/``scored``/``errors``/``groups`` and the
    mean of each rate with its interval. Domains are ordered as in :data:`DOMAIN_ORDER`, then
    other names alphabetically. See the module docstring for the interval method.
    """
    groups = _collect(records)

    rc_candidates = [g for g in groups.values() if g.counts_for_rc]
    if rc_candidates:
        # Imported here so that summarizing data without paraphrase groups never needs it.
        from defan_pytest.equivalence import group_consistent

        for grp in rc_candidates:
            grp.consistent = bool(group_consistent(grp.type, grp.claims))

    by_domain: dict[str, list[_Group]] = {}
    for grp in groups.values():
        by_domain.setdefault(grp.domain, []).append(grp)

    per_domain: list[tuple[dict[str, Any], dict[str, tuple[float, float] | None]]] = []
    domains: dict[str, dict[str, Any]] = {}
    for name in sorted(by_domain, key=_domain_sort_key):
        figs, raw = _figures(by_domain[name])
        domains[name] = figs
        per_domain.append((figs, raw))

    pooled, _ = _figures(list(groups.values()))
    return {
        "domains": domains,
        "overall": {"mean": _mean(per_domain, pooled), "pooled": pooled},
    }
