"""From dataset rows to the prompts of a run: domain filter and stratified group sampling.

Sampling keeps whole paraphrase groups (RC needs all 15 answers of a question) and is
stratified by domain.  A sample is stated one of three ways (:func:`parse_sample`): a number
of prompts in all (``3000``, split across the domains in proportion to their size), a share of
each domain's groups (``10%``), or a number of groups per domain (``20g``).

A sample must let the gate judge every domain: given each domain's least number of groups
(``min_groups``, the thresholds' ``min_samples``), a count or a share gives every domain at
least that many groups (more prompts than asked, said in the header; so is a count that whole
groups, and at least one group of every domain, make more or fewer: :func:`floored`), and a per-domain count
below it is an error (:func:`too_small`) naming the domain and the smallest sample that works.

It is a pure function of the rows, the size and the seed, so every xdist worker selects the
same prompts; and the groups of a domain are taken in one seeded order, so a smaller sample of
the same seed is part of a larger one (a pull request's sample pairs with the baseline's).

``--defan-repeat`` (:func:`parse_repeat`, :func:`repeated`) picks the prompts a run asks more
than once to measure the model's own non-determinism: every selected prompt, or a stratified
sample of them taken the same way (whole groups, seeded).
"""
from __future__ import annotations

import math
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

from defan_pytest.dataset.domains import Row
from defan_pytest.errors import DefanError

__all__ = [
    "MAX_REPEAT", "Repeat", "Sample", "SampleError", "floored", "group_order", "parse_repeat", "parse_sample",
    "planned_groups", "repeated", "select", "too_small",
]

#: The most times ``--defan-repeat`` asks one prompt.
MAX_REPEAT = 20


class SampleError(DefanError):
    """A malformed sample size."""


@dataclass(frozen=True)
class Sample:
    """A sample size: ``count`` prompts, ``percent`` of each domain's groups, or ``groups``
    groups of each domain."""

    count: Optional[int] = None
    percent: Optional[float] = None
    groups: Optional[int] = None

    def __str__(self) -> str:
        if self.percent is not None:
            return f"{self.percent:g}%"
        if self.groups is not None:
            return f"{self.groups}g"
        return str(self.count)


_SAMPLE = re.compile(r"^\s*(?:(?P<n>\d+)|(?P<p>\d+(?:\.\d+)?)\s*%|(?P<g>\d+)\s*g)\s*$", re.IGNORECASE)


def parse_sample(text: str) -> Sample:
    """``"500"`` (prompts), ``"10%"`` (of each domain's paraphrase groups) or ``"20g"``
    (paraphrase groups of each domain)."""
    m = _SAMPLE.match(str(text))
    if not m:
        raise SampleError(
            f"{text!r} is not a sample size; use a number of prompts (e.g. 500), a percentage of each "
            "domain's paraphrase groups (e.g. 10%) or a number of groups per domain (e.g. 20g)"
        )
    if m.group("n") is not None:
        n = int(m.group("n"))
        if n <= 0:
            raise SampleError(f"{text!r}: a sample needs at least 1 prompt")
        return Sample(count=n)
    if m.group("g") is not None:
        g = int(m.group("g"))
        if g <= 0:
            raise SampleError(f"{text!r}: a sample needs at least 1 group per domain")
        return Sample(groups=g)
    p = float(m.group("p"))
    if not 0 < p <= 100:
        raise SampleError(f"{text!r}: a percentage must be in (0, 100]")
    return Sample(percent=p)


def _groups(rows: Sequence[Row]) -> Dict[str, Dict[str, List[Row]]]:
    by_domain: Dict[str, Dict[str, List[Row]]] = {}
    for r in rows:
        by_domain.setdefault(r.domain, {}).setdefault(r.group_key, []).append(r)
    return by_domain


def _asked(sample: Sample, n_groups: int, n_rows: int, total: int) -> int:
    """The groups ``sample`` asks of a domain of ``n_groups`` groups and ``n_rows`` rows, in a
    selection of ``total`` rows (before the floor of ``min_groups``)."""
    if sample.groups is not None:
        return sample.groups
    if sample.percent is not None:
        return math.ceil(n_groups * sample.percent / 100)
    assert sample.count is not None
    size = n_rows / n_groups  # rows per group in this domain (15, or 1 for math)
    return round(sample.count * n_rows / total / size)


def planned_groups(rows: Sequence[Row], sample: Optional[Sample],
                   min_groups: Optional[Mapping[str, int]] = None) -> Dict[str, int]:
    """How many groups of each domain the sample takes (every group without a sample).

    A count or a share gives each domain at least one group and at least its ``min_groups``
    (when the domain has that many); a per-domain count is taken as asked (see
    :func:`too_small`)."""
    by_domain = _groups(rows)
    total = len(rows)
    out: Dict[str, int] = {}
    for domain, groups in by_domain.items():
        n_groups = len(groups)
        if sample is None:
            out[domain] = n_groups
            continue
        k = _asked(sample, n_groups, sum(len(g) for g in groups.values()), total)
        if sample.groups is None:
            k = max(k, 1, int((min_groups or {}).get(domain, 0) or 0))
        out[domain] = max(1, min(n_groups, k))
    return out


