"""Structured answers (SCORING.md clarification 2): the cell of a markdown table, the item of a
``Key: value`` list or the key of a JSON object that answers the question.

A key (a table header, a list key, a JSON key) is ranked by what the question asks
(:func:`_key_rank`): ``Answer``-like keys first, then keys whose words are the question's (or
synonyms of them, :data:`_KEY_CONCEPTS`), then the words of the answer type.  The value found
is read as a mark's value is (:func:`defan_pytest.scoring.claims._mark_value`).  Used by
:mod:`defan_pytest.scoring.claims` (step 3); the two modules refer to each other only at call time.
"""
from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any, Dict, FrozenSet, Iterator, List, Optional, Sequence, Tuple

from defan_pytest.scoring import claims
from defan_pytest.scoring.text.search import SpanIndex
from defan_pytest.scoring.text.tokens import folded_tokens, is_generic, question_tokens
from defan_pytest.scoring.types import NONE_CLAIM, ONLINE_CLAIM, AnswerType, Context

__all__ = ["Structured", "labelled", "structured_claims"]


# One "Key: value" line (a table row and a bold key allowed for).
_KV_LINE = re.compile(
    r"^[ \t]*(?:[-*•+][ \t]+|\d+[.)][ \t]+)?(?:\*\*|__)?(?P<k>[^\n:*_|{}\[\]]{1,60}?)(?:\*\*|__)?[ \t]*[:：]"
    r"(?:\*\*|__)?[ \t]*(?P<v>[^\n]*?\S)(?:\*\*|__)?[ \t]*$",
    re.M,
)
# Keys that say "this is the answer", for any type (the only ones a math response's list has).
_ANSWER_KEYS = frozenset(
    "answer final result response reponse antwort respuesta resposta risposta solution the short correct".split()
)


# Words of a key that say nothing about what it holds ("Runner-up", "Date of birth").
_KEY_STOP = frozenset("the a an of in on at to for by and or up per de du des la le les el il der die das s".split())
# Words that make a "key" a sentence ("The answer is", "I think it was"), not a label.
_KEY_SENTENCE = frozenset(
    """is was were are am be been being has have had did does do i im it its this that these
    there which who whom whose what when why how believe think would could should might may can
    cannot please let me my we you your est ist sind wurde fue foi fu""".split()
)
# What a key and a question can both say in other words: a "Runner-up" column answers "Which
# nation came second?" and "Who lost the final?"; "Winner" answers "Who won?".
_KEY_CONCEPTS = (
    """runner runnerup runners second lost lose loses loser losers losing finalist finalists beaten
    defeated zweiter zweite finaliste subcampeon vice""",
    """winner winners won win wins winning champion champions victor victors victorious triumphed
    lifted crowned clinched sieger gewinner gagnant vainqueur ganador campeon vencedor campeao
    vincitore""",
    "stadium venue ground arena stade stadion estadio stadio",
    "attendance spectators crowd attended audience",
    "born birth birthday birthdate dob",
    "admission admitted joined join joining membership member entry",
    "population residents inhabitants counted",
    "city venue location host hosted held town",
)
_CONCEPT_OF: Dict[str, FrozenSet[int]] = {}
for _i, _group in enumerate(_KEY_CONCEPTS):
    for _w in _group.split():
        _CONCEPT_OF[_w] = _CONCEPT_OF.get(_w, frozenset()) | {_i}
del _i, _group, _w


@lru_cache(maxsize=4096)
def _question_concepts(question: str) -> FrozenSet[int]:
    out: set = set()
    for t in question_tokens(question):
        out |= _CONCEPT_OF.get(t, frozenset())
    return frozenset(out)


#: How well a key says it holds the answer; lower sorts first (see :func:`_key_rank`).
KeyRank = Tuple[int, int, int, int]


