"""DefAn's domain profiles (:class:`defan_pytest.scoring.profile.DomainProfile`): what each of
the eight domains means to the scorer, registered when the dataset package loads.

All eight share the benchmark's subject words (a span made only of them, ``Nobel Prize``,
``Academy Award``, ``FIFA World Cup``, is never a claim) and the key concepts of its questions
(a ``Runner-up`` column answers "Which nation came second?"); ``math`` answers are worked
solutions, which claim their last number (SCORING.md step 3).  A domain of a user's own split
that names none of these gets :data:`DEFAN` (registered for every other domain); a user gives
another with :func:`defan_pytest.scoring.profile.register_profile`.
"""
from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType
from typing import Mapping

from defan_pytest.scoring.profile import DomainProfile, register_profile

__all__ = ["DEFAN", "PROFILES"]

#: The benchmark's own subject words, in English and in the five languages of clarification 4.
_SUBJECT_WORDS = frozenset(
    """academy award awards oscar oscars nobel prize prizes best actor actress picture director
    supporting leading lead role original adapted screenplay foreign feature animated
    directing film movie fifa world cup final finals team national physics chemistry medicine
    physiology literature peace economic economics sciences science memorial laureate
    laureates winner winners committee ceremony category edition qs university universities
    rankings ranking rank conference un united nations oic organisation organization islamic
    cooperation member state states membership general assembly security council
    swedish norwegian royal bank riksbank alfred match game tournament
    nobelpreis prix preis premio prêmio prémio physik physique fisica física chimie
    chemie quimica química chimica medecine médecine medizin medicina litterature littérature
    literatur literatura letteratura paix frieden paz pace economie économie economia
    economía wirtschaftswissenschaften laureat lauréat preistrager preisträger ganador vencedor
    vincitore gagnant meilleur meilleure bester beste mejor melhor miglior pelicula película
    filme coupe monde weltmeisterschaft copa mundo mundial coppa mondo""".split()
)
#: German compounds of those words ("Literaturnobelpreis", "Friedensnobelpreises").
_SUBJECT_ENDINGS = ("preis", "preises", "preistrager", "preistragerin")

#: What a key and a question can both say in other words: a "Runner-up" column answers "Which
#: nation came second?" and "Who lost the final?"; "Winner" answers "Who won?".
_KEY_CONCEPTS = tuple(
    frozenset(group.split())
    for group in (
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
)

#: The profile every DefAn domain shares.
DEFAN = DomainProfile(generic_words=_SUBJECT_WORDS, generic_endings=_SUBJECT_ENDINGS, key_concepts=_KEY_CONCEPTS)

#: Domain id -> its profile (the ids of :data:`defan_pytest.dataset.domains.DOMAINS`).
PROFILES: Mapping[str, DomainProfile] = MappingProxyType({
    "sports": DEFAN,
    "census": DEFAN,
    "nobel": DEFAN,
    "entertainment": DEFAN,
    "world_org": DEFAN,
    "qs_ranking": DEFAN,
    "conference_venue": DEFAN,
    "math": replace(DEFAN, worked_solutions=True),
})

for _domain, _profile in PROFILES.items():
    register_profile(_domain, _profile)
register_profile(None, DEFAN)
del _domain, _profile
