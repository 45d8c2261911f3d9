"""One self-contained HTML file from a report: ``--defan-html PATH`` and ``defan html``.

The page needs nothing at view time: its CSS and its script are inline (no framework, no CDN),
and a Content-Security-Policy allows exactly those two (by their sha256) and nothing else, so the
page can neither load nor send anything.  It shows

* a chart per metric (each domain's and the overall figure with its interval, the limit of the
  thresholds file, and the baseline's figure when there is one), and the figures as a table,
  each coloured by its verdict state (:mod:`.judged`: pass, fail, not decided, not judged, the
  same under either ``--defan-decide``) and marked when it failed its limit or regressed;
* the level gate's and the regression gate's verdicts;
* every paraphrase group (one question asked up to 15 ways) as one row of a sortable table with a
  header that stays in view, each row expanding to its prompts, with filters (domain, outcome,
  flipped against the baseline, call errors) and a text search, 100 groups a page;
* the run (:mod:`.runinfo`): model, fingerprint, data set, selection, calls, timings, thresholds.

The page is ``report.html`` with ``report.css`` and ``report.js`` put inline (package data next
to this module); this module makes the data they show and the policy's hashes.  The report's
data travels as JSON in a ``<script type="application/json">`` element, with every ``<``
written ``\\u003c`` so that no text can close the element or open a comment; the page's script
reads it with ``JSON.parse`` and puts every text of the model or the data set into the page with
``textContent``, never as markup: a response holding ``<script>``, ``</script>``,
``<img onerror=...>`` or a ``javascript:`` link is shown as the text it is and runs nothing.
Rows are arrays (not objects) and a response longer than :data:`MAX_TEXT` characters is cut
(the JSON report has it whole), which keeps a full public split (70,793 prompts) at about the
JSON report's size; the table renders one page at a time, so the page opens in a second or two
(``bench/html_report.py`` measures both).  The script makes the groups from the rows in one
pass, so nothing per group is embedded and the page stays linear in the prompts.  A prompt's outcome is an index into the page's
``outcomes``: :data:`defan_pytest.verdicts.OUTCOMES` as it is when the page is made (each with its
``name``, ``word`` and what FCH and PMH make of it), so an outcome added there is shown, filtered
and counted without a change here.

Nothing here imports pytest.
"""
from __future__ import annotations

import base64
import hashlib
import json
import string
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from importlib import resources
from typing import Any, Dict, List, Optional, Tuple

from defan_pytest import verdicts
from defan_pytest.metrics.registry import METRICS
from defan_pytest.records import Report, ScoredRecord
from defan_pytest.report.html.judged import gate_rows, judgements
from defan_pytest.report.html.runinfo import run_rows
from defan_pytest.safetext import sanitize
from defan_pytest.scoring.equivalence import group_consistent

__all__ = [
    "FCH_BETTER", "FCH_WORSE", "MARK", "MAX_TEXT", "PMH_BETTER", "PMH_WORSE", "ROW_COLUMNS", "payload", "render", "render_models",
]

#: Characters of one question, answer, response or claim kept in the page (the rest is cut,
#: with a note; the JSON report keeps the whole text).
MAX_TEXT = 4000

#: The page's first line after the doctype: how :func:`defan_pytest.report.writer.is_report` knows an
#: earlier HTML report (which a new one may replace).
MARK = "<!-- defan-pytest-report (HTML) -->"

#: The columns of each embedded row, in order.
ROW_COLUMNS = (
    "id", "domain", "group", "type", "question", "answer", "response", "claim", "outcome", "error",
    "kind", "note", "flip", "old_outcome", "old_claim", "old_response", "finish_reason",
)

#: Flip bits against the baseline.
FCH_WORSE, FCH_BETTER, PMH_WORSE, PMH_BETTER = 1, 2, 4, 8


@lru_cache(maxsize=None)
def _asset(name: str) -> str:
    """A file of the page (package data next to this module)."""
    return resources.files(__name__).joinpath(name).read_text(encoding="utf-8")


def _cut(text: Any, counter: List[int]) -> Optional[str]:
    if text is None:
        return None
    s = str(text)
    if len(s) > MAX_TEXT:
        counter[0] += 1
        return s[:MAX_TEXT] + f" … [{len(s) - MAX_TEXT:,} more characters in the JSON report]"
    return s


