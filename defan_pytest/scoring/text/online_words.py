"""Words that say an event was held online or virtually, in many languages (SCORING.md
clarifications 10, 16 and 18).

Hand-written, one data module: no library (CLDR, Babel, dateparser) records a word for
"online".  :data:`ONLINE_WORD` holds English and the five languages of clarification 4 (read
in any response); :data:`OTHER_ONLINE_WORD` one entry a language for the rest, mostly the
international ``virtual`` and ``online`` in each language's spelling and inflection.
"""
from __future__ import annotations

__all__ = ["ONLINE_WORD", "OTHER_ONLINE_WORD"]

ONLINE_WORD = (
    r"(?:online|virtual(?:ly)?|remote(?:ly)?|en\s+ligne|virtuel(?:le)?(?:ment)?|virtuell|"
    r"en\s+l[ií]nea|virtualmente|a\s+distanza)"
)
OTHER_ONLINE_WORD = (
    r"(?:virtu[aá]ln\w*|virtuell\w*|virtueel|virtuaali\w*|virtuális\w*|virtual[aăi]\w*|"  # cs sk sv da nl fi hu ro
    r"wirtualn\w*|виртуальн\w*|віртуальн\w*|онлайн\w*|"  # pl ru bg uk
    r"digital(?:t|mente|ement)?|digitaal|digitaalisesti|"  # sv da no, es it pt, nl fi
    r"en\s+l[ií]nia|ar[\s-]lein|dalam\s+talian|secara\s+maya|secara\s+daring|daring|"  # ca cy ms id
    r"çevrim\s*içi|sanal\s+olarak|trực\s+tuyến|"  # tr vi
    r"ออนไลน์|מקוון|וירטואלי\w*|افتراضي\w*|عبر\s+الإنترنت|آنلاین|مجازی|"  # th he ar fa
    r"ऑनलाइन|वर्चुअल|mtandaoni|kwa\s+njia\s+ya\s+mtandao|διαδικτυακ\w*|εικονικ\w*)"  # hi sw el
)
