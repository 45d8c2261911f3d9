"""A toy answer type defined outside the package, as a user's plugin would: yes/no answers."""
from __future__ import annotations

import re
from typing import Optional, Sequence

from defan_pytest.scoring.types import BaseAnswerType, Context, Entity, Extraction

_WORDS = {"yes": "yes", "true": "yes", "y": "yes", "no": "no", "false": "no", "n": "no"}
_WORD = re.compile(r"\b(yes|no|true|false)\b", re.I)


class YesNo(BaseAnswerType):
    """Yes or no, in a few spellings."""

    name = "yesno"

    def gold_value(self, alternative: str) -> Optional[str]:
        return _WORDS.get(alternative.strip().lower())

    def bare(self, text: str, ctx: Context) -> Optional[str]:
        return _WORDS.get(text.strip(" .!").lower())

    def candidates(
        self, text: str, ctx: Context, entities: Optional[Sequence[Entity]], ner_available: bool
    ) -> Extraction:
        m = _WORD.search(text)
        return Extraction(_WORDS[m.group(1).lower()] if m else None, False, how="yesno")

    def parse_claim(self, claim: str) -> Optional[str]:
        return claim if claim in ("yes", "no") else None
