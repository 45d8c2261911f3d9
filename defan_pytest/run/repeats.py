"""``--defan-repeat`` in a run: the extra asks of the repeated prompts, their answers scored on the
process that runs the prompt's item, and the figures on the controller.

The extra asks are prompts of the run's one pool like any (:func:`asks`): the same caller,
retries, budget and cache, each repeat keyed apart (:attr:`defan_pytest.calls.protocol.Prompt.stored`),
so an xdist worker asks each once and a resumed run reads them back.  An item scores its
prompt's repeats (:func:`scored`) and sends them to the controller as plain JSON on its report
(the ``defan_repeats`` user property), which joins them with the run's own records
(:func:`figures`, :func:`defan_pytest.metrics.repeats.agreement`), so that a serial run and
``-n 2`` state the same figures.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Callable, Dict, List, Optional

from defan_pytest.calls.prices import Price
from defan_pytest.calls.protocol import Prompt, Response
from defan_pytest.dataset.sampling import Repeat
from defan_pytest.metrics.repeats import agreement
from defan_pytest.records import ScoredRecord

__all__ = ["asks", "figures", "joined", "key_of", "priced", "scored", "temperature_of", "usage_records"]


def key_of(row_id: str, repeat: int) -> str:
    """The pool's key of a prompt's ``repeat``-th ask (the row id itself for the run's own)."""
    return row_id if repeat == 0 else f"{row_id}#repeat{repeat}"


def asks(rows: Sequence[Any], repeated: Collection[str], repeat: Optional[Repeat]) -> List[Prompt]:
    """Every ask of a run: each row's own, then the extra asks of the ``repeated`` rows
    (``repeat.times - 1`` each, the second ask of all of them before the third)."""
    out = [Prompt(r.id, r.question) for r in rows]
    if repeat is None or not repeated:
        return out
    wanted = set(repeated)
    again = [r for r in rows if r.id in wanted]
    for i in range(1, repeat.times):
        out.extend(Prompt(key_of(r.id, i), r.question, repeat=i) for r in again)
    return out


def scored(row: Any, times: int, result: Callable[[str], Response], score: Callable[[Any, Response], Any]) -> List[Dict[str, Any]]:
    """The extra asks of ``row`` as plain JSON: each one's answer (``result`` of its key), its
    score (``score(row, response)``: a :class:`~defan_pytest.scoring.scorer.Score`) and usage."""
    out = []
    for i in range(1, times):
        response = result(key_of(row.id, i))
        s = score(row, response)
        out.append({
            "repeat": i, "response": response.text, "error": s.error, "claim": s.claim, "correct": s.correct,
            "aligned": s.aligned, "answered_by": response.answered_by, "prompt_tokens": response.prompt_tokens,
            "completion_tokens": response.completion_tokens, "latency": response.latency,
        })
    return out


def figures(records: Sequence[Mapping[str, Any]], repeats: Mapping[str, Sequence[Mapping[str, Any]]], times: int,
            temperature: Optional[float] = None, reduce: str = "mean") -> Dict[str, Any]:
    """The agreement of the repeated prompts that ran (the record and its extra asks each), and
    ``reduce``: how their answers made their verdicts."""
    found = agreement(
        ((str(r.get("domain")), [r, *repeats[str(r.get("id"))]]) for r in records if str(r.get("id")) in repeats),
        times, temperature,
    )
    found["reduce"] = reduce
    return found


def joined(records: Sequence[ScoredRecord], repeats: Mapping[str, Sequence[Mapping[str, Any]]]) -> List[ScoredRecord]:
    """The records with their prompts' extra asks (:attr:`ScoredRecord.repeats`), so that every
    answer counts in the figures and the regression gate, and the report keeps each one."""
    return [dataclasses.replace(r, repeats=tuple(repeats[r.id])) if r.id in repeats else r for r in records]


def priced(records: Sequence[ScoredRecord], repeats: Mapping[str, Sequence[Mapping[str, Any]]],
           price: Optional[Price]) -> List[ScoredRecord]:
    """The records with the dollars each prompt's calls cost in this run (its own ask and its
    extra asks): what the model answered at the price's rates, nothing for an answer from the
    cache or a failed call, ``None`` when no price is known or a paid answer's tokens are not."""
    if price is None:
        return list(records)

    def cost_of(ask: Mapping[str, Any]) -> Optional[float]:
        if ask.get("error") or ask.get("answered_by") == "cache" or ask.get("via") == "cache":
            return 0.0
        p, c = ask.get("prompt_tokens"), ask.get("completion_tokens")
        if not (isinstance(p, int) and isinstance(c, int)):
            return None
        return price.cost(p, c)

    out = []
    for r in records:
        costs = [cost_of(r), *(cost_of(a) for a in repeats.get(r.id, ()))]
        known = None if any(c is None for c in costs) else round(sum(c for c in costs if c is not None), 10)
        out.append(dataclasses.replace(r, cost=known))
    return out


def usage_records(records: Sequence[Mapping[str, Any]],
                  repeats: Mapping[str, Sequence[Mapping[str, Any]]]) -> List[Mapping[str, Any]]:
    """The run's records and its extra asks, as the usage block counts calls (tokens, latency,
    cost): the repeats are paid for too."""
    domains = {str(r.get("id")): r.get("domain") for r in records}
    extra = [{**a, "domain": domains.get(pid)} for pid, answers in repeats.items() if pid in domains for a in answers]
    return [*records, *extra]


def temperature_of(model: Any) -> Optional[float]:
    """The model's temperature, when its call parameters set one."""
    t = (getattr(model, "params", None) or {}).get("temperature")
    return float(t) if isinstance(t, (int, float)) and not isinstance(t, bool) else None
