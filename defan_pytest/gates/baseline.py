"""What the regression gate says of its baseline's own level verdict.

A default-branch run keeps its report as the next baseline whatever its level verdict (a main
that fails one limit must still give its pull requests a regression verdict), so a pull request
may be compared with a baseline that itself failed its levels.  The comparison is judged all the
same, and beside its verdict every output says so: "no regression" then means "no worse than a
run that failed".  :func:`failed_levels` reads the breaches a saved report states (into the
comparison's ``baseline`` block, ``failed_levels``); :func:`levels_note` is the one sentence the
terminal, the step summary, ``defan compare`` and the HTML page show.

Nothing here judges anything again: the baseline's verdict is the one its own run recorded.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["SHOWN_BREACHES", "failed_levels", "levels_note"]

#: The baseline's breaches a note names (the rest are counted).
SHOWN_BREACHES = 3


def failed_levels(report: Mapping[str, Any]) -> list[str] | None:
    """The messages of the limits a saved report (its JSON) failed, when its level gate failed
    (``gate_status`` ``fail``); ``None`` when it did not fail (or records no verdict)."""
    if report.get("gate_status") != "fail":
        return None
    return [
        str(v.get("message") or f"{v.get('scope')}: {v.get('metric')}")
        for v in report.get("gate") or () if isinstance(v, Mapping) and v.get("status") in ("fail", "insufficient")
    ]


def levels_note(baseline: Mapping[str, Any] | None) -> str | None:
    """The sentence said beside the regression verdict when the baseline failed its levels (a
    comparison's ``baseline`` block); ``None`` otherwise.  Its breaches are the baseline's text:
    a caller makes the sentence inert for where it goes."""
    breaches = (baseline or {}).get("failed_levels")
    if breaches is None:
        return None
    shown = "; ".join(str(b) for b in breaches[:SHOWN_BREACHES])
    more = len(breaches) - SHOWN_BREACHES
    listed = f" ({shown}{f'; and {more} more' if more > 0 else ''})" if shown else ""
    return (f"the baseline itself failed its levels{listed}: the regression is judged against it all the same, "
            "so a pass means no worse than that run")
