"""Reading: the question's expected answer type, and a short answer taken from the passages.

:func:`analyse` infers from the question's wording what kind of answer it wants (a person, a
team, a film, a place, a stadium, a date, a year, a number, a rank).  :class:`Reader` ranks the
retrieved passages by how well they match the question (its years and names), picks the sentence
that matches best, and takes the first entity of the wanted kind in it: spaCy's named entities
when a pipeline is loaded, regular expressions otherwise.  A real reader's flaws come with it: it
answers from the closest passage even when that passage is about another year, and it returns
the whole supporting sentence for some question forms.
"""
from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from enum import Enum
from typing import Any, Dict, FrozenSet, List, Optional, Sequence, Tuple

from .knowledge import Passage
from .retriever import EXPANSIONS


class Kind(str, Enum):
    PERSON = "person"
    TEAM = "team"
    TITLE = "title"
    PLACE = "place"
    STADIUM = "stadium"
    DATE = "date"
    YEAR = "year"
    NUMBER = "number"
    RANK = "rank"
    OTHER = "other"


MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september",
          "october", "november", "december")
_MONTH = r"(?:January|February|March|April|May|June|July|August|September|October|November|December)"
_YEAR = re.compile(r"\b(1[89]\d\d|20\d\d)\b")
_DATE_MDY = re.compile(rf"\b({_MONTH})\s+(\d{{1,2}}),\s+(\d{{4}})\b")
_DATE_DMY = re.compile(rf"\b(\d{{1,2}})\s+({_MONTH})\s+(\d{{4}})\b")
_NUMBER = re.compile(r"\b\d{1,3}(?:,\d{3})+\b|\b\d+(?:\.\d+)?\b")
_ORDINAL = re.compile(r"\b(\d+)(?:st|nd|rd|th)\b")
_TITLE = re.compile(r"\*([^*]+)\*")
_STADIUM = re.compile(r"\bat (?:the )?((?:[A-Z][\w'’.-]*)(?:\s+(?:[A-Z][\w'’.-]*|de|del|la))*)(?=\s+(?:in|near)\b|[.,;]|$)")
_CAPITALIZED = re.compile(
    r"(?:[A-Z][\w'’.-]*)(?:\s+(?:[A-Z][\w'’.-]*|van|von|de|der|den|del|la|le|du|da|zur|y|'t)(?=\s+[A-Z]))*"
    r"(?:\s+[A-Z][\w'’.-]*)?"
)
_STOP = frozenset("""a an and are as at be by did do does for from give had has have in is it its me of on
only or the their there this to was were what when where which who whom whose with year name names first last
exact please answer tell person individual one multiple if""".split())
#: Capitalized words that are never (part of) a person's or a team's name in this knowledge base.
_NOT_NAMES = frozenset("""The In On For At During A An It He She His Her Its This That These Those Nobel Prize Prizes
Physics Chemistry Literature Peace Medicine Physiology Economic Sciences Memorial Riksbank Sveriges Alfred Academy
Award Awards Oscar Oscars Best Picture Director Actor Actress FIFA World Cup Second War Stadium Final QS University
Rankings Ranking United Nations Organisation Organization Islamic Cooperation Conference Charter Who Whom Whose What
Which When Where Why How Give""".split())


#: Words that mark the sentence holding the answer, when the question asks for them.
CUES = frozenset({"runners-up", "second", "attendance", "attended", "watched", "spectators", "crowd", "born"})


@dataclass(frozen=True)
class Question:
    """What the reader knows about a question."""

    text: str
    kind: Kind
    years: Tuple[str, ...]
    terms: FrozenSet[str]  # content words (lower case) and their expansions
    words: FrozenSet[str]  # content words (lower case) alone
    names: Tuple[str, ...]  # capitalized phrases of the question (lower case)
    wordy: bool  # answer with the supporting sentence
    date_format: Optional[str]  # "mm/dd/yyyy" when the question asks for that form


