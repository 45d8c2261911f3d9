"""The keys of structured answers (SCORING.md clarification 2): which table header, ``Key:
value`` list key or JSON key says it holds the answer, ranked by what the question asks
(:func:`key_rank`), and whether a one-line answer is a labelled value (:func:`labelled`).

A key is ranked by what the question asks: ``Answer``-like keys first, then keys whose words
are the question's (or say the same in other words: the key concepts of the row's domain
profile, :class:`~defan_pytest.scoring.profile.DomainProfile`), then the words of the answer
type (its ``labels``).
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Dict, FrozenSet, Optional, Tuple

from defan_pytest.scoring.text.memo import short_text_memo
from defan_pytest.scoring.text.tokens import folded_tokens, question_tokens
from defan_pytest.scoring.types import AnswerType, Context

__all__ = ["KV_LINE", "KeyRank", "key_rank", "labelled"]

# One "Key: value" line (a table row and a bold key allowed for; an underscore between letters
# joins the words of a YAML key, "final_score", and is no bold mark).
KV_LINE = re.compile(
    r"^[ \t]*(?:[-*•+][ \t]+|\d+[.)][ \t]+)?(?:\*\*|__)?(?P<k>(?:[^\n:*_|{}\[\]]|(?<=[^\W_])_(?=[^\W_])){1,60}?)"
    r"(?:\*\*|__)?[ \t]*[:：]"
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
@lru_cache(maxsize=64)
def _concept_index(concepts: Tuple[FrozenSet[str], ...]) -> Dict[str, FrozenSet[int]]:
    """Word -> the groups of a profile's key concepts it belongs to."""
    index: Dict[str, FrozenSet[int]] = {}
    for i, group in enumerate(concepts):
        for w in group:
            index[w] = index.get(w, frozenset()) | {i}
    return index


@short_text_memo(maxsize=4096)
def _question_concepts(question: str, concepts: Tuple[FrozenSet[str], ...]) -> FrozenSet[int]:
    index = _concept_index(concepts)
    out: set = set()
    for t in question_tokens(question):
        out |= index.get(t, frozenset())
    return frozenset(out)


#: How well a key says it holds the answer; lower sorts first (see :func:`key_rank`).
KeyRank = Tuple[int, int, int, int]


def key_rank(kind: AnswerType, key: str, ctx: Context) -> Optional[KeyRank]:
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
    labelled = any(t in kind.labels for t in toks)
    key_concepts = ctx.profile.key_concepts
    concepts = _question_concepts(ctx.question, key_concepts) if key_concepts else frozenset()
    index = _concept_index(key_concepts) if concepts else {}
    asked = [t for t in words if t in q or (index.get(t, frozenset()) & concepts)]
    if len(asked) == len(words):
        return (1, -len(asked), int(ctx.profile.is_generic(asked)), int(not labelled))
    if labelled:
        return (2, 0, 0, 0)
    return None


def labelled(kind: AnswerType, t: str, ctx: Context) -> bool:
    """Is ``t`` one labelled line, ``Winner: Argentina``?  Then it is a structured answer, not a
    bare value (a label around a value, as a unit word is)."""
    m = KV_LINE.match(t)
    return m is not None and key_rank(kind, m.group("k"), ctx) is not None
