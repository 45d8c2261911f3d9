"""Whether two runs can be compared at all, before the regression gate compares them.

:func:`comparability` says why two runs cannot be compared: another data set (its identity, or
a prompt both hold asked with another question or gold), another scorer (rules version or spaCy
pipeline), or no prompt in common.  The regression gate refuses such a baseline unless forced
(``--defan-baseline-force``).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from defan_pytest.records import DatasetMeta, Report, ScorerMeta

__all__ = ["ComparedPrompt", "comparability"]


class ComparedPrompt(Protocol):
    """What a prompt is compared by: a dataset row or a record (its id, question and gold)."""

    @property
    def id(self) -> str: ...

    @property
    def question(self) -> str: ...

    @property
    def answer(self) -> str: ...


def comparability(
    baseline: Report,
    dataset: DatasetMeta,
    scorer: ScorerMeta,
    prompts: Sequence[ComparedPrompt],
    *,
    where: str = "--defan-baseline",
) -> list[str]:
    """Why a run of ``dataset`` scored by ``scorer`` with ``prompts`` cannot be compared with
    ``baseline`` (a loaded report); empty when it can.  ``where`` names the baseline in the
    messages."""
    problems: list[str] = []
    b_data, b_scorer = baseline.meta.dataset, baseline.meta.scorer
    if b_data.identity != dataset.identity:
        problems.append(
            f"{where}: made on another data set ({b_data.describe()}; this run: {dataset.describe()})"
        )
    if b_scorer.key != scorer.key:
        problems.append(f"{where}: scored by another scorer ({b_scorer.describe()}; this run: {scorer.describe()})")
    old = {r.id: r for r in baseline.rows}
    common = [p for p in prompts if p.id in old]
    if not common:
        problems.append(
            f"{where}: no prompt in common with this run ({len(old)} prompts there, {len(prompts)} here): "
            "select the same domains and sample (--defan-domain, --defan-sample, --defan-seed)"
        )
    else:
        differ = [
            p for p in common
            if (old[p.id].question, str(old[p.id].answer).strip()) != (p.question, str(p.answer).strip())
        ]
        if differ and not any("another data set" in p for p in problems):
            problems.append(
                f"{where}: {len(differ)} prompt(s) with the same id hold another question or gold "
                f"(first: {differ[0].id}): made on another data set"
            )
    return problems
