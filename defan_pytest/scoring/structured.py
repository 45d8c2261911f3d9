"""Structured answers (SCORING.md clarification 2): the cell of a markdown table, the item of a
``Key: value`` list or the key of a JSON object that answers the question.

The key that answers is the best ranked (:func:`defan_pytest.scoring.keys.key_rank`: what the
question asks first); the value found is read as a mark's value is
(:func:`defan_pytest.scoring.reading.mark_value`).  Used by :mod:`defan_pytest.scoring.claims`
(step 3).
"""
from __future__ import annotations

import json
import re
from typing import Any, FrozenSet, Iterator, List, Optional, Sequence, Tuple

from defan_pytest.scoring.cleaning import clean
from defan_pytest.scoring.keys import KV_LINE, key_rank
from defan_pytest.scoring.reading import mark_value, repeats_question
from defan_pytest.scoring.text.search import SpanIndex
from defan_pytest.scoring.text.tokens import folded_tokens, question_tokens
from defan_pytest.scoring.types import NONE_CLAIM, ONLINE_CLAIM, AnswerType, Context

__all__ = ["Structured", "cell_value", "structured_claims"]


# --------------------------------------------------------------------------------------------
# structured answers (clarification 2): the cell, item or key that answers
# --------------------------------------------------------------------------------------------

#: A structure's claim: ``(start, end, claim)`` of the table, list or JSON it was read from.
Structured = Tuple[int, int, str]

_TABLE_SEP = re.compile(r"^[ \t]*\|?[ \t]*:?-{2,}:?[ \t]*(?:\|[ \t]*:?-{2,}:?[ \t]*)*\|?[ \t]*$", re.M)
_JSON_START = re.compile(r"^[ \t]*[{\[]", re.M)
_MAX_JSON = 100_000  # a larger "object" is not an answer; never parse megabytes


def structured_claims(kind: AnswerType, text: str, ctx: Context) -> List[Structured]:
    """Claims of the tables, ``Key: value`` lists and JSON objects in ``text``."""
    out: List[Structured] = []
    if "|" in text and "-" in text:
        for start, end, header, rows in _tables(text):
            claim = _table_claim(kind, header, rows, ctx)
            if claim is not None:
                out.append((start, end, claim))
    if "{" in text or "[" in text:
        found = _json_structure(text)
        if found is not None:
            start, end, obj = found
            claim = _json_claim(kind, obj, ctx)
            if claim is not None:
                out.append((start, end, claim))
    if ":" in text or "：" in text:
        read = SpanIndex((s, e) for s, e, _ in out) if out else None
        for start, end, items in _kv_blocks(text):
            if read is not None and start in read:
                continue  # inside a table or JSON object already read
            claim = _kv_claim(kind, items, ctx)
            if claim is not None:
                out.append((start, end, claim))
    return out


def cell_value(kind: AnswerType, cell: str, ctx: Context) -> Optional[str]:
    """The claim a table cell, list item or JSON value holds (its value, as a mark's)."""
    claim = mark_value(kind, cell, ctx)
    if claim is not None or not kind.uses_gazetteer:
        return claim
    inner = clean(cell)
    if not inner or len(inner.split()) > 8:
        return None
    # "Wilhelm Röntgen (Germany)": the first name in the cell, as in running text.
    found = kind.candidates(inner, ctx, None, False).claim
    if found is None or found in (NONE_CLAIM, ONLINE_CLAIM) or kind.is_emphasis(found, ctx) or repeats_question(kind, found, ctx):
        return found if found in (NONE_CLAIM, ONLINE_CLAIM) else None
    return found


#: Values of a JSON, YAML or ``Key: value`` answer that say there is none (clarification 25).
_NULLS = frozenset({"", "null", "none", "~", "nil"})


def _kv_claim(kind: AnswerType, items: Sequence[Tuple[str, str]], ctx: Context) -> Optional[str]:
    """The value of the key that answers: ``Answer`` first, then a key that says what the
    question asks, then a word of the type (:func:`~defan_pytest.scoring.keys.key_rank`); the
    first such key whose value is a value of the type."""
    tiers = []
    for i, (key, _) in enumerate(items):
        tier = key_rank(kind, key, ctx)
        if tier is not None:
            tiers.append((tier, i))
    for _, i in sorted(tiers):
        value = items[i][1]
        if value.strip().strip("\"'").casefold() in _NULLS:
            # A null, None or empty value in the key that answers states there was none (25).
            value = "None"
        claim = cell_value(kind, value, ctx)
        if claim is not None:
            return claim
    return None


def _kv_blocks(text: str) -> Iterator[Tuple[int, int, List[Tuple[str, str]]]]:
    """Runs of ``Key: value`` lines (blank lines allowed between them)."""
    items: List[Tuple[str, str]] = []
    start = end = 0
    for m in KV_LINE.finditer(text):
        if items and text[end: m.start()].strip():
            yield start, end, items
            items = []
        if not items:
            start = m.start()
        items.append((m.group("k"), m.group("v")))
        end = m.end()
    if items:
        yield start, end, items


