"""``--defan-sequential``: ask whole paraphrase groups in batches, in the seed's order, and stop
asking when the gates' verdicts are settled (:mod:`defan_pytest.gates.sequential`).

:class:`Asking` is the one place the run decides whether to keep asking. The call pool
consults it between batches (:meth:`Asking.first` before the first call, :meth:`Asking.next`
after each batch is answered): it scores the batch, gives its groups to the
:class:`~defan_pytest.gates.sequential.Judge` and returns the next batch, or nothing once the
verdict is settled or the sample is exhausted. It is a pure function of the answers, so every
xdist worker, each answering the whole batch through the cache, stops at the same batch.

Cached answers are free: the groups whose every prompt the cache holds are the first batch (all
of them, judged before any call is paid for), then the others in the seed's order. A batch takes about :data:`BATCH_SHARE` of each
domain's planned groups that a domain still needs (at least one group).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Dict, List, Optional, Set

from defan_pytest.gates.sequential import Judge, ScopeState

__all__ = ["BATCH_SHARE", "Asking", "not_asked_reason"]

#: A batch asks this share of each domain's planned groups (at least one group).
BATCH_SHARE = 0.05


def not_asked_reason(info: Mapping[str, Any]) -> str:
    """Why a prompt was not asked (a skipped test's reason)."""
    return (f"not asked: the verdict was settled after {int(info.get('asked', 0)):,} of "
            f"{int(info.get('total', 0)):,} prompts (--defan-sequential)")


class Asking:
    """The batches of a sequential run and the decision between them.

    ``rows``: the run's rows; ``order``: their group keys in the seed's order; ``judge``: the
    run's :class:`Judge`; ``records``: rows' scored records as plain JSON (their extra asks
    joined), read once their answers are in; ``cached``: the group keys whose every answer the
    cache holds (asked first, all together)."""

    def __init__(self, rows: Sequence[Any], order: Sequence[str], judge: Judge,
                 records: Callable[[Sequence[Any]], Sequence[Mapping[str, Any]]], cached: Optional[Set[str]] = None) -> None:
        self.judge = judge
        self.records = records
        self.by_group: Dict[str, List[Any]] = {}
        for row in rows:
            self.by_group.setdefault(row.group_key, []).append(row)
        # The seed's order, then any group it does not name (each once).
        ordered = list(dict.fromkeys([*(g for g in order if g in self.by_group), *self.by_group]))
        cached = cached or set()
        self.queues: Dict[str, List[str]] = {}
        self.free: List[str] = [g for g in ordered if g in cached]
        for g in ordered:
            if g not in cached:
                self.queues.setdefault(self.by_group[g][0].domain, []).append(g)
        self.step = {d: max(1, math.ceil(BATCH_SHARE * judge.planned.get(d, (len(q), 0))[0]))
                     for d, q in self.queues.items()}
        self.total = len(rows)
        self.asked: List[str] = []  # row ids, in the order asked
        self.asked_ids: Set[str] = set()
        self.pending: List[str] = []  # the groups of the batch in flight
        self.batches = 0
        self.states: Dict[str, ScopeState] = {}
        self.settled = False
        self.exhausted = False

    def _take(self, groups: List[str]) -> List[Any]:
        self.pending = groups
        self.batches += 1 if groups else 0
        rows = [r for g in groups for r in self.by_group[g]]
        self.asked.extend(r.id for r in rows)
        self.asked_ids.update(r.id for r in rows)
        return rows

    def first(self) -> List[Any]:
        """The first batch: every group the cache answers (free: judged before anything is
        paid for), else one step of every domain."""
        return self._take(list(self.free) if self.free else self._steps(list(self.queues)))

    def _steps(self, domains: Sequence[str]) -> List[str]:
        out: List[str] = []
        for d in domains:
            queue = self.queues.get(d, [])
            out.extend(queue[: self.step[d]])
            del queue[: self.step[d]]
        return out

    def next(self) -> List[Any]:
        """Judge the batch just answered; the next batch's rows, or ``[]`` to stop asking."""
        scored = {str(r.get("id")): r for r in self.records([r for g in self.pending for r in self.by_group[g]])}
        for g in self.pending:
            rows = self.by_group[g]
            self.judge.add_group(rows[0].domain, rows[0].type, [scored[r.id] for r in rows])
        self.pending = []
        self.states = self.judge.state()
        if self.judge.settled(self.states):
            self.settled = True
            return []
        wanted = [d for d in self.judge.wanted(self.states) if self.queues.get(d)]
        if not wanted:
            # A domain with nothing left here (a shard's share, a narrowed run) ends the asking.
            wanted = [d for d, q in self.queues.items() if q]
        if not wanted:
            self.exhausted = True
            return []
        return self._take(self._steps(wanted))

    def was_asked(self, row_id: str) -> bool:
        """Whether the row was asked (in a batch sent so far)."""
        return row_id in self.asked_ids

    def brief(self) -> Dict[str, Any]:
        """What a prompt not asked says (its skip's property): where the run stopped."""
        return {"asked": len(self.asked), "total": self.total, "batches": self.batches, "settled": self.settled}

    def info(self) -> Dict[str, Any]:
        """Where the run stopped, as the report's ``sequential`` block."""
        asked = len(self.asked)
        return {
            "asked": asked,
            "total": self.total,
            "batches": self.batches,
            "settled": self.settled,
            "stopped": "settled" if self.settled else "sample exhausted",
            "open": [s for s, v in self.states.items() if v.state == "open"],
            "scopes": {s: v.to_json() for s, v in self.states.items()},
            "level": {"regression": self.judge.alpha, "pass": self.judge.beta, "judged": self.judge.judged},
        }


def block(info: Mapping[str, Any], records: Sequence[Any], price: Any = None) -> Dict[str, Any]:
    """The report's ``meta.sequential``: where the run stopped (:meth:`Asking.info`) and what
    the prompts it did not ask would have cost, at the mean of those it asked (tokens, and
    dollars where the model is priced; ``None`` where no answer says)."""
    out = dict(info)
    saved = max(0, int(info.get("total") or 0) - int(info.get("asked") or 0))
    tokens = [(r.get("prompt_tokens"), r.get("completion_tokens")) for r in (_json(x) for x in records)]
    counted = [(p, c) for p, c in tokens if isinstance(p, int) and isinstance(c, int)]
    mean_tokens = sum(p + c for p, c in counted) / len(counted) if counted else None
    dollars = None
    if price is not None and counted:
        dollars = saved * sum(price.cost(p, c) for p, c in counted) / len(counted)
    out["saved"] = {
        "prompts": saved,
        "tokens": round(saved * mean_tokens) if mean_tokens is not None else None,
        "dollars": round(dollars, 4) if dollars is not None else None,
    }
    return out


def _json(record: Any) -> Mapping[str, Any]:
    found: Mapping[str, Any] = record.to_json() if hasattr(record, "to_json") else record
    return found
