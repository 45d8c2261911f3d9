"""The pipeline: retrieve, read, answer (or refuse).  Loaded on the first question."""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, List, Mapping, Optional, Tuple

from . import knowledge
from .config import Config, find_spacy_pipeline
from .reader import Question, Reader, Reading, analyse
from .retriever import BM25Retriever

#: Below this retrieval score nothing in the knowledge base is about the question: refuse.
MIN_SCORE = 0.08
NOTHING_RETRIEVED = "I don't know: my knowledge base has nothing on this question."
NOTHING_READ = "I could not find the answer in my sources."
#: spaCy components the reader does not need (only entities are read).
_EXCLUDE = ["parser", "tagger", "lemmatizer", "attribute_ruler", "senter", "morphologizer"]


class PipelineError(Exception):
    """A knob names something that cannot be loaded."""


def load_nlp(spec: str) -> Any:
    """The spaCy pipeline ``spec`` names, or ``None`` (``none``, or ``auto`` with no English
    pipeline installed): the reader then reads with regular expressions."""
    name = find_spacy_pipeline(spec)
    if name is None:
        return None
    try:
        import spacy

        nlp = spacy.load(name, exclude=_EXCLUDE)
    except (ImportError, OSError, ValueError) as exc:
        if spec.strip().lower() == "auto":
            return None
        raise PipelineError(f"cannot load spaCy pipeline {name!r}: {exc}") from exc
    if "ner" not in nlp.pipe_names:
        raise PipelineError(f"spaCy pipeline {name!r} has no 'ner' component")
    return nlp


@dataclass(frozen=True)
class Trace:
    """How one question was answered (for tests and for looking into a wrong answer)."""

    question: Question
    retrieved: List[Tuple[knowledge.Passage, float]]
    reading: Optional[Reading]
    answer: str


class Pipeline:
    """A retrieval-augmented question answerer over the shipped knowledge base.

    Thread-safe: the plugin calls a sync model from several threads at once.
    """

    def __init__(self, config: Optional[Config] = None, problems: Optional[List[str]] = None) -> None:
        self.config = config or Config()
        self.problems = list(problems or [])
        self._lock = threading.Lock()
        self._retriever: Optional[BM25Retriever] = None
        self._reader: Optional[Reader] = None
        self._version: Optional[str] = None

    @classmethod
    def from_env(cls, environ: Optional[Mapping[str, str]] = None) -> "Pipeline":
        """The pipeline the environment's knobs ask for (``MY_RAG_TOP_K``, ``MY_RAG_KNOWLEDGE``,
        ``MY_RAG_SPACY``); bad values are kept in ``problems`` and the defaults used."""
        config, problems = Config.from_env(environ)
        return cls(config, problems)

    @property
    def version(self) -> str:
        if self._version is None:
            self._version = self.config.version
        return self._version

    def load(self) -> "Pipeline":
        """Read the knowledge base, index it and load the reader (once)."""
        with self._lock:
            if self._retriever is None:
                passages = knowledge.load(self.config.files())
                reader = Reader(load_nlp(self.config.spacy))
                self._retriever = BM25Retriever(passages)
                self._reader = reader
        return self

    @property
    def passages(self) -> List[knowledge.Passage]:
        self.load()
        assert self._retriever is not None
        return self._retriever.passages

    @property
    def reader(self) -> Reader:
        self.load()
        assert self._reader is not None
        return self._reader

    def trace(self, question: str) -> Trace:
        """Answer ``question``, keeping every step."""
        self.load()
        assert self._retriever is not None and self._reader is not None
        q = analyse(question)
        retrieved = self._retriever.search(question, self.config.top_k)
        if not retrieved or retrieved[0][1] < MIN_SCORE:
            return Trace(q, retrieved, None, NOTHING_RETRIEVED)
        reading = self._reader.read(q, retrieved)
        return Trace(q, retrieved, reading, reading.answer if reading else NOTHING_READ)

    def answer(self, question: str) -> str:
        """A short answer to ``question``, a sentence for some question forms, or a refusal."""
        return self.trace(question).answer
