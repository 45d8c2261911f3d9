"""The ``name`` answer type: people, teams, films, countries, organisations.

A name matches by folded tokens (SCORING.md, names and places); a response that says no prize
was awarded, in English or in French, German, Spanish, Portuguese or Italian, claims ``none``,
which only an empty gold accepts (clarification 7).  A comma inside a title or name does not
make two names; a descriptive clause after a name (``X, founder of Y``) makes the response
misaligned, and X is its claim (clarification 9).
"""
from __future__ import annotations

import re
from typing import FrozenSet, List, Optional, Tuple

from defan_pytest.scoring.text.countries import english_countries, is_country_of, is_demonym, official_short
from defan_pytest.scoring.text.names import fold, is_given_name, name_tokens, names_match
from defan_pytest.scoring.text.no_prize import NONE_WORDS, first_none, is_none_statement, none_spans
from defan_pytest.scoring.text.tokens import folded_tokens, looks_like_sentence
from defan_pytest.scoring.types.entity import Candidate, EntityAnswerType
from defan_pytest.scoring.types.base import NONE_CLAIM, Context, Gold

#: Named-entity labels that can be a name answer.
NAME_LABELS = frozenset({"PERSON", "ORG", "GPE", "NORP", "WORK_OF_ART", "FAC", "LOC", "EVENT", "PRODUCT"})

# A capitalized word after the first: the statement names someone ("X won it in 1929, so ...").
_NAMED = re.compile(r"(?<=\s)[A-Z][a-z]")
_REFUSAL = re.compile(
    r"\b(?:i\s+(?:don't|do\s+not|cannot|can't|am\s+unable|'m\s+unable|am\s+not\s+able)|"
    r"as\s+an\s+ai|i'm\s+sorry|i\s+apologi[sz]e|unable\s+to\s+(?:find|provide|determine))",
    re.I,
)
# Asks for a person: two comma-separated person-shaped names then make two answers.
_ASKS_PERSON = re.compile(r"\bwho(?:m)?\b|first\s+name|\bperson\b|\blaureate\b", re.I)
_LIST_ITEM = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s")
_TWO_NAMES = re.compile(r"\s+(?:and|&|or)\s+|\s*[;/]\s*")
_SUFFIX_PARTS = frozenset({"jr", "sr", "ii", "iii", "iv"})
# Words that may stand lower-case inside a title or name ("Good Night, and Good Luck",
# "Ebbing, Missouri", "Santiago Ramón y Cajal"); any other lower-case word after a comma opens
# a description ("X, founder of Y", "X, German physicist").
_TITLE_WORDS = frozenset(
    "and or of the a an in on at to for with from by de del della di da du la le y von van der den dos das e et und".split()
)


def _descriptive(part: str) -> bool:
    """Is this comma-separated part a description of the name before it?"""
    words = [w.strip(".,;:!?()\"'") for w in part.split()]
    return looks_like_sentence(part) or any(
        w and w[0].islower() and w.lower() not in _TITLE_WORDS for w in words
    )


def _person_shaped(part: str) -> bool:
    words = part.split()
    return 2 <= len(words) <= 4 and all(w[:1].isupper() or w.lower() in _TITLE_WORDS for w in words) and not any(
        c.isdigit() for c in part
    )


_WORDLIKE = re.compile(r"[^\W_]+")


def _words(t: str) -> int:
    """Words of a short text (a dash or other punctuation standing alone is no word)."""
    return sum(1 for w in t.split() if _WORDLIKE.search(w))


# "Parasite (기생충)": a name followed by its original-script form in brackets is one name.
_SCRIPT_GLOSS = re.compile(r"^([^()]+?)\s*\(([^()A-Za-z]+)\)$")


# A run of capitalised words is a name, even one that begins with a word meaning "nobody"
# ("Nobody Special", "Nadie Gómez"); a statement of none is not written so.
_NAME_SHAPED = re.compile(r"(?:[A-Z][\w'’.-]*\s+)+[A-Z][\w'’.-]*")
# More than one sentence ("Nikdo. Cena nebyla v roce 1935 udělena."): not a short statement.
_SENTENCES = re.compile(r"[.!?;。।։](?:\s+|$)(?=\S)")


