"""One self-contained HTML file from a report: ``--defan-html PATH`` and ``defan html``.

The page needs nothing at view time: its CSS and its script are inline (no framework, no CDN),
and a Content-Security-Policy allows exactly those two (by their sha256) and nothing else, so the
page can neither load nor send anything.  It shows

* a chart per metric (each domain's and the overall figure with its interval, the limit of the
  thresholds file, and the baseline's figure when there is one), and the figures as a table;
* the level gate's and the regression gate's verdicts;
* every prompt in a paged table (200 a page) with filters (domain, verdict, flipped against the
  baseline, call errors) and a text search;
* a paraphrase group side by side: every question, answer, claim and verdict of one group;
* the run's metadata.

The report's data travels as JSON in a ``<script type="application/json">`` element, with every
``<`` written ``\\u003c`` so that no text can close the element or open a comment; the page's
script reads it with ``JSON.parse`` and puts every text of the model or the data set into the
page with ``textContent``, never as markup: a response holding ``<script>``, ``</script>``,
``<img onerror=...>`` or a ``javascript:`` link is shown as the text it is and runs nothing.
Rows are arrays (not objects) and a response longer than :data:`MAX_TEXT` characters is cut
(the JSON report has it whole), which keeps a full public split (70,793 prompts) at about the
JSON report's size; the table renders one page at a time, so the page opens in a second or two
(``bench/html_report.py`` measures both).

Nothing here imports pytest.
"""
from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Dict, List, Optional

from defan_pytest.report.writer import Input, write_output
from defan_pytest.safetext import sanitize

__all__ = ["MARK", "MAX_TEXT", "ROW_COLUMNS", "payload", "render", "write_html"]

#: Characters of one question, answer, response or claim kept in the page (the rest is cut,
#: with a note; the JSON report keeps the whole text).
MAX_TEXT = 4000

#: The page's first line after the doctype: how :func:`defan_pytest.report.writer.is_report` knows an
#: earlier HTML report (which a new one may replace).
MARK = "<!-- defan-pytest-report (HTML) -->"

#: The columns of each embedded row, in order.
ROW_COLUMNS = (
    "id", "domain", "group", "type", "question", "answer", "response", "claim", "verdict", "error",
    "kind", "note", "flip", "old_verdict", "old_claim", "old_response",
)

#: Verdict codes: bit 1 wrong (FCH), bit 2 misaligned (PMH); 4 a call error.
OK, WRONG, MISALIGNED, CALL_ERROR = 0, 1, 2, 4
#: Flip bits against the baseline.
FCH_WORSE, FCH_BETTER, PMH_WORSE, PMH_BETTER = 1, 2, 4, 8


def _verdict(row: Mapping[str, Any]) -> int:
    if row.get("error"):
        return CALL_ERROR
    # As the figures count them: no claim, or an unknown verdict, is never right.
    return (WRONG if row.get("correct") is not True else 0) | (MISALIGNED if row.get("aligned") is not True else 0)


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


def _consistency(rows: Sequence[Mapping[str, Any]]) -> Dict[str, Optional[bool]]:
    """Group key -> consistent (RC), for the groups that count for RC; best effort."""
    try:
        from defan_pytest.metrics import summary as metrics
        from defan_pytest.scoring.equivalence import group_consistent

        out: Dict[str, Optional[bool]] = {}
        for (_domain, key), grp in metrics.collect_groups(rows).items():
            if isinstance(key, str) and grp.counts_for_rc:
                out[key] = bool(group_consistent(grp.type, grp.claims))
        return out
    except Exception:  # pragma: no cover - the page shows no RC column rather than failing
        return {}


def _metrics() -> List[Dict[str, Any]]:
    from defan_pytest.metrics.registry import METRICS

    return [
        {"name": m.name, "label": m.label, "key": m.threshold_key, "higher": m.higher_is_better,
         "interval": m.show_interval}
        for m in METRICS.values()
    ]


def _figures_of(scopes: Mapping[str, Any], names: Iterable[str]) -> Dict[str, Dict[str, Any]]:
    names = list(names)
    return {
        str(scope): {n: figs.get(n) for n in names if isinstance(figs, Mapping)}
        for scope, figs in scopes.items() if isinstance(figs, Mapping)
    }


