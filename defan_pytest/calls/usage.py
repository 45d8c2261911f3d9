"""What the calls of a run took: tokens, latency percentiles and cost, the usage block of its
report (:func:`summarize`) and the usage lines of the terminal summary (:func:`format_summary`).
The estimate before a run is :mod:`defan_pytest.calls.estimate`'s, prices are
:mod:`defan_pytest.calls.prices`', the budget :mod:`defan_pytest.calls.budget`'s.  Pure
functions; nothing here calls a model or imports pytest or litellm.

>>> percentile([0.05, 0.06, 0.07, 0.5], 50)
0.065
"""
from __future__ import annotations

import math
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence

from defan_pytest.calls.budget import BUDGET_ERROR, charged_in, charged_note
from defan_pytest.calls.estimate import describe_path
from defan_pytest.calls.prices import Price, format_usd

__all__ = ["format_summary", "percentile", "summarize"]


def percentile(values: Sequence[float], q: float) -> Optional[float]:
    """The ``q``-th percentile (0-100) of ``values``, interpolated between the nearest ranks;
    ``None`` for no values."""
    data = sorted(values)
    if not data:
        return None
    pos = (len(data) - 1) * q / 100.0
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)


def _is_budget_error(error: Any) -> bool:
    return isinstance(error, str) and error.startswith(BUDGET_ERROR)