def _names_someone(t: str) -> bool:
    m = first_none(t)
    return m is not None and m[2].lower() in NONE_WORDS and bool(_NAME_SHAPED.fullmatch(t))


def _sentence_start(text: str, at: int) -> int:
    """Where the sentence holding ``at`` begins."""
    head = 0
    for m in _SENTENCES.finditer(text, 0, at):
        head = m.end()
    return head


_YEAR = re.compile(r"(?<!\d)\d{4}(?!\d)")


def _restates_year(t: str, ctx: Context) -> bool:
    """Does ``t`` hold the year the question asks about, and a lower-case word that is no
    title particle?  A sentence in any language restates the year around the answer ("Ang Netherlands ang pumangalawa sa 1978 FIFA World
    Cup", "Literacką Nagrodę Nobla za rok 2018 otrzymała Olga Tokarczuk"); a name does not."""
    words = t.split()
    if len(words) < 3 or not any(w[:1].islower() and w.lower() not in _TITLE_WORDS for w in words):
        return False  # "Saitama Stadium 2002": a name with a year in it, no prose around it
    return any(re.search(rf"(?<!\d){y}(?!\d)", ctx.question) for y in _YEAR.findall(t))


# "Louise Fletcher for One Flew Over the Cuckoo's Nest": a person and what they won it for.
_FOR_CLAUSE = re.compile(r"^(?P<who>[^\s,]+(?:\s+[^\s,]+){1,3})\s+for\s+(?P<what>[A-Z0-9]\S*.*)$")


def _for_clause(t: str, ctx: Context) -> bool:
    """A person-shaped name, ``for`` and a title, where the question asks for a person: a
    descriptive clause after the name (clarification 9)."""
    m = _FOR_CLAUSE.match(t) if " for " in t else None
    return m is not None and bool(_ASKS_PERSON.search(ctx.question)) and _person_shaped(m.group("who"))


def _bare_name(t: str, ctx: Context) -> Optional[str]:
    if len(t) > 90:
        return None
    if is_none_statement(t) or (
        not _names_someone(t) and _words(t) <= 12 and first_none(t) and not _REFUSAL.search(t)
        and not _SENTENCES.search(t.rstrip(".!?;。।։ "))
        # A short statement that there was none answers the question, right (an empty gold)
        # or wrong ("Il n'y a pas eu de lauréat" for a year with a laureate): aligned.
        and (ctx.empty_gold or not looks_like_sentence(t) or not _NAMED.search(t))
    ):
        return NONE_CLAIM
    m = _SCRIPT_GLOSS.match(t)
    if m and any(c.isalpha() for c in m.group(2)):
        inner = _bare_name(m.group(1), ctx)
        if inner is not None:
            return inner
    gaz = ctx.gazetteer
    if gaz is not None and t in gaz:
        return t  # a known answer, even one that reads like a sentence ("It Happened One Night")
    if len(t.split()) > 10 or looks_like_sentence(t):
        return None
    if _restates_year(t, ctx) or _for_clause(t, ctx):
        return None
    if _LIST_ITEM.search(t) or "(" in t:
        return None  # a list item, or a name with a comment in brackets
    shared = _shared_surname(t, ctx) if " and " in t or " & " in t else None
    if shared is not None:
        # "Joel and Ethan Coen": two people, aligned only where the gold names them jointly.
        return shared[0] if _joint_in_gold(shared, ctx) else None
    # Two names where one is asked ("Pierre Curie and Marie Curie", "Curie; Becquerel").
    parts = [p for p in _TWO_NAMES.split(t) if p.strip()]
    real = [p for p in parts if fold(p).strip(" .") not in _SUFFIX_PARTS]
    if len(real) >= 2 and sum(1 for p in real if p[:1].isupper()) >= 2:
        return None
    # A comma is part of a title or name ("Three Billboards Outside Ebbing, Missouri",
    # "Robert Cecil, 1st Viscount Cecil of Chelwood"), unless what follows it describes the
    # name ("X, founder of Y") or the parts are two names: two known answers, or two
    # person-shaped names where the question asks for a person ("Pierre Curie, Marie Curie").
    commas = [p.strip() for p in t.split(",")]
    if len(commas) >= 2:
        rest = [p for p in commas[1:] if fold(p).strip(" .") not in _SUFFIX_PARTS]
        if any(_descriptive(p) for p in rest):
            return None
        if gaz is not None and sum(1 for p in commas if p and p in gaz) >= 2:
            return None
        if _ASKS_PERSON.search(ctx.question) and len(rest) >= 1 and _person_shaped(commas[0]) and all(
            _person_shaped(p) for p in rest
        ):
            return None
    toks = name_tokens(t)
    if not toks or ctx.profile.is_generic(toks):
        return None  # "Best Supporting Actress": a category, not a name
    if len(toks) == 1 and t[:1].isupper() and is_demonym(t):
        return None  # "Brazilian": an adjective of nationality, not the team's or country's name
    return t


