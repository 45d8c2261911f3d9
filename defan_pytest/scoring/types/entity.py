"""The shared flow of the entity types (name, city): known answers from the domain's
gazetteer, spaCy entities or capitalized spans, first in reading order."""
from __future__ import annotations

import re
from bisect import bisect_right
from typing import FrozenSet, List, Optional, Sequence, Tuple

from defan_pytest.scoring.text.names import name_tokens
from defan_pytest.scoring.text.tokens import capitalized_spans, folded_tokens, in_question, question_tokens
from defan_pytest.scoring.types.base import BaseAnswerType, Context, Entity, Extraction

#: A candidate: ``(start, end, text, source)``; source is ``gazetteer``, ``ner``, ``rule`` or
#: a type's own (``none``, ``online``), which ends the search with its text as the claim.
Candidate = Tuple[int, int, str, str]

# A capitalized phrase right after these words is stated as the answer ("I believe it was
# Albert Einstein", "the prize went to Otto Stern"): no NER needed to say what it is.
_STATED = re.compile(
    r"(?:\b(?:it|this|that|answer|winner|laureate|recipient|champion|film|movie|picture)\s+"
    r"(?:was|is|would\s+be|might\s+be)|\b(?:won|shared)\s+by|\b(?:awarded|given|presented|went)\s+to)"
    r"\s+(?:the\s+)?$",
    re.I,
)
# Where spans overlap, a known answer (or a type's own statement) beats NER, NER beats the rule.
_SOURCE_RANK = {"gazetteer": 0, "ner": 1, "rule": 2}


# Articles of the six languages: "La France" is France, not a phrase of the benchmark's words.
_ARTICLES = frozenset("the a an la le les l el los las il lo gli der die das den dem des un une ein eine uno una um uma o os".split())


# The longest rest of a capitalized span around a known name that can still be a phrase of the
# benchmark's words ("Nobel ... Prize in Economic Sciences" around "Memorial"): a longer rest is
# read as no such phrase, so each known name costs at most this much, however long its span.
_PHRASE_CHARS = 256


def _inside_generic_phrase(
    text: str, s: int, e: int, spans: Sequence[Tuple[int, int]], starts: Sequence[int],
    ctx: Context,
) -> bool:
    # The spans are disjoint and in reading order (``starts``: their starts): the one that may
    # hold the name is the last starting at or before it (found by bisection, not a scan).
    i = bisect_right(starts, s) - 1
    if i < 0:
        return False
    a, b = spans[i]
    if not (e <= b and (a, b) != (s, e)) or (s - a) + (b - e) > _PHRASE_CHARS:
        return False
    rest = [t for t in name_tokens(text[a:s] + " " + text[e:b]) if t not in _ARTICLES]
    return bool(rest) and ctx.profile.is_generic(rest)


class EntityAnswerType(BaseAnswerType):
    """A type whose claims are names found by the gazetteer, NER or capitalized spans."""

    uses_gazetteer = True
    #: spaCy entity labels that can be a claim of this type.
    ner_labels: FrozenSet[str] = frozenset()

    def statements(self, text: str, ctx: Optional[Context] = None) -> List[Candidate]:
        """The type's own statements in ``text`` (``no prize was awarded``, ``held online``)."""
        return []

    def rejects(self, text: str, source: str) -> bool:
        """Whether a candidate found by ``source`` cannot be a claim of the type."""
        return False

    def rejects_span(self, text: str, start: int, end: int, source: str) -> bool:
        """Whether the candidate at ``text[start:end]`` cannot be a claim where it stands."""
        return False

    def finish(self, text: str, start: int, end: int) -> int:
        """Where the claim starting at ``start`` ends (a place extends over its region)."""
        return end

    def is_emphasis(self, claim: str, ctx: Context) -> bool:
        # "**Nobel Prize**" is emphasis, not an answer; "United Nations" (a known answer) is one.
        if not ctx.profile.is_generic(name_tokens(claim)):
            return False
        return ctx.gazetteer is None or claim not in ctx.gazetteer

    def contained(self, claim: str, ctx: Context) -> bool:
        return in_question(name_tokens(claim), question_tokens(ctx.question))

    def candidates(
        self, text: str, ctx: Context, entities: Optional[Sequence[Entity]], ner_available: bool
    ) -> Extraction:
        qtoks = question_tokens(ctx.question)
        for s, e, t, source in _disjoint(self._found(text, ctx, entities)):
            if source not in _SOURCE_RANK:  # the type's own statement
                return Extraction(t, False, how=source)
            name_toks = name_tokens(t)
            if not name_toks or in_question(name_toks, qtoks):
                continue
            if source != "gazetteer" and ctx.profile.is_generic(name_toks):
                continue
            if self.rejects(t, source) or self.rejects_span(text, s, e, source):
                continue
            if source == "rule" and ner_available and not _STATED.search(text, max(0, s - 40), s):
                # The rules found an unknown capitalized phrase before any known answer: a NER
                # pipeline (if there is one) should decide what it is.  Unless the sentence
                # states it as the answer ("it was X", "awarded to X"): then the rule settles it.
                return Extraction(None, False, needs_ner=True, how="rule?", at=s)
            end = self.finish(text, s, e)
            if end != e:
                t = text[s:end]
            return Extraction(t.strip(" .,;:"), False, how=source)
        return Extraction(None, False, how="none")

    def _found(self, text: str, ctx: Context, entities: Optional[Sequence[Entity]]) -> List[Candidate]:
        """Every candidate of ``text``: known answers, the type's own statements, and NER's
        entities of the type's labels (when NER ran) or else the capitalized spans."""
        toks = folded_tokens(text)
        cands: List[Candidate] = []
        spans = capitalized_spans(text, toks)
        gaz = ctx.gazetteer
        if gaz is not None:
            starts = [a for a, _ in spans]
            for s, e, t in gaz.find(text, toks):
                if _inside_generic_phrase(text, s, e, spans, starts, ctx):
                    continue  # "Memorial" (a laureate) inside "Nobel Memorial Prize"
                cands.append((s, e, t, "gazetteer"))
        cands.extend(self.statements(text, ctx))
        if entities is not None:
            for s, e, label in entities:
                if label in self.ner_labels:
                    cands.append((s, e, text[s:e], "ner"))
        else:
            for s, e in spans:
                cands.append((s, e, text[s:e], "rule"))
        return cands


def _disjoint(cands: List[Candidate]) -> List[Candidate]:
    """The candidates in reading order, overlaps settled: where spans overlap, a known answer
    (or a type's own statement) beats NER, NER beats the rule."""
    rank = _SOURCE_RANK
    cands.sort(key=lambda c: (c[0], rank.get(c[3], 0), -(c[1] - c[0])))
    kept: List[Candidate] = []
    for c in cands:
        # Kept spans are disjoint and in order of start, so their ends increase too: the
        # ones that overlap c are a tail of the list (linear, where a scan of all was not).
        clash = []
        for k in reversed(kept):
            if k[1] <= c[0]:
                break
            clash.append(k)
        clash.reverse()
        if not clash:
            kept.append(c)
        elif all(rank.get(c[3], 0) < rank.get(k[3], 0) for k in clash):
            for k in clash:
                kept.remove(k)
            kept.append(c)
    kept.sort(key=lambda c: c[0])
    return kept