def _int(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _tokens(rs: Sequence[Mapping[str, Any]]) -> Dict[str, Any]:
    known = [r for r in rs if _int(r.get("prompt_tokens")) is not None or _int(r.get("completion_tokens")) is not None]
    p = sum(_int(r.get("prompt_tokens")) or 0 for r in known)
    c = sum(_int(r.get("completion_tokens")) or 0 for r in known)
    return {"prompt": p, "completion": c, "total": p + c, "answers": len(rs), "unknown": len(rs) - len(known)}


def _block(recs: Sequence[Mapping[str, Any]], price: Optional[Price]) -> Dict[str, Any]:
    """Tokens, latency and cost of some records (the run's, or one domain's)."""
    fresh = [r for r in recs if not r.get("error") and (r.get("answered_by") or "model") != "cache"]
    cached = [r for r in recs if not r.get("error") and r.get("answered_by") == "cache"]
    paid, kept = _tokens(fresh), _tokens(cached)
    latencies = [float(r["latency"]) for r in fresh if isinstance(r.get("latency"), (int, float))]
    out: Dict[str, Any] = {
        "prompts": len(recs),
        "answered": len(fresh),
        "cached": len(cached),
        "errors": sum(1 for r in recs if r.get("error")),
        "tokens": paid,
        "cached_tokens": kept,
        "latency": {
            "n": len(latencies),
            "p50": _round(percentile(latencies, 50)),
            "p95": _round(percentile(latencies, 95)),
            "mean": _round(sum(latencies) / len(latencies)) if latencies else None,
        },
        "cost": None,
    }
    if price is not None:
        out["cost"] = {
            "spent": round(price.cost(paid["prompt"], paid["completion"]), 8),
            "cached": round(price.cost(kept["prompt"], kept["completion"]), 8),
            # Answers whose tokens were not reported (a provider that says nothing, answers
            # cached by an earlier version) are not in these figures.
            "complete": paid["unknown"] == 0,
        }
    return out


def summarize(records: Iterable[Mapping[str, Any]], *, price: Optional[Price] = None, path: str = "",
              budget: Optional[float] = None) -> Dict[str, Any]:
    """The usage block of a run's report (plain JSON), from its records (``prompt_tokens``,
    ``completion_tokens``, ``latency``, ``answered_by``, ``error``, ``domain``).

    Answers the model gave in this run are paid: their tokens and cost are ``tokens`` and
    ``cost.spent``; answers from the cache keep the usage stored with them and are counted
    apart (``cached_tokens``, ``cost.cached``).  Latency percentiles are over this run's calls.
    ``domains`` holds the same figures per domain; ``price`` the price used, ``budget`` the
    limit, what was spent on the answers received, how many prompts were not sent (``complete``:
    none) and how many answers that could not be read were charged to it at their estimate
    (``charged``: their cost is not in ``spent``, which counts what the provider reported).
    """
    recs = list(records)
    out: Dict[str, Any] = {"call_path": path or None, **_block(recs, price)}
    out["price"] = price.to_json() if price is not None else None
    spent = out["cost"]["spent"] if out["cost"] is not None else None
    unsent = sum(1 for r in recs if _is_budget_error(r.get("error")))
    charged = sum(charged_in(r.get("error")) for r in recs)
    out["budget"] = None if budget is None else {"limit": budget, "spent": spent, "unsent": unsent,
                                                 "complete": unsent == 0, "charged": charged}
    by_domain: Dict[str, List[Mapping[str, Any]]] = {}
    for r in recs:
        by_domain.setdefault(str(r.get("domain")), []).append(r)
    out["domains"] = {d: _block(rs, price) for d, rs in sorted(by_domain.items()) if d != "None"}
    return out


def _round(x: Optional[float]) -> Optional[float]:
    return None if x is None else round(x, 6)


def format_summary(u: Mapping[str, Any]) -> List[str]:
    """The usage lines of the terminal summary (empty when there is nothing to say)."""
    lines: List[str] = []
    path = u.get("call_path") or ""
    t, lat = u.get("tokens") or {}, u.get("latency") or {}
    parts: List[str] = []
    answered = int(u.get("answered") or 0)
    if answered:
        if t.get("unknown", 0) < answered:
            parts.append(f"{t.get('prompt', 0):,} prompt + {t.get('completion', 0):,} completion tokens in "
                         f"{answered:,} answers")
        else:
            parts.append(f"{answered:,} answers, tokens not reported")
        if lat.get("p50") is not None:
            parts.append(f"latency p50 {lat['p50'] * 1000:,.0f} ms, p95 {lat['p95'] * 1000:,.0f} ms")
    cost = u.get("cost")
    local = bool((u.get("price") or {}).get("local"))  # no cost, said once before the calls
    if cost is not None and not local:
        text = f"cost {format_usd(cost['spent'])}"
        if not cost.get("complete", True):
            text += " (some answers' tokens unknown)"
        if u.get("cached"):
            text += f"; {u['cached']:,} cached answers saved {format_usd(cost['cached'])}"
        parts.append(text)
    elif answered and path != "callable" and not local:
        parts.append("cost unknown (no price)")
    if parts:
        via = f" via {describe_path(path)}" if path else ""
        lines.append(f"usage{via}: " + "; ".join(parts))
    lines.extend(_domain_table(u.get("domains") or {}, cost=not local))
    budget = u.get("budget")
    if budget is not None:
        spent = budget.get("spent")
        spent_text = (format_usd(spent) if spent is not None else "unknown") + " spent"
        if budget.get("charged"):
            spent_text += f" on the answers received; {charged_note(int(budget['charged']))}"
        if budget.get("unsent"):
            lines.append(
                f"budget {format_usd(budget['limit'])} reached ({spent_text}): {budget['unsent']:,} prompts not "
                "sent, the run is incomplete; every answer is kept in the cache: a larger --defan-budget asks the rest"
            )
        else:
            lines.append(f"budget {format_usd(budget['limit'])}: {spent_text}")
    return lines


def _domain_table(domains: Mapping[str, Mapping[str, Any]], cost: bool = True) -> List[str]:
    """Per domain: answers asked of the model, their tokens, latency p50/p95 and cost (within
    80 columns; no cost column for a local server's); nothing when no domain had an answer
    from the model."""
    rows = [(d, b) for d, b in domains.items() if b.get("answered")]
    if not rows:
        return []
    table = [["domain", "answered", "tokens", "p50 ms", "p95 ms", "cost"][:6 if cost else 5]]
    for d, b in rows:
        t, lat = b.get("tokens") or {}, b.get("latency") or {}
        known = int(b.get("answered") or 0) - int(t.get("unknown", 0))
        tokens = f"{int(t.get('prompt', 0)) + int(t.get('completion', 0)):,}" if known > 0 else "-"

        def ms(v: Any) -> str:
            return "-" if v is None else f"{float(v) * 1000:,.0f}"

        spent = b.get("cost")
        table.append([d[:20], f"{int(b['answered']):,}", tokens, ms(lat.get("p50")), ms(lat.get("p95")),
                      format_usd(spent["spent"]) if spent else "-"][:6 if cost else 5])
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    return ["  " + "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()
            for r in table]
