"""The repository's example model, ``my-rag``: ``pytest --defan-model=my-rag --defan-domain=nobel``.

``my-rag`` is a small retrieval-augmented pipeline (``examples/my_rag``: BM25 retrieval over the
prose of ``examples/my_rag/knowledge``, a spaCy reader, no network and no LLM), registered the way
you would register your own application: one ``@defan_pytest.model`` function.  Its version
carries its knobs (``MY_RAG_TOP_K``, ``MY_RAG_KNOWLEDGE``; see ``examples/README.md``), so cached
answers are never reused across a change of knob.

For a quick first run, and for my-rag only, this file also gives the run a default sample
(:data:`DEFAULT_SAMPLE` prompts: ``--defan-sample`` overrides it, ``--defan-sample=100%`` runs
every prompt) and reads the public split from a copy beside the checkout
(``../shared/defan-public``) when ``DEFAN_DATA_DIR`` is not set and the copy is the pinned one;
otherwise the plugin finds the data as usual (user cache, then the pinned download).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

import defan_pytest
from defan_pytest.settings import model_names

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "examples"))

from my_rag import Pipeline  # noqa: E402  (examples/ is put on the path just above)

#: The model name, and the prompts a run of it asks unless --defan-sample says otherwise.
MODEL = "my-rag"
DEFAULT_SAMPLE = "600"
#: A copy of the DefAn public split beside the checkout, used when present.
LOCAL_DATA = HERE.parent / "shared" / "defan-public"

PIPELINE = Pipeline.from_env()  # reads the knobs; the knowledge base loads on the first question
_DEFAULTED = pytest.StashKey[bool]()


@defan_pytest.model(MODEL, version=PIPELINE.version)
def my_rag(prompt: str) -> str:
    return PIPELINE.answer(prompt)


def _option(config: pytest.Config, name: str) -> object:
    value = config.getoption(name, None)
    if value is None or value == []:
        try:
            value = config.getini(name)
        except ValueError:  # defan-pytest not loaded (-p no:defan)
            value = None
    return value


def _asks_us(config: pytest.Config) -> bool:
    """Whether the session asks my-rag (--defan-model is repeatable: a list of models)."""
    return MODEL in model_names(_option(config, "defan_model"))


@pytest.hookimpl(tryfirst=True)  # before defan-pytest reads its options
def pytest_configure(config: pytest.Config) -> None:
    if not _asks_us(config):
        return
    if PIPELINE.problems:
        raise pytest.UsageError("my-rag: " + "; ".join(PIPELINE.problems))
    if not _option(config, "defan_sample"):
        config.option.defan_sample = DEFAULT_SAMPLE
        config.stash[_DEFAULTED] = True
    dataset = str(_option(config, "defan_dataset") or "public").strip()
    if dataset == "public" and not os.environ.get("DEFAN_DATA_DIR", "").strip() and LOCAL_DATA.is_dir():
        from defan_pytest.dataset import DatasetError, resolve_public_dir

        try:
            resolve_public_dir(data_dir=LOCAL_DATA)  # every file present, with the pinned digests
        except DatasetError:
            return  # not the pinned copy: the plugin's own lookup decides
        os.environ["DEFAN_DATA_DIR"] = str(LOCAL_DATA)


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    if not _asks_us(config):
        return None
    sample = _option(config, "defan_sample")
    note = " (the default of conftest.py; --defan-sample to change)" if config.stash.get(_DEFAULTED, False) else ""
    return [f"my-rag: {PIPELINE.config.describe()}; sample {sample}{note}"]