def _key_rank(kind: AnswerType, key: str, ctx: Context) -> Optional[KeyRank]:
    """How well a table header, list key or JSON key says it holds the answer (lower is
    better), or ``None`` when it says nothing of the kind:

    * ``Answer``, ``Final answer``, ``Result`` (in the six languages) first;
    * then a key whose every word is the question's, or says what the question asks in other
      words (``Runner-up`` for "Which nation came second?", ``Median weekly household
      income``, ``2022``): more such words first, and one made only of the benchmark's own
      words (``Final`` for a question about a final) after one that is not;
    * then a word of the type (``Laureate``, ``Winner``, ``Rank``, ``City``).

    A math response's keys count only as ``Answer`` (its lists are steps:
    ``Total age before: 40x``)."""
    toks = [t[2] for t in folded_tokens(key)]
    if not toks or len(toks) > 5:
        return None  # a key is a short label, not "The answer is The Lord of the Rings"
    q = question_tokens(ctx.question)
    words = [t for t in toks if t not in _KEY_STOP] or toks
    if all(t in _ANSWER_KEYS for t in toks) and any(t != "the" for t in toks):
        # "Final" alone labels the answer, unless the question is about a final ("Final: West
        # Germany 1-0 Argentina" for "Where was the 1990 final played?").
        if not (all(t == "final" for t in words) and "final" in q):
            return (0, 0, 0, 0)
    if ctx.is_math or any(t in _KEY_SENTENCE for t in toks):
        return None
    labels: FrozenSet[str] = getattr(kind, "labels", frozenset())
    labelled = any(t in labels for t in toks)
    concepts = _question_concepts(ctx.question)
    asked = [t for t in words if t in q or (_CONCEPT_OF.get(t, frozenset()) & concepts)]
    if len(asked) == len(words):
        return (1, -len(asked), int(is_generic(asked)), int(not labelled))
    if labelled:
        return (2, 0, 0, 0)
    return None


def labelled(kind: AnswerType, t: str, ctx: Context) -> bool:
    """Is ``t`` one labelled line, ``Winner: Argentina``?  Then it is a structured answer, not a
    bare value (a label around a value, as a unit word is)."""
    m = _KV_LINE.match(t)
    return m is not None and _key_rank(kind, m.group("k"), ctx) is not None


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


def _cell_value(kind: AnswerType, cell: str, ctx: Context) -> Optional[str]:
    """The claim a table cell, list item or JSON value holds (its value, as a mark's)."""
    claim = claims._mark_value(kind, cell, ctx)
    if claim is not None or not kind.uses_gazetteer:
        return claim
    inner = claims.clean(cell)
    if not inner or len(inner.split()) > 8:
        return None
    # "Wilhelm Röntgen (Germany)": the first name in the cell, as in running text.
    found = kind.candidates(inner, ctx, None, False).claim
    if found is None or found in (NONE_CLAIM, ONLINE_CLAIM) or kind.is_emphasis(found, ctx) or claims._contained(kind, found, ctx):
        return found if found in (NONE_CLAIM, ONLINE_CLAIM) else None
    return found


def _kv_claim(kind: AnswerType, items: Sequence[Tuple[str, str]], ctx: Context) -> Optional[str]:
    """The value of the key that answers: ``Answer`` first, then a key that says what the
    question asks, then a word of the type (:func:`_key_rank`); the first such key whose value
    is a value of the type."""
    tiers = []
    for i, (key, _) in enumerate(items):
        tier = _key_rank(kind, key, ctx)
        if tier is not None:
            tiers.append((tier, i))
    for _, i in sorted(tiers):
        claim = _cell_value(kind, items[i][1], ctx)
        if claim is not None:
            return claim
    return None


def _kv_blocks(text: str) -> Iterator[Tuple[int, int, List[Tuple[str, str]]]]:
    """Runs of ``Key: value`` lines (blank lines allowed between them)."""
    items: List[Tuple[str, str]] = []
    start = end = 0
    for m in _KV_LINE.finditer(text):
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
    names the answer best (:func:`_key_rank`: ``Runner-up`` for "Which nation came second?",
    ``Laureate``, ``Rank``, the asked year), else the first cell with a value
    of the type.  A two-column table of keys and values is read as a ``Key: value`` list."""
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
        tier = _key_rank(kind, header[j], ctx) if j < len(header) else None
        if tier is not None and j not in keys:
            tiered.append((tier, j))
    for _, j in sorted(tiered):
        claim = _cell_value(kind, row[j], ctx)
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
            claim = _cell_value(kind, cell, ctx)
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
    if isinstance(v, bool) or v is None:
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
        rows = [[_json_scalar(x.get(h)) or "" for h in header] for x in obj]
        return _table_claim(kind, header, rows, ctx)
    return None