# Two given names and one surname ("Joel and Ethan Coen", "Pierre & Marie Curie").
_SHARED_SURNAME = re.compile(r"\b([A-Z][\w'’-]+)\s+(?:and|&)\s+([A-Z][\w'’-]+)\s+([A-Z][\w'’-]+)\b")


_CAPITALIZED_BEFORE = re.compile(r"[A-Z][\w'’.-]*[ \t]+$")


def _shared_surname(t: str, ctx: Optional[Context]) -> Optional[Tuple[str, str]]:
    """``(first person, second person)`` when ``t`` names two people with a shared surname
    (clarification 26): where the question asks for a person, or the given names are known."""
    m = _SHARED_SURNAME.fullmatch(t)
    if m is None or is_given_name(m.group(3)):
        return None
    asks_person = ctx is not None and _ASKS_PERSON.search(ctx.question) is not None
    if not asks_person and not (is_given_name(m.group(1)) and is_given_name(m.group(2))):
        return None
    return f"{m.group(1)} {m.group(3)}", f"{m.group(2)} {m.group(3)}"


def _joint_in_gold(people: Tuple[str, str], ctx: Context) -> bool:
    """Does one accepted answer of the row name these two people jointly (clarification 21's
    ``Joel Coen and Ethan Coen``)?  The row's known answers hold the gold as written."""
    gaz = ctx.gazetteer
    if gaz is None:
        return False
    a, b = people
    return any(f"{x}{sep}{y}" in gaz for x, y in ((a, b), (b, a)) for sep in (" and ", " & ", ", "))


_AND_OR_COMMA = re.compile(r"\s+and\s+|\s*,\s*")
_NAME_PARTICLES = frozenset("von van der den de del della di da du la le y bin ibn".split())


def _person(part: str) -> bool:
    """A full personal name: two to four capitalized words (name particles allowed), no digit."""
    words = part.split()
    return (
        2 <= len(words) <= 4
        and not any(c.isdigit() for c in part)
        and words[0][:1].isupper()
        and all(w[:1].isupper() or w in _NAME_PARTICLES for w in words)
    )


def _people(alt: str) -> Tuple[str, ...]:
    """A name gold's `` and ``- or comma-joined full personal names as separate accepted answers
    (SCORING.md clarification 21: ``Joel Coen and Ethan Coen``, ``Barbra Streisand, Katharine
    Hepburn``); a title stays one (``Come Back, Little Sheba``, ``Min and Bill``,
    ``Robert Cecil, 1st Viscount Cecil of Chelwood``).  The parts must all be full names and
    read as people: they share a surname, or one begins with a known given name."""
    parts = [p.strip() for p in _AND_OR_COMMA.split(alt)]
    if len(parts) < 2 or not all(_person(p) for p in parts):
        return (alt,)
    surnames = {p.split()[-1].casefold() for p in parts}
    if len(surnames) == 1 or any(is_given_name(p.split()[0]) for p in parts):
        return tuple(parts)
    return (alt,)