def floored(rows: Sequence[Row], sample: Optional[Sample]) -> List[str]:
    """The domains a count of prompts gives one paraphrase group although their share of it
    rounds to none (every domain is sampled): more prompts than asked, which the header says."""
    if sample is None or sample.count is None:
        return []
    total = len(rows)
    return sorted(d for d, groups in _groups(rows).items()
                  if _asked(sample, len(groups), sum(len(g) for g in groups.values()), total) < 1)


def too_small(rows: Sequence[Row], sample: Optional[Sample], min_groups: Mapping[str, int]) -> List[str]:
    """Why ``sample`` cannot judge some domain of ``rows``: a per-domain count (``"3g"``)
    below a domain's ``min_groups`` while the domain has enough groups.  One message naming
    the domains and the smallest sample that judges them all; empty when it can."""
    if sample is None or sample.groups is None:
        return []
    by_domain = _groups(rows)
    short = {
        d: need for d, need in sorted(min_groups.items())
        if need and d in by_domain and sample.groups < need <= len(by_domain[d])
    }
    if not short:
        return []
    by_need: Dict[int, List[str]] = {}
    for d, need in short.items():
        by_need.setdefault(need, []).append(d)
    listed = "; ".join(f"{', '.join(ds)}: {need}" for need, ds in sorted(by_need.items()))
    return [
        f"--defan-sample={sample}: {sample.groups} paraphrase groups per domain are fewer than the gate "
        f"needs to judge a domain (min_samples of the thresholds: {listed}); the smallest sample that "
        f"judges every domain is --defan-sample={max(short.values())}g"
    ]


def select(rows: Sequence[Row], sample: Optional[Sample] = None, seed: int = 0,
           min_groups: Optional[Mapping[str, int]] = None) -> List[Row]:
    """The rows of a run, in dataset order.

    ``sample.count``: about that many prompts in all, split across domains in proportion to
    their size and rounded to whole groups; ``sample.percent``: that share of each domain's
    groups; ``sample.groups``: that many groups of each domain.  Every domain gets at least one
    group and, for a count or a share, at least its ``min_groups`` (:func:`planned_groups`).
    Each domain's groups are put in one order by a generator seeded by ``seed`` and the domain
    id, and the sample takes the first of them: adding a domain does not reshuffle the others,
    and a smaller sample of one seed is part of every larger one.
    """
    if sample is None:
        return list(rows)
    planned = planned_groups(rows, sample, min_groups)
    keep: set = set()
    for domain, order in group_order(rows, seed).items():
        keep.update(order[: planned[domain]])
    return [r for r in rows if r.group_key in keep]


def group_order(rows: Sequence[Row], seed: int = 0) -> Dict[str, List[str]]:
    """Each domain's paraphrase groups (their keys) in the seed's order: :func:`select` takes a
    prefix of it, and so does ``--defan-sequential``, which asks the groups in this order (a
    run that stopped early asked what a smaller sample of the same seed asks)."""
    out: Dict[str, List[str]] = {}
    for domain, groups in _groups(rows).items():
        order = list(groups)
        random.Random(f"defan-sample:{seed}:{domain}").shuffle(order)
        out[domain] = order
    return out


@dataclass(frozen=True)
class Repeat:
    """``--defan-repeat``: ask ``times`` times every selected prompt (``prompts`` is ``None``) or
    a stratified sample of about ``prompts`` of them."""

    times: int
    prompts: Optional[int] = None

    def __str__(self) -> str:
        return f"{self.times}" if self.prompts is None else f"{self.times}:{self.prompts}"


_REPEAT = re.compile(r"^\s*(?P<k>\d+)\s*(?::\s*(?P<n>\d+)\s*)?$")


def parse_repeat(text: str) -> Repeat:
    """``"3"`` (every selected prompt asked 3 times) or ``"3:200"`` (a sample of about 200
    prompts, whole paraphrase groups, asked 3 times each).

    >>> parse_repeat("3"), str(parse_repeat(" 5:200 "))
    (Repeat(times=3, prompts=None), '5:200')
    """
    m = _REPEAT.match(str(text))
    times = int(m.group("k")) if m else 0
    prompts = int(m.group("n")) if m and m.group("n") is not None else None
    if not m or not 2 <= times <= MAX_REPEAT or prompts == 0:
        raise SampleError(
            f"{text!r} is not a repeat; use K (every selected prompt asked K times) or K:N (a sample of about N "
            f"prompts, whole paraphrase groups, asked K times), with K from 2 to {MAX_REPEAT} and N at least 1, "
            "e.g. 3 or 3:200"
        )
    return Repeat(times, prompts)


def repeated(rows: Sequence[Row], repeat: Optional[Repeat], seed: int = 0) -> List[Row]:
    """The rows ``repeat`` asks again (in their order): all of them, or a stratified sample of
    about ``repeat.prompts`` (:func:`select` with the run's ``seed``: whole groups, every domain
    at least one, the same in every xdist worker)."""
    if repeat is None:
        return []
    if repeat.prompts is None or repeat.prompts >= len(rows):
        return list(rows)
    return select(rows, Sample(count=repeat.prompts), seed=seed)

