"""Answers cut by the token limit (finish reason ``length``): counted, and said in one line with
the hint to raise the limit -- in the terminal summary, the report (``meta.calls.cut``) and the
GitHub step summary.  A cut answer is scored as it is (SCORING.md, clarification 14): a model
that ran out of tokens before its claim hallucinates by the figures, and the user should know
the limit, not the model, may be why.

>>> cut_text(3, 10, "litellm", "smollm2", 64)
'3 of 10 answers were cut by the token limit (finish reason "length", max_tokens 64): they are scored as they are; raise it with --defan-model-arg max_tokens=256 (or max_tokens in [models.smollm2])'
"""
from __future__ import annotations

from typing import Any, Iterable, Optional

from defan_pytest.calls.prices import model_table
from defan_pytest.records.finish import CUT

__all__ = ["count_cut", "cut_line", "cut_text"]


def _get(rec: Any, key: str) -> Any:
    return rec.get(key) if hasattr(rec, "get") else getattr(rec, key, None)


def count_cut(records: Iterable[Any]) -> int:
    """The answers (not errors) whose finish reason is ``length``."""
    return sum(1 for r in records if _get(r, "finish_reason") == CUT and not _get(r, "error"))


def cut_text(cut: int, answers: int, kind: Optional[str], name: Optional[str], max_tokens: Any) -> str:
    """The line about ``cut`` of ``answers`` cut by the token limit, with the hint to raise it:
    ``--defan-model-arg max_tokens=N`` or the model's table for a model string (``max_tokens``:
    the limit the run sent, if any), the callable's own limit for a registered callable."""
    limit = max_tokens if isinstance(max_tokens, int) and not isinstance(max_tokens, bool) and max_tokens > 0 else None
    head = (f"{cut:,} of {answers:,} answers were cut by the token limit (finish reason \"length\""
            f"{f', max_tokens {limit}' if limit else ''}): they are scored as they are")
    if kind == "callable":
        return f"{head}; raise the token limit the callable {name!r} asks its model for"
    suggest = max(256, 4 * limit) if limit else 512
    table = model_table(name) if name else "[models.<name>]"
    return f"{head}; raise it with --defan-model-arg max_tokens={suggest} (or max_tokens in {table})"


def cut_line(records: Iterable[Any], model: Any) -> Optional[str]:
    """:func:`cut_text` for a run's records and its resolved model, or ``None`` when no answer
    was cut."""
    recs = list(records)
    cut = count_cut(recs)
    if not cut:
        return None
    answers = sum(1 for r in recs if not _get(r, "error"))
    params = getattr(model, "params", None) or {}
    kind = "litellm" if hasattr(model, "params") else "callable"
    return cut_text(cut, answers, kind, getattr(model, "name", None),
                    params.get("max_completion_tokens") or params.get("max_tokens"))
