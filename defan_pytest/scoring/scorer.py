"""Scoring a response: claim, alignment (PMH) and correctness (FCH), per SCORING.md.

>>> scorer = Scorer(nlp=None)
>>> scorer.score("What was Kobe University's QS rank in 2022?", "386", "rank", "386th")
Score(claim='386', aligned=True, correct=True, error=None, note=None)

:meth:`Scorer.score_many` is the fast path: rules settle most responses; the few names and
places the rules leave open go through spaCy NER in one ``nlp.pipe`` batch.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from defan_pytest.scoring import ner, types
from defan_pytest.scoring.claims import extract
from defan_pytest.scoring.cleaning import clean
from defan_pytest.scoring.equivalence import claim_correct
from defan_pytest.scoring.ner import NER
from defan_pytest.scoring.profile import DomainProfile, profile_for
from defan_pytest.scoring.text.memo import short_text_memo
from defan_pytest.scoring.text.names import strip_footnotes
from defan_pytest.scoring.text.tokens import Gazetteer
from defan_pytest.scoring.types import Context, Extraction, make_context, parse_gold

@dataclass(frozen=True)
class ScoreInput:
    """One response to score, with the row it answers."""

    question: str
    answer: str
    type: str
    response: Optional[str] = None
    error: Optional[str] = None
    domain: Optional[str] = None
    #: The provider's finish reason (``"length"``: cut by the token limit, clarification 14).
    finish_reason: Optional[str] = None
    #: What the domain means (:class:`~defan_pytest.scoring.profile.DomainProfile`); ``None``:
    #: the scorer's profile for ``domain``.
    profile: Optional[DomainProfile] = None


#: Responses up to this many characters are read whole; a longer one (a runaway generation)
#: is scored on a window: its first and last :data:`WINDOW` characters, where a model states
#: its answer (the start of a direct answer, the end of a reasoning), and the row says so.
MAX_WHOLE = 1 << 20
WINDOW = 1 << 16
#: NER reads at most this much text per response: on a longer one, a window from just before
#: the first name the rules left open (the claim is the first candidate in reading order).
NER_WINDOW = 20_000
_NER_BEFORE = 200


@dataclass(frozen=True)
class Score:
    """The verdicts on one response.  For an errored call, all but ``error`` are ``None``.

    ``note`` says when the response was not read whole (a window of a very long one) or when
    NER could not run on it; ``None`` otherwise.
    """

    claim: Optional[str]
    aligned: Optional[bool]
    correct: Optional[bool]
    error: Optional[str] = None
    note: Optional[str] = None
    #: Which rule found the claim (``bare``, ``marked``, ``candidate``, ...; ``None`` for an
    #: errored call): what :func:`defan_pytest.assertions.score` explains.  Not compared.
    how: Optional[str] = field(default=None, compare=False, repr=False)


def _window(response: Optional[str]) -> Tuple[Optional[str], Optional[str]]:
    """The text to score of a response, and the note when it is a window of it."""
    if response is None or len(response) <= MAX_WHOLE:
        return response, None
    note = (
        f"scored on a window: the first and the last {WINDOW:,} of its {len(response):,} characters "
        f"(responses over {MAX_WHOLE:,} characters are not read whole)"
    )
    return response[:WINDOW] + "\n\n" + response[-WINDOW:], note


@short_text_memo(maxsize=16384)
def row_gazetteer(raw_gold: str) -> Gazetteer:
    """The known names of one row: its gold's accepted answers (and the city part of a
    ``City, Region`` gold), parsed as names.  Cached per gold: the 15 paraphrases of a
    question and every model share it."""
    gaz = Gazetteer()
    # The gold as written is known too ("Joel Coen and Ethan Coen" repeated is one answer),
    # besides each accepted answer clarification 21 splits it into.
    for part in strip_footnotes(raw_gold).split(";"):
        if len(parse_gold("name", part).alternatives) > 1:
            gaz.add(part)
    for alt in parse_gold("name", raw_gold).alternatives:
        gaz.add(alt)
        if "," in alt:  # "Seattle, Washington": the city alone is a known place too
            gaz.add(alt.split(",")[0])
    return gaz


class Scorer:
    """Scores responses deterministically.

    ``nlp``: ``"auto"`` (first installed English spaCy pipeline, else rules only), ``None`` or
    ``"none"`` (rules only), or a pipeline name or path.

    A claim depends only on its own row (question, gold, type, domain), the response, its
    finish reason and the scorer's version: the known names that find candidates without NER
    are the row's own accepted answers (:func:`row_gazetteer`), never the golds of other rows
    a run happened to load.  ``answers`` (each domain's answer list) is still accepted so that
    callers do not break, and ignored: deprecated.

    ``profiles``: domain -> :class:`~defan_pytest.scoring.profile.DomainProfile` for this scorer
    (a user's own domains); a domain it does not name gets the registered profile
    (:func:`~defan_pytest.scoring.profile.profile_for`: DefAn's once the dataset is loaded).
    """

    def __init__(
        self,
        nlp: Union[str, None, Any] = "auto",
        answers: Optional[Mapping[str, Iterable[str]]] = None,
        profiles: Optional[Mapping[str, DomainProfile]] = None,
    ) -> None:
        self._profiles = dict(profiles or {})
        # The pipeline loads on first need: most runs settle every response with rules and the
        # answer list, and loading spaCy is slow (bench/score_speed.py).
        self._ner: Optional[NER] = None
        self._ner_spec: Optional[str] = None
        if nlp is None or isinstance(nlp, str) or hasattr(nlp, "__fspath__"):
            self._ner_spec = ner.resolve_spec(nlp)
            if self._ner_spec is not None:
                ner.check(self._ner_spec)
        else:
            self._ner = nlp  # an already-loaded ner.NER (shared between scorers)
        del answers  # deprecated, ignored: a claim depends on its own row only

    @property
    def ner(self) -> Optional[NER]:
        """The spaCy pipeline (loaded now if not yet), or ``None`` for rules only."""
        if self._ner is None and self._ner_spec is not None:
            self._ner = ner.load(self._ner_spec)
        return self._ner

    @property
    def pipeline(self) -> Optional[str]:
        """Name of the spaCy pipeline in use, or ``None`` for rules only (does not load it)."""
        if self._ner is not None:
            return self._ner.name
        return self._ner_spec

    def add_answers(self, domain: Optional[str], answers: Iterable[str]) -> None:
        """Deprecated, does nothing: a claim no longer depends on other rows' golds (the
        gazetteer of a row is its own gold's alternatives, :func:`row_gazetteer`)."""
        del domain, answers

    def _context(self, item: ScoreInput) -> Context:
        kind = types.get(item.type)  # an unknown type: UnknownAnswerType lists the valid ones
        gold = parse_gold(item.type, item.answer)
        gaz = row_gazetteer(item.answer) if kind.uses_gazetteer else None
        profile = item.profile
        if profile is None:
            profile = self._profiles.get(item.domain) if item.domain is not None else None
        if profile is None:
            profile = profile_for(item.domain)
        return make_context(
            item.question,
            item.type,
            empty_gold=gold.empty,
            gazetteer=gaz,
            integer_gold=kind.integer_gold(gold),  # decides "326.121" (clarification 4)
            finish_reason=item.finish_reason,
            profile=profile,
        )

    def score(
        self,
        question: str,
        answer: str,
        type: str,
        response: Optional[str],
        error: Optional[str] = None,
        domain: Optional[str] = None,
        finish_reason: Optional[str] = None,
    ) -> Score:
        """Score one response (see :meth:`score_many` for many)."""
        return self.score_many([ScoreInput(question, answer, type, response, error, domain, finish_reason)])[0]

    def score_many(self, items: Sequence[ScoreInput], batch_size: int = 256) -> List[Score]:
        """Score many responses; NER, where needed at all, runs once over the batch."""
        results: List[Optional[Score]] = [None] * len(items)
        pending: List[Tuple[int, int, str]] = []  # (item, offset of the NER window, its text)
        contexts: List[Optional[Context]] = [None] * len(items)
        responses: List[Optional[str]] = [None] * len(items)
        notes: List[Optional[str]] = [None] * len(items)
        has_ner = self._ner is not None or self._ner_spec is not None
        for i, it in enumerate(items):
            if it.error is not None:
                results[i] = Score(None, None, None, str(it.error))
                continue
            ctx = self._context(it)
            contexts[i] = ctx
            responses[i], notes[i] = _window(it.response)
            ext = extract(responses[i], ctx, ner_available=has_ner)
            if ext.needs_ner:
                text = clean(responses[i])
                start = 0
                if len(text) > NER_WINDOW:  # NER's cost grows with the text: read a window only
                    start = max(0, (ext.at or 0) - _NER_BEFORE)
                    text = text[start:start + NER_WINDOW]
                pending.append((i, start, text))
            else:
                results[i] = self._verdict(it, ext, notes[i])
        if pending:
            try:
                ents = self.ner.entities([t for _, _, t in pending], batch_size=batch_size)  # type: ignore[union-attr]
            except Exception as exc:  # noqa: BLE001 - a pipeline that fails must not lose the run
                # Rules only for these responses, and the rows say why.
                reason = f"NER failed ({type(exc).__name__}: {str(exc)[:200]}); scored by the rules alone"
                for i, _, _ in pending:
                    ext = extract(responses[i], contexts[i], ner_available=False)  # type: ignore[arg-type]
                    results[i] = self._verdict(items[i], ext, "; ".join(filter(None, (notes[i], reason))))
                return results  # type: ignore[return-value]
            for (i, start, _), e in zip(pending, ents):
                shifted = [(s + start, end + start, label) for s, end, label in e] if start else e
                ext = extract(responses[i], contexts[i], entities=shifted)  # type: ignore[arg-type]
                results[i] = self._verdict(items[i], ext, notes[i])
        return results  # type: ignore[return-value]

    @staticmethod
    def _verdict(item: ScoreInput, ext: Extraction, note: Optional[str] = None) -> Score:
        gold = parse_gold(item.type, item.answer)
        return Score(ext.claim, ext.aligned, claim_correct(item.type, ext.claim, gold), None, note, how=ext.how)
