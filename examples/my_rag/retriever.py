"""Retrieval: BM25 over the passages (tokenized by scikit-learn), with a small query expansion.

The question's wording rarely matches the prose ("Who emerged as the victor ..." against
"Uruguay won ..."), so a few question words bring their prose counterparts along.
"""
from __future__ import annotations

import re
from typing import List, Sequence, Tuple

from .knowledge import Passage

#: question word -> words the knowledge base uses for the same thing
EXPANSIONS = {
    "medicine": "physiology medicine",
    "economics": "economic sciences economics",
    "economic": "economic sciences economics",
    "winner": "won champions",
    "won": "won champions",
    "win": "won champions",
    "victor": "won champions",
    "victorious": "won champions",
    "triumphant": "won champions",
    "champion": "won champions",
    "champions": "won champions",
    "runner": "runners-up second",
    "second": "runners-up second",
    "lost": "runners-up second",
    "venue": "held took place",
    "site": "held took place",
    "location": "held took place",
    "occur": "held took place",
    "place": "held took place",
    "where": "held took place",
    "birthdate": "born",
    "birthday": "born",
    "birth": "born",
    "born": "born",
    "ranking": "ranked",
    "rankings": "ranked",
    "rank": "ranked",
    "position": "ranked",
    "standing": "ranked",
    "placed": "ranked placed",
    "admitted": "admitted joined member",
    "membership": "admitted joined member",
    "member": "admitted joined member",
    "join": "admitted joined member",
    "joined": "admitted joined member",
    "accepted": "admitted joined member",
    "attendance": "attendance attended watched spectators crowd",
    "attended": "attendance attended watched spectators crowd",
    "turnout": "attendance attended watched spectators crowd",
    "audience": "attendance attended watched spectators crowd",
    "crowd": "attendance attended watched spectators crowd",
    "finisher": "runners-up second",
    "spectators": "attendance attended watched spectators crowd",
    "oscar": "academy awards best",
    "oscars": "academy awards best",
    "un": "united nations",
}

_WORD = re.compile(r"[A-Za-z]+")
#: How much an added word counts, against a word of the question itself.
EXPANSION_WEIGHT = 0.5
_YEAR = re.compile(r"\b(?:1[89]|20)\d\d\b")


def expansion(question: str) -> List[str]:
    """The words added to a question: its years once more (most questions are about one year
    of something the knowledge base has many years of), and the prose words its own words
    stand for.

    >>> expansion("Where was the 1930 FIFA World Cup final held?")
    ['1930', 'took', 'place']
    """
    own = [w.lower() for w in _WORD.findall(question)]
    extra = dict.fromkeys(_YEAR.findall(question))  # each added word once, in order
    for w in own:
        for x in EXPANSIONS.get(w, "").split():
            if x not in own:
                extra[x] = None
    return list(extra)


def expand_query(question: str) -> str:
    """The question and its :func:`expansion`, as one text."""
    return " ".join([question, *expansion(question)])


class BM25Retriever:
    """Okapi BM25 over scikit-learn's tokenizer (``CountVectorizer``: lower case, accents
    stripped, English stop words removed).

    A score is the BM25 score divided by the most the question could score (every word of it,
    known to the index or not, matched with a saturated term frequency), so it lies in [0, 1]:
    a question made of words the knowledge base never uses scores near 0.
    """

    def __init__(self, passages: Sequence[Passage], k1: float = 1.2, b: float = 0.75) -> None:
        import numpy as np
        from scipy.sparse import csr_matrix
        from sklearn.feature_extraction.text import CountVectorizer

        self.passages = list(passages)
        self.k1 = k1
        self.vectorizer = CountVectorizer(lowercase=True, strip_accents="unicode", stop_words="english")
        self.weights = None
        if not self.passages:
            return
        counts = self.vectorizer.fit_transform([p.indexed_text for p in self.passages]).tocoo()
        n = len(self.passages)
        df = np.bincount(counts.col, minlength=counts.shape[1])
        self.idf = np.log(1.0 + (n - df + 0.5) / (df + 0.5))
        self.unknown_idf = float(np.log(1.0 + (n + 0.5) / 0.5))  # a word no passage holds
        length = np.bincount(counts.row, weights=counts.data, minlength=n)
        norm = k1 * (1.0 - b + b * length / max(1e-9, float(length.mean())))
        tf = counts.data.astype(float)
        w = self.idf[counts.col] * tf * (k1 + 1.0) / (tf + norm[counts.row])
        self.weights = csr_matrix((w, (counts.row, counts.col)), shape=counts.shape)
        self._analyzer = self.vectorizer.build_analyzer()

    def search(self, question: str, k: int) -> List[Tuple[Passage, float]]:
        """The ``k`` best passages for ``question`` with their scores (0 to 1), best first;
        passages that share no word with the question are never returned."""
        if self.weights is None:
            return []
        own, extra = self._analyzer(question), self._analyzer(" ".join(expansion(question)))
        vocabulary = self.vectorizer.vocabulary_

        def most(tokens: List[str]) -> float:
            return sum(float(self.idf[vocabulary[t]]) if t in vocabulary else self.unknown_idf for t in tokens)

        # The question's own words count fully, the added ones for EXPANSION_WEIGHT: a rare name
        # in the question ("Benin") must outweigh the common words its paraphrase brought in.
        best = most(own) + EXPANSION_WEIGHT * most(extra)
        if not own or best <= 0:
            return []
        query = self.vectorizer.transform([" ".join(own)]) + EXPANSION_WEIGHT * self.vectorizer.transform([" ".join(extra)])
        scores = (self.weights @ query.T).toarray().ravel() / (best * (self.k1 + 1.0))
        order = (-scores).argsort(kind="stable")[:k]  # ties: the earlier passage first
        return [(self.passages[i], float(scores[i])) for i in order if scores[i] > 0]
