"""The HTML page of several models' runs (:class:`~defan_pytest.records.ModelsReport`): the
models side by side.

One self-contained page, drawn by its inline script from the JSON it embeds (inert: every
``<`` escaped) under the same content security policy as a run's page: the figures of every
domain by model with their intervals and gate words, each model against ``compare_to``, and a
table of prompts with a column a model (its claim and outcome), filtered by domain, by text and
by pairs of models (``right in A, wrong in B``).
"""
from __future__ import annotations

import string
from typing import Any, Dict, List

from defan_pytest import verdicts
from defan_pytest.records import ModelsReport, model_of
from defan_pytest.report.models import SHOWN, figures_of, scopes_of

__all__ = ["models_payload", "render_models"]

#: A response is shown cut to this many characters (the JSON report has it whole).
MAX_RESPONSE = 400


def _figures(report: ModelsReport) -> Dict[str, Dict[str, Any]]:
    """model -> scope -> the shown figures, their intervals and the gate's word."""
    out: Dict[str, Dict[str, Any]] = {}
    for run in report.runs:
        by_scope: Dict[str, Any] = {}
        for scope in scopes_of(report):
            figs = figures_of(run, scope)
            failed = any(v.get("status") in ("fail", "insufficient") for v in run.gate if v.get("scope") == scope)
            judged = any(v.get("scope") == scope for v in run.gate)
            by_scope[scope] = {
                **{m: figs.get(m) for m in SHOWN}, **{f"{m}_ci": figs.get(f"{m}_ci") for m in SHOWN},
                "n": figs.get("n"), "gate": "fail" if failed else "pass" if judged else None,
            }
        out[model_of(run)] = by_scope
    return out


def _prompts(report: ModelsReport) -> List[Dict[str, Any]]:
    """Every prompt any model ran, in the first run's order, with each model's claim and outcome."""
    prompts: Dict[str, Dict[str, Any]] = {}
    for run in report.runs:
        model = model_of(run)
        for r in run.rows:
            p = prompts.setdefault(r.id, {"id": r.id, "domain": r.domain, "question": r.question, "answer": r.answer, "by": {}})
            outcome = verdicts.outcome_of(r)
            p["by"][model] = {
                "claim": r.claim, "outcome": outcome.word, "right": outcome is verdicts.RIGHT,
                "error": bool(r.error), "response": (r.response or "")[:MAX_RESPONSE],
            }
    return list(prompts.values())


def models_payload(report: ModelsReport) -> Dict[str, Any]:
    """What the page's script draws (plain JSON)."""
    comparisons = {
        model: {"status": c.get("status"), "reason": c.get("reason"),
                "messages": [ch.get("message") for mets in (c.get("scopes") or {}).values() for ch in mets.values()],
                "regressed": [ch.get("message") for mets in (c.get("scopes") or {}).values() for ch in mets.values()
                              if ch.get("regressed")]}
        for model, c in report.comparisons.items()
    }
    return {
        "models": list(report.models), "compare_to": report.compare_to, "scopes": scopes_of(report),
        "metrics": list(SHOWN), "figures": _figures(report), "comparisons": comparisons,
        "gate_status": {model_of(r): r.gate_status for r in report.runs}, "prompts": _prompts(report),
    }


def render_models(report: ModelsReport) -> str:
    """The HTML page of ``report`` (see the module docstring)."""
    # lazy: start-up. The page's helpers live in the package's __init__, which imports this module.
    from defan_pytest.report.html import MARK, _asset, _json_for_html, _sha256

    css, js = "\n" + _asset("report.css"), "\n" + _asset("models.js")
    csp = (
        "default-src 'none'; base-uri 'none'; form-action 'none'; img-src data:; "
        f"style-src 'sha256-{_sha256(css)}'; script-src 'sha256-{_sha256(js)}'"
    )
    page = string.Template(_asset("models.html"))
    return page.substitute(mark=MARK, csp=csp, css=css, js=js, data=_json_for_html(models_payload(report)))
