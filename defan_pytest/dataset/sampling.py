"""From dataset rows to the prompts of a run: domain filter and stratified group sampling.

Sampling keeps whole paraphrase groups (RC needs all 15 answers of a question) and is
stratified by domain: each domain contributes its share of the requested size.  It is a pure
function of the rows, the size and the seed, so every xdist worker selects the same prompts.
"""
from __future__ import annotations

import math
import random
import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

from defan_pytest.dataset.domains import Row
from defan_pytest.errors import DefanError


class SampleError(DefanError):
    """A malformed sample size."""


@dataclass(frozen=True)
class Sample:
    """A sample size: ``count`` prompts, or ``percent`` of each domain's groups."""

    count: Optional[int] = None
    percent: Optional[float] = None

    def __str__(self) -> str:
        return f"{self.percent:g}%" if self.percent is not None else str(self.count)


_SAMPLE = re.compile(r"^\s*(?:(?P<n>\d+)|(?P<p>\d+(?:\.\d+)?)\s*%)\s*$")


def parse_sample(text: str) -> Sample:
    """``"500"`` (prompts) or ``"10%"`` (of each domain's paraphrase groups)."""
    m = _SAMPLE.match(str(text))
    if not m:
        raise SampleError(
            f"{text!r} is not a sample size; use a number of prompts (e.g. 500) or a percentage (e.g. 10%)"
        )
    if m.group("n") is not None:
        n = int(m.group("n"))
        if n <= 0:
            raise SampleError(f"{text!r}: a sample needs at least 1 prompt")
        return Sample(count=n)
    p = float(m.group("p"))
    if not 0 < p <= 100:
        raise SampleError(f"{text!r}: a percentage must be in (0, 100]")
    return Sample(percent=p)


def _groups(rows: Sequence[Row]) -> Dict[str, Dict[str, List[Row]]]:
    by_domain: Dict[str, Dict[str, List[Row]]] = {}
    for r in rows:
        by_domain.setdefault(r.domain, {}).setdefault(r.group_key, []).append(r)
    return by_domain


def select(rows: Sequence[Row], sample: Optional[Sample] = None, seed: int = 0) -> List[Row]:
    """The rows of a run, in dataset order.

    ``sample.count``: about that many prompts in all, split across domains in proportion to
    their size and rounded to whole groups (at least one group per domain).  ``sample.percent``:
    that share of each domain's groups (at least one).  Groups are drawn with a generator seeded
    by ``seed`` and the domain id, so adding a domain does not reshuffle the others.
    """
    if sample is None:
        return list(rows)
    by_domain = _groups(rows)
    total = len(rows)
    keep: set = set()
    for domain, groups in by_domain.items():
        keys = list(groups)
        n_rows = sum(len(g) for g in groups.values())
        if sample.percent is not None:
            k = math.ceil(len(keys) * sample.percent / 100)
        else:
            assert sample.count is not None
            want = sample.count * n_rows / total
            size = n_rows / len(keys)  # rows per group in this domain (15, or 1 for math)
            k = round(want / size)
        k = max(1, min(len(keys), k))
        rng = random.Random(f"defan-sample:{seed}:{domain}")
        keep.update(rng.sample(keys, k))
    return [r for r in rows if r.group_key in keep]
