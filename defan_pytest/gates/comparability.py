"""Whether two runs can be compared at all, before the regression gate compares them.

:func:`comparability` says why two runs cannot be compared: another data set (its identity, or
a prompt both hold asked with another question or gold), another scorer (rules version or spaCy
pipeline), or no prompt in common.  The regression gate refuses such a baseline unless forced
(``--defan-baseline-force``).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["comparability"]


def _scorer_text(scorer: Mapping[str, Any]) -> str:
    rules = scorer.get("rules", "?")
    if scorer.get("ner"):
        return f"rules {rules} with spaCy {scorer.get('pipeline')} {scorer.get('version') or ''}".rstrip()
    return f"rules {rules}, no spaCy pipeline"


def comparability(
    baseline: Mapping[str, Any],
    meta: Mapping[str, Any],
    rows: Sequence[Mapping[str, Any]],
    *,
    where: str = "--defan-baseline",
) -> list[str]:
    """Why the run described by ``meta`` (its report's ``meta``) with prompts ``rows`` (each
    with ``id``, ``question`` and ``answer``) cannot be compared with ``baseline`` (a loaded
    report); empty when it can.  ``where`` names the baseline in the messages."""
    problems: list[str] = []
    b_meta = baseline.get("meta") or {}
    b_data, data = b_meta.get("dataset") or {}, meta.get("dataset") or {}
    if b_data.get("identity") != data.get("identity"):
        problems.append(
            f"{where}: made on another data set ({b_data.get('source')} {b_data.get('identity')}; "
            f"this run: {data.get('source')} {data.get('identity')})"
        )
    b_scorer, scorer = b_meta.get("scorer") or {}, meta.get("scorer") or {}
    keys = ("rules", "ner", "pipeline", "version")
    if any(b_scorer.get(k) != scorer.get(k) for k in keys):
        problems.append(
            f"{where}: scored by another scorer ({_scorer_text(b_scorer)}; this run: {_scorer_text(scorer)})"
        )
    old = {str(r.get("id")): r for r in baseline.get("rows") or ()}
    common = [r for r in rows if str(r.get("id")) in old]
    if not common:
        problems.append(
            f"{where}: no prompt in common with this run ({len(old)} prompts there, {len(rows)} here): "
            "select the same domains and sample (--defan-domain, --defan-sample, --defan-seed)"
        )
    else:
        differ = [
            r for r in common
            if (old[str(r["id"])].get("question"), str(old[str(r["id"])].get("answer", "")).strip())
            != (r.get("question"), str(r.get("answer", "")).strip())
        ]
        if differ and not any("another data set" in p for p in problems):
            first = differ[0]
            problems.append(
                f"{where}: {len(differ)} prompt(s) with the same id hold another question or gold "
                f"(first: {first['id']}): made on another data set"
            )
    return problems