def answer_kind(question: str) -> Kind:
    """The kind of answer a question wants, from its wording alone.

    >>> answer_kind("Who was awarded the Nobel Prize in Physics in 1921?").value
    'person'
    >>> answer_kind("Who emerged as the victor of the 2002 FIFA World Cup?").value
    'team'
    >>> answer_kind("In what stadium did the 1966 FIFA World Cup final take place?").value
    'stadium'
    >>> answer_kind("What was Harvard University's standing in the QS rankings for 2023?").value
    'rank'
    """
    q = " " + " ".join(question.lower().split()) + " "
    if "mm/dd/yyyy" in q or re.search(r"\bborn\b|\bbirth", q):
        return Kind.DATE
    if re.search(r"\bqs\b|\brank", q):
        return Kind.RANK
    if "stadium" in q:
        return Kind.STADIUM
    if re.search(r"attend|how many|number of|population|spectators|turnout|crowd|audience|\bcount\b", q):
        return Kind.NUMBER
    if re.search(r"\b(where|venue|location|site)\b|take place|took place|\bheld\b|\boccur", q):
        return Kind.PLACE
    if re.search(r"\b(what|which) date\b|\bdate\b", q):
        return Kind.DATE
    if re.search(r"\bwhen\b", q) and re.search(r"united nations|\bun\b", q):
        return Kind.DATE
    if re.search(r"\b(what|which) year\b|\bwhen\b", q):
        return Kind.YEAR
    if re.search(r"\b(movie|film)\b", q) or ("best picture" in q and not re.search(r"\bwho\b", q)):
        return Kind.TITLE
    if re.search(r"\bteam\b|world cup|\bcountry\b|\bnation\b", q):
        return Kind.TEAM
    if re.search(r"\bwho\b|\bwhom\b|individual|person|laureate|recipient|winner", q):
        return Kind.PERSON
    if re.search(r"\d", q):
        return Kind.NUMBER
    return Kind.OTHER


def is_wordy(question: str) -> bool:
    """Question forms the pipeline answers with its whole supporting sentence: those opening
    with a time phrase ("In 2014, who ...") or asking about an "individual", a "site" or a
    "standing"."""
    q = question.strip()
    return bool(re.match(r"^(In|During|For)\s+(the\s+)?(year\s+)?\d{4}\b", q)) or bool(
        re.search(r"\bindividual\b|\bsite of\b|\bstanding\b", q, re.I)
    )


def analyse(question: str) -> Question:
    words = re.findall(r"[A-Za-z]+", question)
    terms = {w.lower() for w in words if w.lower() not in _STOP and len(w) > 1}
    own = frozenset(terms)
    for w in list(terms):
        if w in EXPANSIONS:
            terms.update(EXPANSIONS[w].split())
    names = []
    for m in _CAPITALIZED.finditer(question):
        phrase = _strip_leading(m.group(0))
        if phrase and not all(w in _NOT_NAMES for w in phrase.split()):
            names.append(phrase.lower())
    date_format = "mm/dd/yyyy" if "mm/dd/yyyy" in question.lower() else None
    return Question(
        text=question, kind=answer_kind(question), years=tuple(_YEAR.findall(question)),
        terms=frozenset(terms), words=own, names=tuple(names), wordy=is_wordy(question), date_format=date_format,
    )


def _strip_leading(phrase: str) -> str:
    words = phrase.split()
    while words and words[0] in _NOT_NAMES:
        words.pop(0)
    while words and words[-1] in _NOT_NAMES:
        words.pop()
    return " ".join(words)


def sentences(text: str) -> List[Tuple[int, int]]:
    """Character spans of the sentences of ``text``; initials (``J. J. Thomson``) and ``Jr.``
    do not end a sentence."""
    spans: List[Tuple[int, int]] = []
    start = 0
    for m in re.finditer(r"[.!?](?=\s+[A-Z*])", text):
        before = text[start:m.start()].split()
        last = before[-1] if before else ""
        if len(last) <= 2 or last in ("Jr", "Sr", "St", "Dr", "Mr", "Mrs", "No"):
            continue
        spans.append((start, m.end()))
        start = m.end()
        while start < len(text) and text[start].isspace():
            start += 1
    if start < len(text):
        spans.append((start, len(text)))
    return spans


@dataclass(frozen=True)
class Reading:
    """The reader's answer and where it comes from."""

    answer: str
    passage: Passage
    sentence: str
    candidate: str


