"""Where each figure of the HTML report stands: its verdict state, and whether it regressed.

The level gate (:mod:`defan_pytest.gates.level`) says ``pass``, ``fail``, ``insufficient`` or
``n/a``; the page colours a figure by one of four states, the same under either
``--defan-decide``:

* ``pass``: within its limit;
* ``fail``: beyond its limit, and the gate failed on it (``decide = "point"``: the figure is
  beyond; ``"interval"``: its whole interval is);
* ``not decided``: beyond its limit, but the gate passed it because its interval reaches the
  limit (``--defan-decide=interval``; the gate says ``pass``, its message "not decided");
* ``not judged``: the gate did not judge it: too few paraphrase groups for ``min_samples``
  (``insufficient``) or no figure (``n/a``).

A figure with no limit has no state (``None``).  The ``samples`` check itself is ``fail`` when
it is short ("too few"): that is what fails the gate, while the figures it left unjudged are
``not judged``, whatever they are.  A figure *regressed* when the report's regression gate (the
``regression`` block, :mod:`defan_pytest.gates.regression`) found it worse than the baseline
beyond its tolerance and significantly so.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Dict, List, Optional, Tuple

from defan_pytest.gates.level import FAIL, INSUFFICIENT, NOT_APPLICABLE, PASS, UNDECIDED
from defan_pytest.metrics.registry import METRICS

__all__ = ["FAILED", "NOT_DECIDED", "NOT_JUDGED", "PASSED", "STATES", "gate_rows", "judgements", "verdict_state"]

PASSED, FAILED, NOT_DECIDED, NOT_JUDGED = "pass", "fail", "not decided", "not judged"

#: The states, worst first (a scope takes its worst figure's).
STATES = (FAILED, NOT_DECIDED, NOT_JUDGED, PASSED)


def _number(x: Any) -> Optional[float]:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def verdict_state(verdict: Mapping[str, Any]) -> Tuple[str, str]:
    """``(state, word)`` of one verdict of a report's ``gate`` list: the state (one of
    :data:`STATES`) and the word the page shows for it."""
    status, metric = verdict.get("status"), verdict.get("metric")
    if status == FAIL:
        return FAILED, "fail"
    if status == INSUFFICIENT:
        return (FAILED if metric == "samples" else NOT_JUDGED), "too few"
    if status == UNDECIDED:
        return NOT_DECIDED, "not decided"
    if status == PASS:
        # (a report written before the status: a pass beyond its limit was decided by interval)
        m = METRICS.get(str(metric))
        value, limit = _number(verdict.get("value")), _number(verdict.get("limit"))
        if m is not None and value is not None and limit is not None and not m.passes(value, limit):
            return NOT_DECIDED, "not decided"  # passed by --defan-decide=interval only
        return PASSED, "pass"
    if status == NOT_APPLICABLE:
        return NOT_JUDGED, "n/a"
    return NOT_JUDGED, str(status)


def gate_rows(gate: Sequence[Mapping[str, Any]]) -> List[Dict[str, Any]]:
    """The report's gate verdicts, each with its ``state`` and ``word``."""
    out = []
    for v in gate:
        if isinstance(v, Mapping):
            state, word = verdict_state(v)
            out.append({**v, "state": state, "word": word})
    return out


def _scope_state(entries: Sequence[Tuple[str, str]]) -> Tuple[Optional[str], str]:
    """One state and word for a scope: its worst verdict's (a short sample says "too few")."""
    for state in STATES:
        words = [w for s, w in entries if s == state]
        if words:
            return state, ("too few" if state == FAILED and "fail" not in words else words[0])
    return None, "no limit"


def judgements(gate: Sequence[Mapping[str, Any]], regression: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    """``scope -> {"state", "word", "regressed", "metrics": {metric: {"state", "word",
    "message", "regressed", "change"}}}``: every scope the gate judged or the regression gate
    compared; a metric without a limit has the state ``None``."""
    out: Dict[str, Any] = {}

    def entry(scope: str, metric: str) -> Dict[str, Any]:
        scope_entry = out.setdefault(scope, {"state": None, "word": "no limit", "regressed": False, "metrics": {}})
        return scope_entry["metrics"].setdefault(  # type: ignore[no-any-return]
            metric, {"state": None, "word": "no limit", "message": None, "regressed": False, "change": None},
        )

    states: Dict[str, List[Tuple[str, str]]] = {}
    for v in gate_rows(gate):
        scope, metric = str(v.get("scope")), str(v.get("metric"))
        states.setdefault(scope, []).append((v["state"], v["word"]))
        e = entry(scope, metric)
        e.update(state=v["state"], word=v["word"], message=v.get("message"))
    scopes = regression.get("scopes") if isinstance(regression, Mapping) else None
    for scope, mets in (scopes or {}).items():
        for metric, c in (mets or {}).items() if isinstance(mets, Mapping) else ():
            if isinstance(c, Mapping) and c.get("regressed") is True:
                entry(str(scope), str(metric)).update(regressed=True, change=_number(c.get("change")))
                out[str(scope)]["regressed"] = True
    for scope, entries in states.items():
        out[scope]["state"], out[scope]["word"] = _scope_state(entries)
    return out