class NameType(EntityAnswerType):
    """Names, matched token by token with initials, short forms and transliterations allowed."""

    name = "name"
    ner_labels = NAME_LABELS
    labels: FrozenSet[str] = frozenset(
        """answer final result laureate laureates winner winners recipient recipients name
        champion champions team nation country film movie title picture actor actress director
        person awardee laureat gagnant vainqueur gewinner preistrager sieger ganador vencedor
        vincitore nome nombre""".split()
    )

    def bare(self, text: str, ctx: Context) -> Optional[str]:
        return _bare_name(text, ctx)

    def gold_alternatives(self, alternative: str) -> Tuple[str, ...]:
        return _people(alternative)

    def statements(self, text: str, ctx: Optional[Context] = None) -> List[Candidate]:
        # A statement of none claims none for its whole sentence: the prize or the year it
        # names before it ("Премію 1928 року не присуджували") is no candidate, unless it is a
        # known answer ("Frank B. Kellogg won it in 1929, so in 1928 there was none").
        out: List[Candidate] = []
        gaz = ctx.gazetteer if ctx is not None else None
        for s, e in none_spans(text):
            head = _sentence_start(text, s)
            if head < s and (gaz is None or gaz.find(text[head:s], folded_tokens(text[head:s]))):
                head = s
            out.append((head, e, NONE_CLAIM, "none"))
        if " and " in text or " & " in text:
            for m in _SHARED_SURNAME.finditer(text):
                if _CAPITALIZED_BEFORE.search(text, 0, m.start()):
                    continue  # "Wilhelm Wien and Max Planck": "Wien" is no given name
                people = _shared_surname(m.group(), ctx)
                if people is not None:  # "Joel and Ethan Coen": the first person is the claim
                    out.append((m.start(), m.end(), people[0], "people"))
        return out

    def correct(self, claim: str, gold: Gold) -> bool:
        if any(_names_agree(claim, g) for g in gold.alternatives):
            return True
        # "The Coen Brothers": the family name of every accepted answer names them all.
        family = _family(claim)
        return family is not None and all(names_match(family, g) for g in gold.alternatives)

    def equivalent(self, a: str, b: str) -> bool:
        return _names_agree(a, b) or _names_agree(b, a)


def _names_agree(claim: str, gold: str) -> bool:
    return names_match(claim, gold) or _same_country(claim, gold) or _initialism(claim, gold)


# A family or a group named by its surname ("the Coen brothers", "the Curies"): a small list of
# the nouns, in English (the benchmark's language).
_COLLECTIVE = frozenset("brothers sisters siblings family couple duo".split())


def _family(claim: str) -> Optional[str]:
    """The surname of a collective name (``The Coen Brothers`` -> ``Coen``), else ``None``."""
    toks = name_tokens(claim)
    if len(toks) == 2 and toks[1] in _COLLECTIVE and toks[0] not in _COLLECTIVE:
        return toks[0]
    return None


_INITIALISM = re.compile(r"[A-Z]{2,6}")
_INITIALISM_SKIP = frozenset("of the and for de des la le du et".split())


def _initialism(claim: str, gold: str) -> bool:
    """Is ``claim`` the initials of ``gold``'s words (``ILO`` for ``International Labour
    Organization``; ``of``, ``the``, ``and``, ``for`` left out or kept)?  Not a person's
    initials: a gold that opens with a given name is a person (``R. H.`` names no one)."""
    if not _INITIALISM.fullmatch(claim.strip()):
        return False
    letters = claim.strip().lower()
    words = [w for w in re.split(r"[\s-]+", fold(gold)) if w[:1].isalpha()]
    if len(words) < 2 or is_given_name(words[0]):
        return False
    full = "".join(w[0] for w in words)
    short = "".join(w[0] for w in words if w not in _INITIALISM_SKIP)
    return letters in (full, short)


def _same_country(claim: str, gold: str) -> bool:
    """Does ``claim`` name, in some language, the country ``gold`` names in English
    (``Deutschland`` for ``West Germany``, ``Holland`` for ``Netherlands``, ``Federal Republic of
    Germany``: clarification 18's other names, for a country)?  Only a gold that ends with an English country name asks for
    the index of every language (built on first need)."""
    if len(claim) > 60 or len(claim.split()) > 6 or not is_country_of(gold):
        return False
    short = official_short(claim)  # "Federal Republic of Germany": Germany
    if short is not None and names_match(short, gold):
        return True
    return any(names_match(english, gold) for english in english_countries(claim))