def _flip(old: Mapping[str, Any], new: Mapping[str, Any]) -> int:
    if old.get("error") or new.get("error"):
        return 0
    bits = 0
    oc, nc = old.get("correct") is True, new.get("correct") is True
    oa, na = old.get("aligned") is True, new.get("aligned") is True
    if oc and not nc:
        bits |= FCH_WORSE
    elif nc and not oc:
        bits |= FCH_BETTER
    if oa and not na:
        bits |= PMH_WORSE
    elif na and not oa:
        bits |= PMH_BETTER
    return bits


def _consistency(rows: Sequence[ScoredRecord]) -> Dict[str, Optional[bool]]:
    """Group key -> consistent (RC), for the groups that count for RC (more than one response,
    none of them a call error, as the figures count them); best effort."""
    groups: Dict[Tuple[str, str], List[ScoredRecord]] = {}
    for r in rows:
        groups.setdefault((r.domain, r.group), []).append(r)
    try:
        return {
            key: bool(group_consistent(grp[0].type, [r.claim for r in grp]))
            for (_domain, key), grp in groups.items()
            if len(grp) > 1 and not any(r.error for r in grp)
        }
    except Exception:  # pragma: no cover - the page shows no RC column rather than failing
        return {}


def _metrics() -> List[Dict[str, Any]]:
    return [
        {"name": m.name, "label": m.label, "key": m.threshold_key, "higher": m.higher_is_better,
         "interval": m.show_interval}
        for m in METRICS.values() if not m.unit  # the charts are of rates in [0, 1]
    ]


def _figures_of(scopes: Mapping[str, Any], names: Iterable[str]) -> Dict[str, Dict[str, Any]]:
    names = list(names)
    return {
        str(scope): {n: figs.get(n) for n in names if isinstance(figs, Mapping)}
        for scope, figs in scopes.items() if isinstance(figs, Mapping)
    }


def _baseline_view(
    report: Report, baseline: Optional[Report], baseline_path: Optional[str], names: List[str],
) -> Optional[Dict[str, Any]]:
    """The baseline's figures for the charts: of the baseline given, else of the report's own
    regression gate."""
    regression = report.regression
    if baseline is not None:
        base: Dict[str, Any] = {
            "from": "file", "path": baseline_path, "created": baseline.meta.created,
            "model": baseline.meta.model_name, "figures": _figures_of(baseline.domains, names),
        }
        base["figures"]["overall"] = {n: (baseline.overall.get(report.figure) or {}).get(n) for n in names}
        return base
    if isinstance(regression, Mapping) and regression.get("scopes"):
        info = regression.get("baseline") or {}
        return {
            "from": "regression", "path": info.get("path"), "created": info.get("created"), "model": info.get("model"),
            "figures": {
                str(scope): {str(m): c.get("old") for m, c in mets.items()}
                for scope, mets in (regression.get("scopes") or {}).items()
            },
        }
    return None


def _regression_flips(regression: Optional[Mapping[str, Any]]) -> Dict[str, Dict[str, Any]]:
    """Prompt id -> flip bits and the old claim and response, as the report's regression gate
    found them (when no baseline file is given)."""
    flipped: Dict[str, Dict[str, Any]] = {}
    if not isinstance(regression, Mapping):
        return flipped
    for f in regression.get("flipped") or ():
        entry = flipped.setdefault(str(f.get("id")), {"bits": 0, "claim": f.get("old_claim"),
                                                      "response": f.get("old_response")})
        worse = f.get("direction") == "worse"
        if f.get("metric") == "pmh":
            entry["bits"] |= PMH_WORSE if worse else PMH_BETTER
        else:
            entry["bits"] |= FCH_WORSE if worse else FCH_BETTER
    return flipped


class _Codes:
    """Texts that repeat (domains, types, error kinds) as indices into one list each."""

    def __init__(self) -> None:
        self.values: List[str] = []
        self._index: Dict[str, int] = {}

    def __call__(self, value: Any) -> Optional[int]:
        if value is None:
            return None
        s = str(value)
        if s not in self._index:
            self._index[s] = len(self.values)
            self.values.append(s)
        return self._index[s]


class _Outcomes:
    """Each prompt's outcome as an index into :data:`defan_pytest.verdicts.OUTCOMES`, read now
    (an outcome that list does not hold, should one appear, is added at its end)."""

    def __init__(self) -> None:
        self.values: List[Any] = list(verdicts.OUTCOMES)
        self._index: Dict[Any, int] = {o: i for i, o in enumerate(self.values)}

    def __call__(self, record: Any) -> int:
        outcome = verdicts.outcome_of(record)
        if outcome not in self._index:
            self._index[outcome] = len(self.values)
            self.values.append(outcome)
        return self._index[outcome]

    def to_json(self) -> List[Dict[str, Any]]:
        """The outcomes as the page reads them: ``name`` and ``word`` (what it shows), and whether
        FCH counts it (``wrong``), PMH does (``misaligned``), or it is a call error (``error``)."""
        return [
            {"name": o.name, "word": o.word, "status": o.status, "code": o.code,
             "wrong": o.wrong, "misaligned": o.misaligned, "error": bool(o.code & 4)}
            for o in self.values
        ]


