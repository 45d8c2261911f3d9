"""my-rag: the example model of defan-pytest.

A small retrieval-augmented question answerer with no network and no LLM: a TF-IDF retriever
(scikit-learn) over prose passages in ``knowledge/``, and a reader that takes the answer of the
kind the question asks for out of the best passages with spaCy's named entities (regular
expressions without a spaCy pipeline).  It is right when the knowledge base holds the passage,
and wrong or silent when it does not, as a real RAG system is.

    >>> from my_rag import Pipeline
    >>> Pipeline().answer("Who won the Nobel Prize in Physics in 1921?")  # doctest: +SKIP
    'Albert Einstein'

Knobs (environment variables, read by :meth:`Pipeline.from_env`): ``MY_RAG_TOP_K``,
``MY_RAG_KNOWLEDGE`` and ``MY_RAG_SPACY`` (see :mod:`my_rag.config`).
"""
from .config import Config, available_knowledge
from .pipeline import Pipeline, PipelineError

__all__ = ["Config", "Pipeline", "PipelineError", "available_knowledge"]