def _cells(line: str) -> List[str]:
    t = line.strip()
    if t.startswith("|"):
        t = t[1:]
    if t.endswith("|"):
        t = t[:-1]
    return [c.strip() for c in t.split("|")]


def _tables(text: str) -> Iterator[Tuple[int, int, List[str], List[List[str]]]]:
    """Markdown tables: ``(start, end, header cells, rows of cells)``, found by their
    ``|---|---|`` separator line (linear: each line is read once)."""
    for m in _TABLE_SEP.finditer(text):
        if "|" not in m.group():
            continue  # a horizontal rule, not a table
        head_start = text.rfind("\n", 0, max(0, m.start() - 1)) + 1
        header_line = text[head_start: max(head_start, m.start() - 1)]
        if "|" not in header_line:
            continue
        rows: List[List[str]] = []
        pos, end = m.end() + 1, m.end()
        while pos < len(text):
            nl = text.find("\n", pos)
            line_end = len(text) if nl < 0 else nl
            line = text[pos:line_end]
            if "|" not in line:
                break
            rows.append(_cells(line))
            end, pos = line_end, line_end + 1
        if rows:
            yield head_start, end, _cells(header_line), rows


def _in_question(cell: str, q: FrozenSet[str]) -> bool:
    toks = [t[2] for t in folded_tokens(cell)]
    return bool(toks) and all(t in q for t in toks)


def _table_claim(kind: AnswerType, header: List[str], rows: List[List[str]], ctx: Context) -> Optional[str]:
    """The cell that answers: in the row that matches the question (most cells made of the
    question's words: its year, its subject), else the first row; in the column whose header
    names the answer best (:func:`~defan_pytest.scoring.keys.key_rank`: ``Runner-up`` for
    "Which nation came second?", ``Laureate``, ``Rank``, the asked year), else the first cell
    with a value of the type.  A two-column table of keys and values is read as a ``Key:
    value`` list."""
    q = question_tokens(ctx.question)
    best, best_score = 0, 0
    for i, row in enumerate(rows):
        score = sum(1 for c in row if _in_question(c, q))
        if score > best_score:
            best, best_score = i, score
    row = rows[best]
    keys = {j for j, c in enumerate(row) if _in_question(c, q)} if best_score else set()
    tiered = []
    for j in range(len(row)):
        tier = key_rank(kind, header[j], ctx) if j < len(header) else None
        if tier is not None and j not in keys:
            tiered.append((tier, j))
    for _, j in sorted(tiered):
        claim = cell_value(kind, row[j], ctx)
        if claim is not None:
            return claim
    if len(header) == 2:
        claim = _kv_claim(kind, [(r[0], r[1]) for r in rows if len(r) >= 2], ctx)
        if claim is not None:
            return claim
    if ctx.is_math:
        return None
    for j, cell in enumerate(row):
        if j not in keys:
            claim = cell_value(kind, cell, ctx)
            if claim is not None:
                return claim
    return None


def _json_structure(text: str) -> Optional[Tuple[int, int, Any]]:
    """The JSON object or array the response holds (from a line starting with ``{`` or ``[``
    to the last closing brace), or ``None``."""
    m = _JSON_START.search(text)
    if m is None:
        return None
    start = m.start()
    end = max(text.rfind("}"), text.rfind("]")) + 1
    if end <= start or end - start > _MAX_JSON:
        return None
    try:
        return start, end, json.loads(text[start:end])
    except ValueError:
        return None


def _json_scalar(v: Any) -> Optional[str]:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return None
    if isinstance(v, (str, int, float)):
        return str(v)
    return None


def _json_items(obj: Any, prefix: str = "") -> List[Tuple[str, str]]:
    """A JSON object flattened to ``(key path, value)`` pairs (``{"1901": {"physics": X}}``
    gives ``("1901 physics", X)``)."""
    items: List[Tuple[str, str]] = []
    for k, v in obj.items():
        key = f"{prefix} {k}".strip()
        if isinstance(v, dict):
            items.extend(_json_items(v, key))
        else:
            scalar = _json_scalar(v)
            if scalar is not None:
                items.append((key, scalar))
    return items


def _json_claim(kind: AnswerType, obj: Any, ctx: Context) -> Optional[str]:
    if isinstance(obj, dict):
        items = _json_items(obj)
        claim = _kv_claim(kind, items, ctx)
        if claim is None:
            # The key alone ({"results": {"answer": X}} has the path "results answer").
            claim = _kv_claim(kind, [(k.split()[-1], v) for k, v in items if k.split()], ctx)
        return claim
    if isinstance(obj, list) and obj and all(isinstance(x, dict) for x in obj):
        header = list(dict.fromkeys(k for x in obj for k in x))
        rows = [[(_json_scalar(x[h]) if h in x else None) or "" for h in header] for x in obj]
        return _table_claim(kind, header, rows, ctx)
    return None