class Reader:
    """Turns retrieved passages into a short answer.  ``nlp``: a loaded spaCy pipeline with an
    ``ner`` component, or ``None`` for regex reading."""

    def __init__(self, nlp: Any = None) -> None:
        self.nlp = nlp
        self._entities: Dict[str, List[Tuple[int, int, str]]] = {}
        self._lock = threading.Lock()

    @property
    def mode(self) -> str:
        return "spacy" if self.nlp is not None else "regex"

    def entities(self, passage: Passage) -> List[Tuple[int, int, str]]:
        """spaCy's entities of a passage (once per passage; spaCy runs under a lock, as the
        pipeline answers from several threads)."""
        if self.nlp is None:
            return []
        with self._lock:
            found = self._entities.get(passage.id)
            if found is None:
                doc = self.nlp(passage.text)
                found = [(e.start_char, e.end_char, e.label_) for e in doc.ents]
                self._entities[passage.id] = found
        return found

    # -- ranking --------------------------------------------------------------------------------

    @staticmethod
    def passage_score(q: Question, passage: Passage, retrieval: float) -> float:
        """Retrieval score, plus a bonus for the question's years, its names and its own words
        in the passage."""
        text = f"{passage.section} {passage.text}".lower()  # the file's title is every passage's
        bonus = 0.0
        if q.years and all(y in text for y in q.years):
            bonus += 1.0
        bonus += 0.5 * sum(1 for n in q.names if n in text)
        if q.words:
            words = set(re.findall(r"[a-z]+", text))
            bonus += 0.3 * len(q.words & words) / len(q.words)
        return retrieval + bonus

    @staticmethod
    def sentence_score(q: Question, sentence: str) -> float:
        """Words of the question in the sentence; its years, its names and the words that mark
        the sentence holding the answer ("runners-up", "attendance", "born") count more."""
        words = {w.lower() for w in re.findall(r"[A-Za-z]+(?:-[a-z]+)?", sentence)}
        score = float(len(q.terms & words))
        score += 6.0 * len(q.terms & words & CUES)
        low = sentence.lower()
        score += 3.0 * sum(1 for y in q.years if y in sentence)
        score += 2.0 * sum(1 for n in q.names if n in low)
        return score

    def read(self, q: Question, retrieved: Sequence[Tuple[Passage, float]]) -> Optional[Reading]:
        """The answer from the best passage that holds a candidate of the wanted kind."""
        ranked = sorted(retrieved, key=lambda ps: -self.passage_score(q, ps[0], ps[1]))
        for passage, _score in ranked:
            spans = sentences(passage.text)
            order = sorted(range(len(spans)), key=lambda i: -self.sentence_score(q, passage.text[spans[i][0]:spans[i][1]]))
            for i in order:
                start, end = spans[i]
                candidate = self.candidate(q, passage, start, end)
                if candidate:
                    sentence = passage.text[start:end]
                    return Reading(self.phrase(q, candidate, sentence, passage), passage, sentence, candidate)
        return None

    # -- candidates -----------------------------------------------------------------------------

    def candidate(self, q: Question, passage: Passage, start: int, end: int) -> Optional[str]:
        """The first answer of the wanted kind in ``passage.text[start:end]``."""
        text = passage.text
        sentence = text[start:end]
        question = q.text.lower()
        ents = [(s - start, e - start, label) for s, e, label in self.entities(passage) if s >= start and e <= end]

        def fresh(value: str) -> bool:  # not just a repetition of the question
            return bool(value) and value.lower().strip("* ") not in question

        kind = q.kind
        if kind is Kind.TITLE:
            titles = [(m.start(), m.group(1)) for m in _TITLE.finditer(sentence) if fresh(m.group(1))]
            if not titles:
                return None
            low = sentence.lower()
            for name in q.names:  # "Which movie earned Rami Malek the Oscar?": the title after the name
                at = low.find(name)
                if at >= 0:
                    after = [t for pos, t in titles if pos > at]
                    if after:
                        return after[0]
            return titles[0][1]
        clean = sentence.replace("*", " ")
        if kind is Kind.DATE:
            m = _DATE_MDY.search(sentence)
            if m:
                month, day, year = MONTHS.index(m.group(1).lower()) + 1, int(m.group(2)), m.group(3)
            else:
                m = _DATE_DMY.search(sentence)
                if not m:
                    return None
                day, month, year = int(m.group(1)), MONTHS.index(m.group(2).lower()) + 1, m.group(3)
            if q.date_format == "mm/dd/yyyy":
                return f"{month:02d}/{day:02d}/{year}"
            return m.group(0)
        if kind is Kind.YEAR:
            years = [y for y in _YEAR.findall(sentence) if y not in q.years]
            return years[0] if years else None
        if kind is Kind.RANK:
            for s, e, label in ents:
                if label == "ORDINAL":
                    m = _ORDINAL.search(sentence[s:e])
                    if m:
                        return m.group(1)
            m = _ORDINAL.search(sentence)
            return m.group(1) if m else None
        if kind is Kind.NUMBER:
            spans = [(s, e) for s, e, label in ents if label in ("CARDINAL", "QUANTITY", "MONEY")]
            spans = [(s, e) for s, e in spans if re.search(r"\d", sentence[s:e])]
            if not spans:
                spans = [m.span() for m in _NUMBER.finditer(sentence)]
            for s, e in spans:
                value = sentence[s:e].strip()
                score_like = sentence[max(0, s - 1):s] == "-" or sentence[e:e + 1] == "-" or "-" in value
                in_date = bool(re.match(rf"\s+{_MONTH}\b", sentence[e:]) or re.search(rf"\b{_MONTH}\s+$", sentence[:s]))
                if not (score_like or in_date) and not _YEAR.fullmatch(value) and fresh(value):
                    return value
            return None
        if kind is Kind.STADIUM:
            m = _STADIUM.search(clean)
            return m.group(1) if m and fresh(m.group(1)) else None
        if kind is Kind.PLACE:
            if re.search(r"\b(virtual|online)\b", sentence, re.I):
                return "Virtual"
            places = [(s, e) for s, e, label in ents if label in ("GPE", "LOC")]
            if places:
                s, e = places[0]
                # "Long Beach, California": a place and the region after it.
                for s2, e2 in places[1:]:
                    if sentence[e:s2] == ", ":
                        e = e2
                    else:
                        break
                return sentence[s:e] if fresh(sentence[s:e]) else None
            m = re.search(r"\b(?:in|at)\s+((?:[A-Z][\w'’.-]*)(?:\s+[A-Z][\w'’.-]*)*(?:,\s+[A-Z][\w'’.-]*(?:\s+[A-Z][\w'’.-]*)*)?)", clean)
            return m.group(1).rstrip(".") if m and fresh(m.group(1)) else None
        labels = {
            Kind.PERSON: ("PERSON",),
            Kind.TEAM: ("GPE", "NORP", "LOC"),
            Kind.OTHER: ("PERSON", "GPE", "ORG", "DATE", "CARDINAL"),
        }[kind]
        found: List[Tuple[int, str]] = []  # (position, value)
        for s, e, label in ents:  # the entities of a wanted label, in reading order
            value = re.sub(r"\s+\d[\d\s-]*$", "", sentence[s:e].strip("* "))  # "West Germany 4-2"
            if value.lower().startswith("the "):
                value = value[4:]
            if label in labels and fresh(value) and not all(w in _NOT_NAMES for w in value.split()):
                found.append((s, value))
                break
        if not found or kind is Kind.TEAM:
            # Capitalized phrases: without spaCy, where it found no entity of that kind, and for a
            # team (the subject of the sentence, which small pipelines often miss); a person's
            # name has two words at least ("Polish" in "The Polish novelist ..." is none).
            for m in _CAPITALIZED.finditer(clean):
                value = _strip_leading(m.group(0)).rstrip(".")
                if not value or not fresh(value) or _YEAR.search(value) or any(w in _NOT_NAMES for w in value.split()):
                    continue
                if kind is Kind.PERSON and len(value.split()) < 2:
                    continue
                found.append((m.start(), value))
                break
        return min(found)[1] if found else None

    # -- phrasing -------------------------------------------------------------------------------

    @staticmethod
    def phrase(q: Question, candidate: str, sentence: str, passage: Passage) -> str:
        """The answer as the pipeline says it: the bare answer, or for some question forms the
        supporting sentence with its source."""
        if q.wordy:
            return f"{' '.join(sentence.replace('*', '').split())} [source: {passage.source}]"
        return candidate