def payload(report: Report, baseline: Optional[Report] = None, baseline_path: Optional[str] = None) -> Dict[str, Any]:
    """The data the page embeds: everything of the report but its rows, the rows as arrays of
    :data:`ROW_COLUMNS` (domains, types and error kinds as indices into lists), each row's flip
    against the baseline, and the baseline's figures."""
    names = [m["name"] for m in _metrics()]
    regression = report.regression
    old_by_id = {r.id: r for r in baseline.rows} if baseline is not None else {}
    flipped = _regression_flips(regression) if baseline is None else {}
    domains, types, kinds, outcomes = _Codes(), _Codes(), _Codes(), _Outcomes()
    cut = [0]
    out_rows: List[List[Any]] = []
    for r in report.rows:
        flip, old_verdict, old_claim, old_response = 0, None, None, None
        old = old_by_id.get(r.id)
        if old is not None:
            flip, old_verdict, old_claim = _flip(old, r), outcomes(old), old.claim
            old_response = old.response if old.error is None else old.error
        elif r.id in flipped:
            f = flipped[r.id]
            flip, old_claim, old_response = f["bits"], f["claim"], f["response"]
        out_rows.append([
            r.id, domains(r.domain), r.group, types(r.type), _cut(r.question, cut) or "", _cut(r.answer, cut) or "",
            _cut(r.response, cut), _cut(r.claim, cut), outcomes(r), _cut(r.error, cut), kinds(r.error_kind),
            r.note, flip, old_verdict, _cut(old_claim, cut), _cut(old_response, cut), r.finish_reason,
        ])
    top = report.to_json(rows=False)
    del top["regression"]
    top["gate"] = gate_rows(report.gate)
    reg = None
    if isinstance(regression, Mapping):
        reg = {k: v for k, v in regression.items() if k != "flipped"}
        directions = [f.get("direction") for f in regression.get("flipped") or ()]
        reg["flipped_counts"] = {"worse": directions.count("worse"), "better": directions.count("better")}
    return {
        "format": 2,
        "report": top,
        "regression": reg,
        "metrics": _metrics(),
        "figure": report.figure,
        "judged": judgements(report.gate, regression),
        "outcomes": outcomes.to_json(),
        "run": run_rows(report, cut[0]),
        "baseline": _baseline_view(report, baseline, baseline_path, names),
        "cols": list(ROW_COLUMNS),
        "domains": domains.values,
        "types": types.values,
        "kinds": kinds.values,
        "consistent": _consistency(report.rows),
        "truncated": cut[0],
        "rows": out_rows,
    }


def _json_for_html(data: Any) -> str:
    """JSON that is inert inside ``<script type="application/json">``: every ``<`` escaped (so
    neither ``</script>`` nor ``<!--`` can appear), invalid code points replaced."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    text = text.replace("<", "\\u003c")
    text, _ = sanitize(text)
    return text


def _sha256(text: str) -> str:
    return base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")


def render(report: Report, *, baseline: Optional[Report] = None, baseline_path: Optional[str] = None) -> str:
    """The HTML page of ``report``, compared with ``baseline`` (a loaded report) when given,
    else with the baseline of the report's own regression gate, if any."""
    # Each inline block starts on a line of its own; the policy hashes the block as it is.
    css, js = "\n" + _asset("report.css"), "\n" + _asset("report.js")
    csp = (
        "default-src 'none'; base-uri 'none'; form-action 'none'; img-src data:; "
        f"style-src 'sha256-{_sha256(css)}'; script-src 'sha256-{_sha256(js)}'"
    )
    # One pass (string.Template): a placeholder written inside the data stays text.
    page = string.Template(_asset("report.html"))
    return page.substitute(mark=MARK, csp=csp, css=css, js=js, data=_json_for_html(payload(report, baseline, baseline_path)))


def render_models(report: Any) -> str:
    """The HTML page of several models' runs (:func:`defan_pytest.report.html.models.render_models`)."""
    # lazy: start-up. The models' page is its own module, loaded for a report of several models only.
    from defan_pytest.report.html import models

    return models.render_models(report)
