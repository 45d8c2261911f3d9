"""Whether a change is more than the model's own noise: the regression gate's test against no
change, and the smallest change a run can catch.

Two runs of the same prompts differ only where an answer *flipped*. The question the regression
gate asks first is whether the flips show a change at all, or only the noise of an application
asked twice: its null hypothesis is that nothing changed, every call drawing its answer from the
same distribution as before (a sampled model, a server whose batching changes the arithmetic, a
deterministic pipeline). Under it a prompt's change between the runs (its value now minus before,
worse-signed: ``+1`` for a right answer turned wrong, ``-1`` back, a share with ``--defan-repeat``)
is as likely one way as the other, and the paraphrase groups are independent.

The net change ``S`` (the sum of the changes) is compared with its variance under no change,
summed over the paraphrase groups (:class:`GroupChange`):

- **measured** (:attr:`GroupChange.measured`), when a run asked the group's prompts more than
  once (``--defan-repeat``): the spread of the group's sum between the asks of one run, which
  counts noise that turns a whole question at once as the one piece of evidence it is;
- otherwise, with ``noise="answer"`` (the default: each call its own draw), the sum of the
  prompts' squared changes (McNemar's: a discordant answer is one piece of evidence, and
  right-to-wrong is as likely as back);
- with ``noise="question"`` (an application whose randomness is shared by the paraphrases of a
  question, such as a cache keyed by meaning), the group's squared net change: the paraphrase
  group is the unit, fifteen flips of one question one piece of evidence.

The one-sided p-value is exact where it can be: McNemar's exact (sign) test when every unit is
one discordant answer, the exact sign-flip distribution over the groups' net changes in
``"question"`` mode at small samples; otherwise the normal approximation (the sum of many
independent symmetric units). A measured variance of 0 (an application that answered every
repeat the same) makes any net worsening significant: nothing else could have caused it.

:func:`catchable_rise` is the power calculation of the same test: the smallest even rise of a
figure a run of this size and noise catches with the given power at the gate's level.

No SciPy: the tails come from :mod:`defan_pytest.stats.distributions`.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from statistics import NormalDist
from typing import Any

from defan_pytest.stats.distributions import binomial_half_upper, normal_quantile, t_quantile, t_sf
from defan_pytest.stats.intervals import welch_df

__all__ = ["NOISES", "GroupChange", "NoiseTest", "PowerPart", "against_noise", "catchable_rise", "combine"]

#: What the noise of an application asked twice is made of when no repeat measured it: each
#: answer its own draw (``"answer"``), or a question's paraphrases together (``"question"``).
NOISES = ("answer", "question")

_NORMAL = NormalDist()

# The exact sign-flip distribution is computed while (units x lattice size) stays under this.
_EXACT_WORK = 3_000_000


@dataclass(frozen=True)
class GroupChange:
    """One paraphrase group's paired changes, worse-signed (``+1``: worse by one whole answer),
    and ``measured``: the variance of their sum under no change, as the runs' repeats measured
    it (``None``: no run asked the group more than once), estimated on ``df`` degrees of freedom."""

    diffs: tuple[Any, ...]
    measured: float | None = None
    #: The degrees of freedom of ``measured`` (the rounds of repeats less one, each run).
    df: float = math.inf


@dataclass(frozen=True)
class NoiseTest:
    """The test of one scope's change against no change.

    ``net``: the net worsening (sum of the worse-signed changes, in answers; in the figure's
    units for a combination of scopes, :func:`combine`); ``variance``: its
    variance under no change; ``p_value``: one-sided, of a worsening at least this large;
    ``method``: ``"sign test"`` (McNemar's exact), ``"sign-flip"`` (exact over groups),
    ``"t"`` (a variance measured by repeats, on its degrees of freedom) or ``"normal"``; ``noise``: where the variance came from (``"answers"``, ``"questions"``,
    ``"repeats"``, or a mix such as ``"repeats and answers"``); ``pairs``: the pairs counted.
    """

    net: float
    variance: float
    p_value: float
    method: str
    noise: str
    pairs: int

    def to_json(self) -> dict[str, object]:
        """Plain JSON."""
        return {"net": self.net, "variance": self.variance, "p_value": self.p_value, "method": self.method,
                "noise": self.noise, "pairs": self.pairs}


def _normal_p(net: float, variance: float) -> float:
    if variance <= 0.0:
        return 0.0 if net > 0.0 else 1.0
    return 1.0 - _NORMAL.cdf(net / math.sqrt(variance))


def _lcm(values: Iterable[int]) -> int:
    out = 1
    for v in values:
        out = out * v // math.gcd(out, v)
    return out


def _sign_flip_p(units: Sequence[Any], net: Any) -> float | None:
    """``P(sum e_j |u_j| >= net)`` with independent fair signs ``e_j``: exact, or ``None`` when
    the lattice is too large to walk (the caller then uses the normal approximation)."""
    scale = _lcm(Fraction(u).denominator for u in units)
    sizes = [int(abs(u) * scale) for u in units if u != 0]
    total = sum(sizes)
    if not sizes:
        return 1.0 if net > 0 else 1.0
    if len(sizes) * (2 * total + 1) > _EXACT_WORK:
        return None
    # Counts of each sum over the 2^n sign patterns (integers: exact).
    counts = [0] * (2 * total + 1)
    counts[total] = 1
    reach = 0
    for a in sizes:
        nxt = [0] * (2 * total + 1)
        for s in range(total - reach, total + reach + 1):
            c = counts[s]
            if c:
                nxt[s + a] += c
                nxt[s - a] += c
        counts = nxt
        reach += a
    observed = int(net * scale)
    tail = sum(counts[total + observed:]) if observed <= total else 0
    share: float = tail / 2 ** len(sizes)
    return min(1.0, share)


def against_noise(groups: Iterable[GroupChange], noise: str = "answer") -> NoiseTest | None:
    """The test of the groups' net change against no change (see the module docstring), or
    ``None`` when there is no pair."""
    if noise not in NOISES:
        raise ValueError(f"noise must be one of {', '.join(NOISES)}, got {noise!r}")
    net: Any = 0
    variance = 0.0
    measured_parts: list[tuple[float, float]] = []
    squares = 0.0  # the measured groups' own squared changes
    units: list[Any] = []
    pairs = 0
    sources: set[str] = set()
    for group in groups:
        if not group.diffs:
            continue
        pairs += len(group.diffs)
        total = sum(group.diffs)
        net += total
        if group.measured is not None:
            if not (math.isfinite(group.measured) and group.measured >= 0.0):
                raise ValueError(f"a measured variance must be a number >= 0, got {group.measured!r}")
            variance += group.measured
            measured_parts.append((group.measured, group.df))
            squares += float(sum(d * d for d in group.diffs))
            sources.add("repeats")
        elif noise == "question":
            variance += float(total * total)
            units.append(total)
            sources.add("questions")
        else:
            variance += float(sum(d * d for d in group.diffs))
            units.extend(d for d in group.diffs if d != 0)
            sources.add("answers")
    if pairs == 0:
        return None
    source = " and ".join(sorted(sources, key=("repeats", "answers", "questions").index))
    method, p_value = "normal", None
    if "repeats" not in sources:
        if noise == "answer" and all(abs(u) == 1 for u in units):
            method = "sign test"
            p_value = binomial_half_upper(sum(1 for u in units if u > 0), len(units))
        else:
            found = _sign_flip_p(units, net)
            if found is not None:
                method, p_value = "sign-flip", found
    if p_value is None:
        if measured_parts:
            # A variance measured from a few rounds a group is itself uncertain (three rounds of
            # a group that agree by chance measure none): Student's t on its Welch-Satterthwaite
            # degrees of freedom, and never below the changes' own squares (each unbiased under
            # no change; the larger protects the test where the rounds happened to agree).
            measured = sum(v for v, _ in measured_parts)
            if squares > measured:
                variance += squares - measured
                df = math.inf
            else:
                df = welch_df([v for v, _ in measured_parts] + [max(0.0, variance - measured)],
                              [d for _, d in measured_parts] + [math.inf])
            method = "t" if math.isfinite(df) else "normal"
            p_value = t_sf(float(net) / math.sqrt(variance), df) if variance > 0.0 else _normal_p(float(net), 0.0)
        else:
            p_value = _normal_p(float(net), variance)
    return NoiseTest(float(net), variance, p_value, method, source, pairs)


def combine(parts: Sequence[tuple[float, NoiseTest]]) -> NoiseTest | None:
    """The test of a weighted sum of independent scopes' changes (the overall figure as the
    mean of domains: each domain's net change weighted ``1 / (D * pairs)``): the weighted net
    (in the figure's units, not answers), the variances added with squared weights, a normal
    tail. One part is that part's own test."""
    kept = [(w, t) for w, t in parts if t.pairs > 0]
    if not kept:
        return None
    if len(kept) == 1:
        return kept[0][1]
    net = sum(w * t.net for w, t in kept)
    variance = sum(w * w * t.variance for w, t in kept)
    sources: list[str] = []
    for _, t in kept:
        for s in t.noise.split(" and "):
            if s not in sources:
                sources.append(s)
    source = " and ".join(sorted(sources, key=("repeats", "answers", "questions").index))
    return NoiseTest(net, variance, _normal_p(net, variance), "normal", source, sum(t.pairs for _, t in kept))


@dataclass(frozen=True)
class PowerPart:
    """What :func:`catchable_rise` needs of one part of a scope: its ``weight`` in the figure
    (``1 / pairs`` for a domain, ``1 / (D * pairs)`` for a domain in the overall mean), its
    ``pairs``, the noise variance of one pair's change under no change, and ``room``: how far
    the figure can move the worse way (the share of pairs not yet at the worst value)."""

    weight: float
    pairs: int
    noise: float
    room: float = 1.0
    #: The degrees of freedom of ``noise`` when repeats measured it (``math.inf``: known).
    df: float = math.inf


def catchable_rise(parts: Sequence[PowerPart], level: float, tolerance: float, power: float = 0.8,
                   measured: bool = False) -> float | None:
    """The smallest even worsening (a share of the pairs, each turning the worse way with the
    same chance) that the test catches with probability ``power``: significant at the one-sided
    ``level`` and past ``tolerance``. ``measured``: the noise was measured by repeats, so the
    test is Student's t on the parts' degrees of freedom (Welch-Satterthwaite); as in
    :func:`against_noise`, its variance is never below the flips' own. ``None`` when no
    worsening the figure can make is caught that often (too few pairs)."""
    if not parts or not 0.0 < level < 1.0 or not 0.0 < power < 1.0:
        return None
    df = math.inf
    if measured:
        df = welch_df([p.weight ** 2 * p.pairs * p.noise for p in parts if p.pairs > 0],
                      [p.df for p in parts if p.pairs > 0])
    z_level = t_quantile(1.0 - level, df) if math.isfinite(df) else normal_quantile(1.0 - level)
    z_power = normal_quantile(power)

    def caught(delta: float) -> bool:
        sd2 = 0.0
        test2 = 0.0
        for p in parts:
            if p.pairs <= 0:
                continue
            # A share ``delta`` of all pairs flips the worse way, each of the ``room`` that can
            # with the same chance: the flips' variance n * delta * (1 - delta / room).
            share = min(delta, p.room)
            spread = share * (1.0 - share / p.room) if p.room > 0.0 else 0.0
            sd2 += p.weight ** 2 * p.pairs * (p.noise + spread)
            test2 += p.weight ** 2 * p.pairs * (p.noise + share)
        threshold = max(tolerance, z_level * math.sqrt(test2))
        if sd2 <= 0.0:
            return delta > threshold
        return delta - threshold >= z_power * math.sqrt(sd2)

    top = min((p.room for p in parts if p.pairs > 0), default=0.0)
    if top <= 0.0 or not caught(top):
        return None
    lo, hi = 0.0, top
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        if caught(mid):
            hi = mid
        else:
            lo = mid
    return hi