def payload(
    report: Mapping[str, Any], baseline: Optional[Mapping[str, Any]] = None, baseline_path: Optional[str] = None,
) -> Dict[str, Any]:
    """The data the page embeds: everything of the report but its rows, the rows as arrays of
    :data:`ROW_COLUMNS` (domains, types and error kinds as indices into lists), each row's flip
    against the baseline, and the baseline's figures."""
    rows_in = list(report.get("rows") or ())
    names = [m["name"] for m in _metrics()]
    regression = report.get("regression")
    figure = str((report.get("thresholds") or {}).get("figure") or "mean")

    old_by_id: Dict[str, Mapping[str, Any]] = {}
    base: Optional[Dict[str, Any]] = None
    if baseline is not None:
        old_by_id = {str(r.get("id")): r for r in baseline.get("rows") or ()}
        bmeta = baseline.get("meta") or {}
        base = {
            "from": "file", "path": baseline_path, "created": bmeta.get("created"),
            "model": (bmeta.get("model") or {}).get("name"),
            "figures": _figures_of(baseline.get("domains") or {}, names),
        }
        base["figures"]["overall"] = {n: ((baseline.get("overall") or {}).get(figure) or {}).get(n) for n in names}
    elif isinstance(regression, Mapping) and regression.get("scopes"):
        info = regression.get("baseline") or {}
        base = {
            "from": "regression", "path": info.get("path"), "created": info.get("created"), "model": info.get("model"),
            "figures": {
                str(scope): {str(m): c.get("old") for m, c in mets.items()}
                for scope, mets in (regression.get("scopes") or {}).items()
            },
        }
    # Flips the report's regression gate found (when no baseline file is given).
    flipped: Dict[str, Dict[str, Any]] = {}
    if baseline is None and isinstance(regression, Mapping):
        for f in regression.get("flipped") or ():
            entry = flipped.setdefault(str(f.get("id")), {"bits": 0, "claim": f.get("old_claim"),
                                                          "response": f.get("old_response")})
            worse = f.get("direction") == "worse"
            if f.get("metric") == "pmh":
                entry["bits"] |= PMH_WORSE if worse else PMH_BETTER
            else:
                entry["bits"] |= FCH_WORSE if worse else FCH_BETTER

    domains: List[str] = []
    types: List[str] = []
    kinds: List[str] = []
    index: Dict[str, Dict[str, int]] = {"d": {}, "t": {}, "k": {}}

    def code(table: List[str], which: str, value: Any) -> Optional[int]:
        if value is None:
            return None
        s = str(value)
        if s not in index[which]:
            index[which][s] = len(table)
            table.append(s)
        return index[which][s]

    cut = [0]
    out_rows: List[List[Any]] = []
    for r in rows_in:
        rid = str(r.get("id"))
        flip, old_verdict, old_claim, old_response = 0, None, None, None
        old = old_by_id.get(rid)
        if old is not None:
            flip, old_verdict, old_claim = _flip(old, r), _verdict(old), old.get("claim")
            old_response = old.get("response") if old.get("error") is None else old.get("error")
        elif rid in flipped:
            f = flipped[rid]
            flip, old_claim, old_response = f["bits"], f["claim"], f["response"]
        kind = r.get("error_kind")
        if kind is None and r.get("error"):
            kind = str(r["error"]).split(":", 1)[0][:80] or "error"
        out_rows.append([
            rid, code(domains, "d", r.get("domain")), str(r.get("group") or ""), code(types, "t", r.get("type")),
            _cut(r.get("question"), cut) or "", _cut(r.get("answer"), cut) or "", _cut(r.get("response"), cut),
            _cut(r.get("claim"), cut), _verdict(r), _cut(r.get("error"), cut), code(kinds, "k", kind),
            r.get("note"), flip, old_verdict, _cut(old_claim, cut), _cut(old_response, cut),
        ])

    top = {k: v for k, v in report.items() if k not in ("rows", "regression")}
    reg = None
    if isinstance(regression, Mapping):
        reg = {k: v for k, v in regression.items() if k != "flipped"}
        directions = [f.get("direction") for f in regression.get("flipped") or ()]
        reg["flipped_counts"] = {"worse": directions.count("worse"), "better": directions.count("better")}
    return {
        "format": 1,
        "report": top,
        "regression": reg,
        "metrics": _metrics(),
        "figure": figure,
        "baseline": base,
        "cols": list(ROW_COLUMNS),
        "domains": domains,
        "types": types,
        "kinds": kinds,
        "consistent": _consistency(rows_in),
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


def render(
    report: Mapping[str, Any], *, baseline: Optional[Mapping[str, Any]] = None, baseline_path: Optional[str] = None,
) -> str:
    """The HTML page of ``report`` (a v1 report), compared with ``baseline`` (a loaded report)
    when given, else with the baseline of the report's own regression gate, if any."""
    data = _json_for_html(payload(report, baseline, baseline_path))
    csp = (
        "default-src 'none'; base-uri 'none'; form-action 'none'; img-src data:; "
        f"style-src 'sha256-{_sha256(_CSS)}'; script-src 'sha256-{_sha256(_JS)}'"
    )
    return (
        f"<!DOCTYPE html>\n{MARK}\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        f"<meta http-equiv=\"Content-Security-Policy\" content=\"{csp}\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        "<meta name=\"generator\" content=\"defan-pytest\">\n"
        "<title>DefAn report</title>\n"
        f"<style>{_CSS}</style>\n</head>\n<body>\n{_BODY}\n"
        f"<script type=\"application/json\" id=\"defan-data\">{data}</script>\n"
        f"<script>{_JS}</script>\n</body>\n</html>\n"
    )


def write_html(
    path: str | os.PathLike[str],
    report: Mapping[str, Any],
    *,
    baseline: Optional[Mapping[str, Any]] = None,
    baseline_path: Optional[str] = None,
    inputs: Iterable[Input] = (),
    force: bool = False,
    force_hint: str = "",
) -> Path:
    """Write :func:`render` to ``path`` through :func:`defan_pytest.report.writer.write_output` (atomic,
    never over an input of the run or a file that is not a report of ours unless ``force``)."""
    return write_output(
        path, render(report, baseline=baseline, baseline_path=baseline_path), inputs=inputs, force=force,
        force_hint=force_hint,
    )


_BODY = """<header>
<h1 id="title">DefAn report</h1>
<p id="subtitle" class="muted"></p>
<div id="badges" class="badges"></div>
<nav><a href="#figures">Figures</a> <a href="#verdicts">Verdicts</a> <a href="#prompts">Prompts</a>
<a href="#group">Paraphrase group</a> <a href="#run">Run</a></nav>
</header>
<main>
<noscript><p class="warn">This report is drawn by its inline script; allow scripts for this file to see it.</p></noscript>
<section id="figures"><h2>Figures</h2><p class="muted" id="figures-note"></p>
<div id="charts" class="charts"></div>
<table id="figures-table" class="grid"></table></section>
<section id="verdicts"><h2>Verdicts</h2>
<h3>Level gate</h3><div id="gate"></div>
<h3>Regression gate</h3><div id="regression"></div></section>
<section id="prompts"><h2>Prompts</h2>
<div class="filters">
<label>domain <select id="f-domain"></select></label>
<label>verdict <select id="f-verdict"></select></label>
<label>against the baseline <select id="f-flip"></select></label>
<label>call errors <select id="f-kind"></select></label>
<label>search <input id="f-search" type="search" placeholder="id, question, answer, response, claim" size="34"></label>
</div>
<div class="pager"><button id="p-first" type="button">&laquo;</button><button id="p-prev" type="button">&lsaquo; previous</button>
<span id="p-info"></span><button id="p-next" type="button">next &rsaquo;</button><button id="p-last" type="button">&raquo;</button></div>
<table id="rows" class="grid rows"><thead></thead><tbody></tbody></table></section>
<section id="group"><h2>Paraphrase group</h2>
<div class="pager"><button id="g-prev" type="button">&lsaquo; previous group</button>
<label>group <input id="g-key" size="22" placeholder="e.g. nobel-q0042"></label>
<button id="g-next" type="button">next group &rsaquo;</button></div>
<div id="group-view"><p class="muted">Choose a group: its key in the prompts table, or type it above.</p></div></section>
<section id="run"><h2>Run</h2><table id="meta" class="grid meta"></table></section>
</main>"""

_CSS = """
:root{--fail:#c62828;--pass:#2e7d32;--warn:#b26a00;--muted:#666;--line:#ddd;--bg:#fafafa;--accent:#1f5fa8}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#222;background:#fff}
header{padding:16px 24px 8px;border-bottom:1px solid var(--line);background:var(--bg);position:sticky;top:0;z-index:2}
header h1{margin:0 0 2px;font-size:20px}
nav a{margin-right:14px;color:var(--accent);text-decoration:none}
main{padding:8px 24px 40px;max-width:1500px}
section{scroll-margin-top:150px}
h2{margin:26px 0 8px;font-size:17px;border-bottom:1px solid var(--line);padding-bottom:4px}
h3{margin:16px 0 6px;font-size:15px}
.muted{color:var(--muted)}
.warn{color:var(--warn)}
.badges{margin:6px 0}
.badge{display:inline-block;border-radius:10px;padding:1px 10px;margin-right:8px;font-weight:600;border:1px solid currentColor}
.s-pass{color:var(--pass)} .s-fail,.s-insufficient{color:var(--fail)} .s-skipped,.s-not-judged,.s-n-a{color:var(--warn)}
.charts{display:flex;flex-wrap:wrap;gap:14px}
.chart{border:1px solid var(--line);border-radius:6px;padding:6px 8px;background:#fff}
.chart h4{margin:2px 0 4px;font-size:14px}
svg text{font:12px system-ui,sans-serif;fill:#222}
svg .axis{stroke:#bbb;stroke-width:1}
svg .grid{stroke:#eee;stroke-width:1}
svg .track{fill:#f3f3f3}
svg .bar{fill:#7aa6d6} svg .bar.pass{fill:#8cc58f} svg .bar.fail,svg .bar.insufficient{fill:#e88f8f}
svg .ci{stroke:#222;stroke-width:1.5}
svg .limit{stroke:var(--fail);stroke-width:2;stroke-dasharray:4 2}
svg .base{fill:#fff;stroke:#6a1b9a;stroke-width:2}
svg .lim{fill:var(--fail)} svg .was{fill:#6a1b9a} svg .small{font-size:10.5px;fill:#555}
table.grid{border-collapse:collapse;margin:6px 0;width:100%}
table.grid th,table.grid td{border:1px solid var(--line);padding:3px 6px;text-align:left;vertical-align:top}
table.grid th{background:var(--bg);font-weight:600}
table.grid td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
table.rows td{max-width:28em;overflow-wrap:anywhere;white-space:pre-wrap}
table.rows td.gold{overflow-wrap:break-word;min-width:5em}
table.rows td.grp{white-space:nowrap;overflow-wrap:normal}
#figures-table td{white-space:pre-line}
table.rows td.id{white-space:nowrap;font-family:ui-monospace,monospace;font-size:12px}
table.meta td:first-child{white-space:nowrap;font-family:ui-monospace,monospace;width:1%}
table.meta td{white-space:pre-wrap;overflow-wrap:anywhere}
.v-0{color:var(--pass)} .v-1,.v-3{color:var(--fail);font-weight:600} .v-2{color:var(--warn);font-weight:600} .v-4{color:#555;font-style:italic}
.flip{font-size:12px;border-radius:8px;padding:0 6px;margin-left:4px;white-space:nowrap}
.flip.worse{background:#fde0e0;color:var(--fail)} .flip.better{background:#e0f2e1;color:var(--pass)}
.filters{display:flex;flex-wrap:wrap;gap:10px 16px;margin:6px 0}
.pager{margin:6px 0;display:flex;gap:6px;align-items:center;flex-wrap:wrap}
button.link{background:none;border:none;color:var(--accent);cursor:pointer;padding:0;font:inherit;text-decoration:underline}
.gold{font-weight:600}
.empty{padding:10px;color:var(--muted)}
"""

_JS = r"""
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("defan-data").textContent);
  var R = D.report, META = R.meta || {}, ROWS = D.rows, COL = {};
  D.cols.forEach(function (name, i) { COL[name] = i; });
  var PAGE = 200;
  var VERDICT = {0: "ok", 1: "hallucinated", 2: "misaligned", 3: "hallucinated, misaligned", 4: "call error"};
  var HAS_BASE = !!D.baseline;
  var ANY_FLIP = ROWS.some(function (r) { return r[COL.flip]; });

  function $(id) { return document.getElementById(id); }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    return e;
  }
  function add(parent) {
    for (var i = 1; i < arguments.length; i++) { if (arguments[i]) { parent.appendChild(arguments[i]); } }
    return parent;
  }
  function svg(tag, attrs, text) {
    var e = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (var k in attrs) { if (Object.prototype.hasOwnProperty.call(attrs, k)) { e.setAttribute(k, String(attrs[k])); } }
    if (text !== undefined) { e.textContent = String(text); }
    return e;
  }
  function num(x) { return typeof x === "number" && isFinite(x); }
  function f3(x) { return num(x) ? x.toFixed(3) : "–"; }
  function ci(c) { return c && num(c[0]) && num(c[1]) ? "[" + c[0].toFixed(3) + ", " + c[1].toFixed(3) + "]" : ""; }
  function signed(x) { return num(x) ? (x >= 0 ? "+" : "") + x.toFixed(3) : "–"; }
  function cls(s) { return "s-" + String(s || "not judged").replace(/[^a-z]+/gi, "-").toLowerCase(); }
  function short(s, n) { s = s === null || s === undefined ? "" : String(s); return s.length > n ? s.slice(0, n - 1) + "…" : s; }
  function cell(tr, text, c) { var td = el("td", c, text); tr.appendChild(td); return td; }
  function row(table, values, header) {
    var tr = el("tr");
    values.forEach(function (v) { tr.appendChild(el(header ? "th" : "td", null, v)); });
    table.appendChild(tr);
    return tr;
  }

  // -- header ---------------------------------------------------------------------------------
  var model = META.model || {};
  var modelName = model.name || "responses";
  document.title = "DefAn: " + modelName;
  $("title").textContent = "DefAn: " + modelName + (model.version ? " (version " + model.version + ")" : "");
  var sel = META.selection || {};
  var bits = [(sel.ran !== undefined ? sel.ran : ROWS.length).toLocaleString("en") + " prompts"];
  if (sel.domains && sel.domains.length) { bits.push(sel.domains.length + " domain" + (sel.domains.length > 1 ? "s" : "")); }
  if (sel.sample) { bits.push("sample " + sel.sample + " (seed " + sel.seed + ")"); }
  if (sel.shard) { bits.push("shard " + sel.shard); }
  if (META.merged) { bits.push("merged from " + META.merged.shards + " shards"); }
  bits.push((META.dataset || {}).identity || "");
  bits.push(META.created ? "created " + META.created : "");
  bits.push(META.producer ? "by " + META.producer : "");
  $("subtitle").textContent = bits.filter(Boolean).join(" · ");
  function badge(label, status) {
    var b = el("span", "badge " + cls(status), label + ": " + (status || "not judged"));
    b.dataset.status = status || "not judged";
    return b;
  }
  var reg = D.regression;
  add($("badges"), badge("level gate", R.gate_status), badge("regression gate", reg ? reg.status : D.baseline ? "not judged" : "no baseline"));
  $("badges").children[0].id = "gate-status";
  $("badges").children[1].id = "regression-status";

  // -- charts ------------------------------------------------------------------------------------
  var limits = (R.thresholds || {}).limits || {};
  var verdictOf = {};
  (R.gate || []).forEach(function (v) { verdictOf[v.scope + "/" + v.metric] = v.status; });
  var scopes = Object.keys(R.domains || {}).map(function (d) { return {key: d, label: d, figs: R.domains[d]}; });
  var overall = (R.overall || {})[D.figure] || {};
  scopes.push({key: "overall", label: "overall (" + (D.figure === "pooled" ? "pooled" : "mean of domains") + ")", figs: overall});
  var baseFigs = D.baseline ? D.baseline.figures || {} : {};
  $("figures-note").textContent = "Bars: the figure; black whisker: its 95% interval (paraphrase groups as the unit); red dashes: the limit of "
    + ((R.thresholds || {}).source || "the thresholds") + (D.baseline ? "; purple diamond: the baseline" + (D.baseline.from === "regression" ? " (on the prompts both runs hold)" : "") : "") + ".";

  function chart(metric) {
    var W = 640, LW = 180, PW = 300, RH = 30, TOP = 26;
    var H = TOP + RH * scopes.length + 8;
    var box = el("div", "chart");
    box.id = "chart-" + metric.name;
    add(box, el("h4", null, metric.label + (metric.higher ? " (higher is better)" : " (lower is better)")));
    var s = svg("svg", {width: W, height: H, viewBox: "0 0 " + W + " " + H, role: "img"});
    s.appendChild(svg("title", {}, metric.label + " per domain"));
    function x(v) { return LW + Math.max(0, Math.min(1, v)) * PW; }
    [0, 0.25, 0.5, 0.75, 1].forEach(function (t) {
      s.appendChild(svg("line", {"class": "grid", x1: x(t), x2: x(t), y1: TOP - 4, y2: H - 6}));
      s.appendChild(svg("text", {x: x(t), y: TOP - 8, "text-anchor": "middle", "class": "small"}, t.toString()));
    });
    scopes.forEach(function (sc, i) {
      var y = TOP + i * RH, figs = sc.figs || {}, v = figs[metric.name], c = figs[metric.name + "_ci"];
      var g = svg("g", {"class": "bar-row"});
      g.setAttribute("data-scope", sc.key);
      g.appendChild(svg("text", {x: LW - 8, y: y + 15, "text-anchor": "end", "class": "scope"}, short(sc.label, 28)));
      g.appendChild(svg("rect", {"class": "track", x: x(0), y: y + 4, width: PW, height: 16}));
      var status = verdictOf[sc.key + "/" + metric.name] || "";
      if (num(v)) {
        g.appendChild(svg("rect", {"class": "bar " + status, x: x(0), y: y + 5, width: Math.max(1, x(v) - x(0)), height: 14}));
      }
      if (c && num(c[0]) && num(c[1])) {
        g.appendChild(svg("line", {"class": "ci", x1: x(c[0]), x2: x(c[1]), y1: y + 12, y2: y + 12}));
        g.appendChild(svg("line", {"class": "ci", x1: x(c[0]), x2: x(c[0]), y1: y + 7, y2: y + 17}));
        g.appendChild(svg("line", {"class": "ci", x1: x(c[1]), x2: x(c[1]), y1: y + 7, y2: y + 17}));
      }
      var lim = (limits[sc.key] || {})[metric.key];
      if (num(lim)) { g.appendChild(svg("line", {"class": "limit", x1: x(lim), x2: x(lim), y1: y + 1, y2: y + 23})); }
      var b = (baseFigs[sc.key] || {})[metric.name];
      if (num(b)) {
        var bx = x(b), by = y + 12;
        g.appendChild(svg("path", {"class": "base", d: "M" + bx + " " + (by - 6) + "L" + (bx + 6) + " " + by + "L" + bx + " " + (by + 6) + "L" + (bx - 6) + " " + by + "Z"}));
      }
      var t = svg("text", {x: x(1) + 8, y: y + 12, "class": "v"}, num(v) ? f3(v) + (metric.interval ? " " + ci(c) : "") : "–");
      g.appendChild(t);
      var sub = [];
      if (num(lim)) { sub.push(svg("tspan", {"class": "lim"}, (metric.higher ? "min " : "max ") + lim)); }
      if (num(b)) { sub.push(svg("tspan", {"class": "was", dx: sub.length ? 8 : 0}, "baseline " + f3(b))); }
      if (sub.length) {
        var t2 = svg("text", {x: x(1) + 8, y: y + 25, "class": "small"});
        sub.forEach(function (n) { t2.appendChild(n); });
        g.appendChild(t2);
      }
      s.appendChild(g);
    });
    box.appendChild(s);
    return box;
  }
  var shownMetrics = D.metrics.filter(function (m) {
    return scopes.some(function (sc) { return sc.figs && (m.name in sc.figs); });
  });
  shownMetrics.forEach(function (m) { $("charts").appendChild(chart(m)); });

  // The figures as a table (the numbers a screen reader or a copy-paste wants).
  (function () {
    var t = $("figures-table");
    var head = ["scope", "prompts", "scored", "groups", "errors"];
    shownMetrics.forEach(function (m) { head.push(m.label); });
    row(t, head, true);
    scopes.forEach(function (sc) {
      var f = sc.figs || {};
      var tr = el("tr");
      tr.dataset.scope = sc.key;
      cell(tr, sc.label);
      ["n", "scored", "groups", "errors"].forEach(function (k) { cell(tr, f[k] === undefined ? "–" : f[k], "num"); });
      shownMetrics.forEach(function (m) {
        var text = f3(f[m.name]) + (m.interval && f[m.name + "_ci"] ? " " + ci(f[m.name + "_ci"]) : "");
        var lim = (limits[sc.key] || {})[m.key];
        if (num(lim)) { text += (m.higher ? "\nmin " : "\nmax ") + lim; }
        var b = (baseFigs[sc.key] || {})[m.name];
        if (num(b)) { text += "\nbaseline " + f3(b); }
        var td = cell(tr, text, "num " + cls(verdictOf[sc.key + "/" + m.name] || "none"));
        td.dataset.metric = m.name;
      });
      t.appendChild(tr);
    });
  })();

  // -- verdicts --------------------------------------------------------------------------------
  (function () {
    var box = $("gate");
    var why = null;
    if (R.gate_status === "skipped") {
      why = sel.shard ? "This report is shard " + sel.shard + " of a run: its gates are skipped (it ran part of the selection); defan merge judges the whole run."
        : sel.narrowed ? "Part of the selected prompts ran (-k, -m, --deselect, --lf, a path or pytest-split): the gate judges whole runs." : "Skipped.";
    }
    if (why) { box.appendChild(el("p", "warn", why)); }
    if (!(R.gate || []).length) { box.appendChild(el("p", "muted", R.thresholds ? "No limit applies." : "No thresholds file: nothing was gated.")); return; }
    var t = el("table", "grid");
    t.id = "gate-table";
    row(t, ["scope", "metric", "status", "value", "limit", "message"], true);
    R.gate.forEach(function (v) {
      var tr = el("tr");
      cell(tr, v.scope); cell(tr, v.metric); cell(tr, v.status, cls(v.status));
      cell(tr, v.metric === "samples" ? v.value : f3(v.value), "num"); cell(tr, v.limit, "num"); cell(tr, v.message);
      t.appendChild(tr);
    });
    box.appendChild(t);
  })();
  (function () {
    var box = $("regression");
    if (!reg) {
      box.appendChild(el("p", "muted", D.baseline ? "The report was not judged against a baseline; the baseline given is shown in the charts and the prompts." : "No baseline: no regression gate."));
      return;
    }
    var b = reg.baseline || {}, p = reg.pairs || {};
    box.appendChild(el("p", null, "Baseline " + (b.path || "?") + " (" + (b.model || "?") + ", " + (b.created || "?") + "): "
      + (p.paired || 0) + " prompts in common in " + (p.groups || 0) + " groups; "
      + Math.round(100 * (reg.confidence || 0.95)) + "% intervals; flipped: " + (reg.flipped_counts || {}).worse + " worse, "
      + (reg.flipped_counts || {}).better + " better."));
    if (reg.status === "skipped") { box.appendChild(el("p", "warn", "Skipped: " + (reg.reason || ""))); }
    var t = el("table", "grid");
    t.id = "regression-table";
    row(t, ["scope", "metric", "before", "after", "change", "interval", "tolerance", "flips worse / better", "verdict"], true);
    Object.keys(reg.scopes || {}).forEach(function (scope) {
      var mets = reg.scopes[scope];
      Object.keys(mets).forEach(function (m) {
        var c = mets[m], tr = el("tr");
        cell(tr, scope); cell(tr, m.toUpperCase()); cell(tr, f3(c.old), "num"); cell(tr, f3(c.new), "num");
        cell(tr, signed(c.change), "num");
        cell(tr, c.interval ? "[" + signed(c.interval[0]) + ", " + signed(c.interval[1]) + "]" : "–", "num");
        cell(tr, c.tolerance === null || c.tolerance === undefined ? "–" : c.tolerance, "num");
        cell(tr, (c.worse_flips || 0) + " / " + (c.better_flips || 0), "num");
        var verdict = c.regressed ? "REGRESSED" : "ok";
        var td = cell(tr, verdict, c.regressed ? "s-fail" : "s-pass");
        td.title = c.message || "";
        t.appendChild(tr);
      });
    });
    box.appendChild(t);
  })();

  // -- the prompts -------------------------------------------------------------------------------
  function option(select, value, label) { var o = el("option", null, label); o.value = value; select.appendChild(o); }
  var fDomain = $("f-domain"), fVerdict = $("f-verdict"), fFlip = $("f-flip"), fKind = $("f-kind"), fSearch = $("f-search");
  var domainCount = D.domains.map(function () { return 0; }), kindCount = D.kinds.map(function () { return 0; });
  ROWS.forEach(function (r) {
    if (r[COL.domain] !== null) { domainCount[r[COL.domain]]++; }
    if (r[COL.kind] !== null) { kindCount[r[COL.kind]]++; }
  });
  option(fDomain, "", "all");
  D.domains.forEach(function (d, i) { option(fDomain, String(i), d + " (" + domainCount[i] + ")"); });
  [["", "all"], ["ok", "ok (right and aligned)"], ["fch", "hallucinated (FCH: not right)"], ["pmh", "misaligned (PMH)"], ["error", "call error"]]
    .forEach(function (o) { option(fVerdict, o[0], o[1]); });
  [["", "all"], ["any", "flipped"], ["worse", "worse (right → wrong or aligned → misaligned)"], ["better", "better"]]
    .forEach(function (o) { option(fFlip, o[0], o[1]); });
  fFlip.disabled = !(HAS_BASE || ANY_FLIP);
  option(fKind, "", "all");
  option(fKind, "any", "any call error (" + kindCount.reduce(function (a, b) { return a + b; }, 0) + ")");
  D.kinds.forEach(function (k, i) { option(fKind, String(i), k + " (" + kindCount[i] + ")"); });

  var hay = null;
  function haystack() {
    if (!hay) {
      hay = ROWS.map(function (r) {
        return [r[COL.id], r[COL.question], r[COL.answer], r[COL.response], r[COL.claim], r[COL.error], r[COL.group]]
          .join("\n").toLowerCase();
      });
    }
    return hay;
  }
  var view = [], page = 0;
  function filter() {
    var d = fDomain.value, v = fVerdict.value, fl = fFlip.value, k = fKind.value, q = fSearch.value.trim().toLowerCase();
    var h = q ? haystack() : null, out = [];
    for (var i = 0; i < ROWS.length; i++) {
      var r = ROWS[i], code = r[COL.verdict], flip = r[COL.flip];
      if (d !== "" && String(r[COL.domain]) !== d) { continue; }
      if (v === "ok" && code !== 0) { continue; }
      if (v === "fch" && (code === 4 || !(code & 1))) { continue; }
      if (v === "pmh" && (code === 4 || !(code & 2))) { continue; }
      if (v === "error" && code !== 4) { continue; }
      if (fl === "any" && !flip) { continue; }
      if (fl === "worse" && !(flip & 5)) { continue; }
      if (fl === "better" && !(flip & 10)) { continue; }
      if (k === "any" && r[COL.kind] === null) { continue; }
      if (k !== "" && k !== "any" && String(r[COL.kind]) !== k) { continue; }
      if (h && h[i].indexOf(q) < 0) { continue; }
      out.push(i);
    }
    view = out;
    page = 0;
    draw();
  }
  function flipTags(flip) {
    var tags = [];
    if (flip & 1) { tags.push(["worse", "FCH: was right"]); }
    if (flip & 2) { tags.push(["better", "FCH: was wrong"]); }
    if (flip & 4) { tags.push(["worse", "PMH: was aligned"]); }
    if (flip & 8) { tags.push(["better", "PMH: was misaligned"]); }
    return tags.map(function (t) { return el("span", "flip " + t[0], t[1]); });
  }
  function verdictCell(tr, code, extra) {
    var td = cell(tr, VERDICT[code] === undefined ? "–" : VERDICT[code], "verdict v-" + code);
    (extra || []).forEach(function (n) { td.appendChild(n); });
    return td;
  }
  var thead = document.querySelector("#rows thead"), tbody = document.querySelector("#rows tbody");
  row(thead, ["prompt", "verdict", "question", "gold", "response", "claim"].concat(HAS_BASE || ANY_FLIP ? ["baseline"] : []).concat(["group"]), true);
  function draw() {
    var pages = Math.max(1, Math.ceil(view.length / PAGE));
    page = Math.max(0, Math.min(page, pages - 1));
    var start = page * PAGE, end = Math.min(view.length, start + PAGE);
    var frag = document.createDocumentFragment();
    for (var j = start; j < end; j++) {
      var i = view[j], r = ROWS[i], tr = el("tr");
      tr.dataset.id = r[COL.id];
      cell(tr, r[COL.id], "id");
      verdictCell(tr, r[COL.verdict], flipTags(r[COL.flip]));
      cell(tr, short(r[COL.question], 400));
      cell(tr, short(r[COL.answer], 200), "gold");
      cell(tr, r[COL.verdict] === 4 ? short(r[COL.error], 400) : short(r[COL.response], 400), r[COL.verdict] === 4 ? "response err" : "response");
      cell(tr, r[COL.claim] === null ? "–" : short(r[COL.claim], 200), "claim");
      if (HAS_BASE || ANY_FLIP) {
        var old = r[COL.old_verdict];
        var txt = old === null ? (r[COL.old_claim] !== null ? "claim " + short(r[COL.old_claim], 80) : "–")
          : VERDICT[old] + (r[COL.old_claim] !== null ? ": " + short(r[COL.old_claim], 80) : "");
        cell(tr, txt, "old");
      }
      var gtd = el("td", "grp");
      var btn = el("button", "link", r[COL.group]);
      btn.type = "button";
      btn.dataset.group = r[COL.group];
      gtd.appendChild(btn);
      tr.appendChild(gtd);
      frag.appendChild(tr);
    }
    tbody.textContent = "";
    if (!view.length) {
      var none = el("tr"), td = el("td", "empty", "No prompt matches these filters.");
      td.colSpan = thead.rows[0].cells.length;
      none.appendChild(td);
      frag.appendChild(none);
    }
    tbody.appendChild(frag);
    $("p-info").textContent = (view.length ? (start + 1).toLocaleString("en") + "–" + end.toLocaleString("en") : "0")
      + " of " + view.length.toLocaleString("en") + " prompts" + (view.length !== ROWS.length ? " (filtered from " + ROWS.length.toLocaleString("en") + ")" : "")
      + " · page " + (page + 1) + " of " + pages;
    $("p-info").dataset.count = String(view.length);
  }
  var timer = null;
  [fDomain, fVerdict, fFlip, fKind].forEach(function (s) { s.addEventListener("change", filter); });
  fSearch.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(filter, 150); });
  $("p-first").addEventListener("click", function () { page = 0; draw(); });
  $("p-prev").addEventListener("click", function () { page -= 1; draw(); });
  $("p-next").addEventListener("click", function () { page += 1; draw(); });
  $("p-last").addEventListener("click", function () { page = 1e9; draw(); });
  tbody.addEventListener("click", function (ev) {
    var t = ev.target;
    if (t && t.dataset && t.dataset.group !== undefined) { showGroup(t.dataset.group, true); }
  });

  // -- the paraphrase group -------------------------------------------------------------------
  // Maps, not objects: a group key is data (a user's "__proto__" must be just a key).
  var groupRows = new Map(), groupOrder = [];
  ROWS.forEach(function (r, i) {
    var g = r[COL.group];
    if (!groupRows.has(g)) { groupRows.set(g, []); groupOrder.push(g); }
    groupRows.get(g).push(i);
  });
  var groupAt = new Map();
  groupOrder.forEach(function (g, i) { groupAt.set(g, i); });
  var consistentOf = new Map(Object.keys(D.consistent).map(function (k) { return [k, D.consistent[k]]; }));
  var current = null;
  function showGroup(key, scroll) {
    var box = $("group-view");
    box.textContent = "";
    if (!groupRows.has(key)) {
      box.appendChild(el("p", "warn", "No group " + key + " in this report."));
      return;
    }
    current = key;
    $("g-key").value = key;
    var idx = groupRows.get(key), first = ROWS[idx[0]];
    var golds = [];
    idx.forEach(function (i) { if (golds.indexOf(ROWS[i][COL.answer]) < 0) { golds.push(ROWS[i][COL.answer]); } });
    var consistent = consistentOf.get(key);
    var info = el("p");
    info.id = "group-info";
    add(info, el("strong", null, key), el("span", null, " · " + (D.domains[first[COL.domain]] || "") + " · type " + (D.types[first[COL.type]] || "")
      + " · " + idx.length + " paraphrase" + (idx.length > 1 ? "s" : "") + " · gold "), el("span", "gold", golds.join(" | ")),
      el("span", null, " · RC: " + (consistent === true ? "consistent" : consistent === false ? "inconsistent" : "not counted (a single response, or a call error)")));
    box.appendChild(info);
    var wrong = 0, mis = 0, errs = 0;
    idx.forEach(function (i) { var c = ROWS[i][COL.verdict]; if (c === 4) { errs++; } else { if (c & 1) { wrong++; } if (c & 2) { mis++; } } });
    box.appendChild(el("p", "muted", wrong + " hallucinated (FCH), " + mis + " misaligned (PMH), " + errs + " call errors of " + idx.length));
    var t = el("table", "grid rows");
    t.id = "group-table";
    var base = HAS_BASE || ANY_FLIP;
    row(t, ["prompt", "question", "response", "claim", "verdict"].concat(base ? ["baseline claim", "baseline verdict", "baseline response"] : []), true);
    idx.forEach(function (i) {
      var r = ROWS[i], tr = el("tr");
      tr.dataset.id = r[COL.id];
      cell(tr, r[COL.id], "id");
      cell(tr, r[COL.question]);
      cell(tr, r[COL.verdict] === 4 ? r[COL.error] : r[COL.response], "response");
      cell(tr, r[COL.claim] === null ? "–" : r[COL.claim], "claim");
      verdictCell(tr, r[COL.verdict], flipTags(r[COL.flip]));
      if (base) {
        cell(tr, r[COL.old_claim] === null ? "–" : r[COL.old_claim]);
        var ov = r[COL.old_verdict];
        cell(tr, ov === null ? "–" : VERDICT[ov], ov === null ? "" : "v-" + ov);
        cell(tr, r[COL.old_response] === null ? "–" : short(r[COL.old_response], 600));
      }
      t.appendChild(tr);
    });
    box.appendChild(t);
    if (scroll) { $("group").scrollIntoView(); }
  }
  function step(delta) {
    if (!groupOrder.length) { return; }
    var at = current === null ? (delta > 0 ? -1 : 0) : groupAt.get(current);
    showGroup(groupOrder[(at + delta + groupOrder.length) % groupOrder.length], false);
  }
  $("g-prev").addEventListener("click", function () { step(-1); });
  $("g-next").addEventListener("click", function () { step(1); });
  $("g-key").addEventListener("change", function () { showGroup($("g-key").value.trim(), false); });

  // -- the run's metadata ------------------------------------------------------------------------
  (function () {
    var t = $("meta");
    function walk(prefix, value) {
      if (value && typeof value === "object" && !Array.isArray(value) && Object.keys(value).length) {
        Object.keys(value).forEach(function (k) { walk(prefix ? prefix + "." + k : k, value[k]); });
        return;
      }
      var text = Array.isArray(value) && value.every(function (x) { return x === null || typeof x !== "object"; })
        ? value.join(", ") : (value !== null && typeof value === "object" ? JSON.stringify(value) : String(value));
      var tr = el("tr");
      cell(tr, prefix); cell(tr, text);
      t.appendChild(tr);
    }
    walk("", {meta: META, thresholds: R.thresholds ? {source: R.thresholds.source, decide: R.thresholds.decide, figure: R.thresholds.figure} : null,
      usage: R.usage, report: {truncated_texts: D.truncated}});
  })();

  filter();
  window.__defan = {ready: true, rows: ROWS.length, renderMs: Math.round(performance.now())};
  document.body.dataset.ready = "1";
})();
"""
