"""The knowledge base: prose files cut into passages.

A ``.md`` file: ``# Title`` and ``## Section`` headings, paragraphs separated by blank lines,
``> `` lines are editor's notes (not knowledge).  A ``.txt`` file: its first paragraph is the
title, every other paragraph a passage.  Each paragraph is one passage.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, List


@dataclass(frozen=True)
class Passage:
    """One paragraph of a knowledge file."""

    id: str  # "nobel_physics.md#12"
    source: str  # the file's name
    title: str  # the file's title
    section: str  # the ## heading above it, or ""
    text: str

    @property
    def indexed_text(self) -> str:
        """What the retriever indexes: the headings give context the paragraph may not repeat."""
        return " ".join(t for t in (self.title, self.section, self.text) if t)


def _paragraphs(text: str) -> List[str]:
    return [" ".join(p.split()) for p in re.split(r"\n\s*\n", text) if p.strip()]


def parse(text: str, source: str) -> List[Passage]:
    """The passages of one file's text (``source`` is its name; its suffix picks the format)."""
    passages: List[Passage] = []
    title, section = "", ""
    if source.endswith(".md"):
        for block in re.split(r"\n\s*\n", text):
            lines = [line for line in block.strip().splitlines() if not line.lstrip().startswith(">")]
            body: List[str] = []
            for line in lines:
                m = re.match(r"^(#{1,6})\s+(.*)$", line.strip())
                if m:
                    if len(m.group(1)) == 1:
                        title, section = m.group(2).strip(), ""
                    else:
                        section = m.group(2).strip()
                else:
                    body.append(line.strip())
            paragraph = " ".join(" ".join(body).split())
            if paragraph:
                passages.append(Passage(f"{source}#{len(passages)}", source, title, section, paragraph))
    else:
        paragraphs = _paragraphs(text)
        if paragraphs:
            title = paragraphs[0]
            for paragraph in paragraphs[1:]:
                passages.append(Passage(f"{source}#{len(passages)}", source, title, "", paragraph))
    return passages


def load(files: Iterable[Path]) -> List[Passage]:
    """Every passage of ``files``, in file order."""
    out: List[Passage] = []
    for path in files:
        out.extend(parse(path.read_text(encoding="utf-8"), path.name))
    return out
