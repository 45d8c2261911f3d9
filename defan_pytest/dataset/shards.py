"""Sharding a run across CI jobs: which paraphrase groups each shard runs.

``--defan-shard=I/N`` runs the I-th of N disjoint shares of the selected prompts (after
``--defan-domain`` and ``--defan-sample``), made of whole paraphrase groups (RC needs every
answer of a group in one report).  The share is a pure function of the selected rows: each
domain's group keys are put in natural order (``nobel-q0002`` before ``nobel-q0010``) and dealt
round-robin to the shards, each domain starting where the previous one stopped (domains in the
report's order).  So every shard gets the same number of groups give or take one, in every
domain and in all, the same selection always gives the same shards, and every xdist worker of a
shard computes the same share.

>>> rows = [{"domain": d, "group": f"{d}-q{g:04d}"} for d in ("nobel", "math") for g in range(3)]
>>> {k: v for k, v in sorted(assign(rows, 2).items())}
{'math-q0000': 1, 'math-q0001': 0, 'math-q0002': 1, 'nobel-q0000': 0, 'nobel-q0001': 1, 'nobel-q0002': 0}
>>> str(parse_shard("2/4")), parse_shard("2/4").index
('2/4', 2)

A shard's report says ``meta.selection.shard = "I/N"``, and its own level gate and regression
gate are skipped (it ran part of the selection); ``defan merge``
(:func:`defan_pytest.report.merge.combine`) joins the shards' reports into the run they make.
Nothing here imports pytest.
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Dict, List, Tuple

from defan_pytest.dataset.domains import DOMAINS
from defan_pytest.errors import DefanError

__all__ = ["Shard", "ShardError", "assign", "domain_key", "natural_key", "parse_shard", "select"]

_SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


class ShardError(DefanError):
    """A malformed ``--defan-shard``, or shard reports that are not one whole run."""


@dataclass(frozen=True)
class Shard:
    """The ``index``-th (1-based) of ``count`` shards."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str) -> Shard:
    """``"I/N"`` with ``1 <= I <= N``; raises :class:`ShardError` otherwise."""
    m = _SHARD.match(str(text))
    if not m:
        raise ShardError(f"{text!r} is not a shard; use I/N, e.g. 2/4 for the second of four shards")
    index, count = int(m.group(1)), int(m.group(2))
    if count < 1:
        raise ShardError(f"{text!r}: a run has at least 1 shard")
    if not 1 <= index <= count:
        raise ShardError(f"{text!r}: the shard number must be between 1 and {count}")
    return Shard(index, count)


def natural_key(text: str) -> Tuple[Tuple[int, Any], ...]:
    """Sort key reading runs of digits as numbers: ``q0002`` < ``q0010``, ``line9`` < ``line10``."""
    return tuple((0, int(t)) if t.isdigit() else (1, t) for t in re.split(r"(\d+)", str(text)) if t)


def domain_key(name: str) -> Tuple[int, int, str]:
    """Sort key of a domain as reports order them: the DefAn domains in their order, then the
    others by name."""
    order = tuple(DOMAINS)
    return (0, order.index(name), "") if name in order else (1, 0, name)


def _domain_group(row: Any) -> Tuple[str, str]:
    """(domain, group key) of a dataset row (``Row``) or a record/report row (a mapping)."""
    if isinstance(row, Mapping):
        return str(row["domain"]), str(row["group"])
    return str(row.domain), str(row.group_key)


def assign(rows: Sequence[Any], count: int) -> Dict[str, int]:
    """Group key -> 0-based shard of every group of ``rows`` (see the module docstring)."""
    by_domain: Dict[str, Dict[str, None]] = {}
    for row in rows:
        domain, group = _domain_group(row)
        by_domain.setdefault(domain, {})[group] = None
    out: Dict[str, int] = {}
    dealt = 0
    for domain in sorted(by_domain, key=domain_key):
        for key in sorted(by_domain[domain], key=natural_key):
            out[key] = dealt % count
            dealt += 1
    return out


def select(rows: Sequence[Any], shard: Shard) -> List[Any]:
    """The rows of ``shard``, in their order in ``rows``."""
    owner = assign(rows, shard.count)
    return [r for r in rows if owner[_domain_group(r)[1]] == shard.index - 1]

