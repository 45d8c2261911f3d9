"""The HTML report's Run section: what ran, as labelled rows of plain sentences.

:func:`run_rows` turns a report's ``meta``, ``thresholds``, ``usage`` and regression baseline into
``[label, text]`` pairs (model, fingerprint, data set, scorer, selection, calls, timings,
repeats, thresholds, usage, ...), in that order; a key it does not know (a later version's, a producer's
own) still gets a row of its own, as ``key: value`` text, so nothing of the report is lost.  Every
value is the report's, read defensively: a missing or odd field is left out or shown as it is,
never an error.  The page puts each text in with ``textContent``.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Callable, Dict, List, Optional

from defan_pytest.gates.baseline import levels_note
from defan_pytest.records import Report

__all__ = ["run_rows"]


def _plain(value: Any) -> str:
    """Any JSON value as one line of text (``a 1, b 2`` for an object, commas for a list)."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, Mapping):
        return ", ".join(f"{str(k).replace('_', ' ')} {_plain(v)}" for k, v in value.items()) or "–"
    if isinstance(value, (list, tuple)):
        return ", ".join(_plain(v) for v in value) or "–"
    return str(value)


def _map(x: Any) -> Mapping[str, Any]:
    return x if isinstance(x, Mapping) else {}


def _count(n: Any, noun: str) -> Optional[str]:
    if not isinstance(n, int) or isinstance(n, bool):
        return None
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def _seconds(x: Any) -> Optional[str]:
    if not isinstance(x, (int, float)) or isinstance(x, bool):
        return None
    return f"{x * 1000:.0f} ms" if x < 1 else f"{x:,.1f} s"


def _join(parts: Sequence[Optional[str]], sep: str = " · ") -> str:
    return sep.join(p for p in parts if p) or "–"


def _model(meta: Mapping[str, Any], rows: List[List[str]]) -> None:
    model = _map(meta.get("model"))
    if not model:
        rows.append(["model", "none: responses scored as given (defan score)"])
        return
    known = {"name", "kind", "version", "source", "model", "system_prompt", "params", "fingerprint"}
    rows.append(["model", _join([
        str(model.get("name")), f"model string {model['model']}" if model.get("model") not in (None, model.get("name")) else None,
        f"version {model['version']}" if model.get("version") is not None else None,
        f"kind {model['kind']}" if model.get("kind") else None,
    ])])
    if model.get("source"):
        rows.append(["model source", f"sha256 {model['source']}"])
    fp = _map(model.get("fingerprint"))
    if fp:
        sources, inputs = list(fp.get("sources") or ()), list(fp.get("inputs") or ())
        rows.append(["fingerprint", _join([
            str(fp.get("digest")) if fp.get("digest") else None,
            f"over {_count(len(sources), 'project source file')}" + (f": {_plain(sources)}" if sources else ""),
            f"{_count(len(inputs), 'declared input')}" + (f": {_plain(inputs)}" if inputs else ""),
        ])])
    if model.get("system_prompt"):
        rows.append(["system prompt", str(model["system_prompt"])])
    if model.get("params"):
        rows.append(["call parameters", _plain(model["params"])])
    rows.extend([f"model {k.replace('_', ' ')}", _plain(v)] for k, v in model.items() if k not in known)


def _dataset(meta: Mapping[str, Any], rows: List[List[str]]) -> None:
    ds = _map(meta.get("dataset"))
    commit = ds.get("commit")
    rows.append(["data set", _join([
        str(ds.get("source")) if ds.get("source") else None, str(ds.get("identity")) if ds.get("identity") else None,
        f"commit {commit}" if commit else None,
    ])])
    files = _map(ds.get("sha256"))
    if files:
        rows.append(["data files", "sha256 " + ", ".join(f"{k} {str(v)[:12]}…" for k, v in files.items())])
    rows.extend([f"data set {k}", _plain(v)] for k, v in ds.items() if k not in ("source", "identity", "commit", "sha256"))
    sc = _map(meta.get("scorer"))
    if sc:
        spacy = f"spaCy {sc.get('pipeline')} {sc.get('version') or ''}".rstrip() if sc.get("ner") else "no spaCy pipeline"
        extra = [f"{k} {_plain(v)}" for k, v in sc.items() if k not in ("rules", "ner", "pipeline", "version")]
        rows.append(["scorer", _join([f"rules {sc.get('rules')}", spacy, *extra])])


def _selection(meta: Mapping[str, Any], rows: List[List[str]]) -> None:
    sel = _map(meta.get("selection"))
    domains = list(sel.get("domains") or ())
    sample = sel.get("sample")
    rows.append(["selection", _join([
        f"{_count(len(domains), 'domain')}: {_plain(domains)}" if domains else "every domain",
        f"sample {sample} (seed {sel.get('seed')})" if sample else "every prompt",
        f"{_count(sel['selected'], 'prompt')} selected" if isinstance(sel.get("selected"), int) else None,
        f"{sel.get('ran'):,} ran" if isinstance(sel.get("ran"), int) else None,
        "narrowed by -k, -m, --deselect, --lf, a path or pytest-split" if sel.get("narrowed") else None,
        f"shard {sel['shard']}" if sel.get("shard") else None,
        *(f"{k} {_plain(v)}" for k, v in sel.items()
          if k not in ("domains", "sample", "seed", "selected", "ran", "narrowed", "shard")),
    ])])
    merged = _map(meta.get("merged"))
    if merged:
        rows.append(["merged", _join([_count(merged.get("shards"), "shard"), _plain(merged.get("files"))], ": ")])


def _calls(meta: Mapping[str, Any], rows: List[List[str]]) -> None:
    calls = _map(meta.get("calls"))
    names = {"answered": "answered", "cached": "from the cache", "peer": "through a peer worker",
             "retries": "retries", "errors": "call errors"}
    parts = [f"{calls[k]:,} {label}" for k, label in names.items() if isinstance(calls.get(k), int)]
    kinds = _map(calls.get("error_kinds"))
    if kinds:
        parts.append("errors by kind: " + ", ".join(f"{k} {v}" for k, v in kinds.items()))
    parts += [f"{k} {_plain(v)}" for k, v in calls.items() if k not in names and k not in ("prompts", "error_kinds")]
    rows.append(["calls", _join([_count(calls.get("prompts"), "prompt"), _join(parts, ", ")], ": ")])
    durations = _map(meta.get("durations"))
    rows.append(["timings", _join([
        f"{str(k).replace('_', ' ')} {_seconds(v) or '–'}" for k, v in durations.items()
    ])])


def _repeat(meta: Mapping[str, Any], rows: List[List[str]]) -> None:
    """``--defan-repeat``: how often the model agreed with itself."""
    rep = _map(meta.get("repeat"))
    overall = _map(rep.get("overall"))
    if not overall:
        return
    rate = overall.get("flip_rate")
    t = rep.get("temperature")
    rows.append(["repeats", _join([
        f"{rep.get('times')} asks of {_count(overall.get('prompts'), 'prompt')}"
        + (f" at temperature {t:g}" if isinstance(t, (int, float)) else ""),
        f"answers identical {overall.get('identical')} of {overall.get('prompts')}",
        f"verdicts agree {overall.get('verdicts_agree')} of {overall.get('prompts')}",
        f"FCH verdict flip rate {rate:.1%} ({overall.get('flipped_pairs')} of {overall.get('pairs')} pairs of asks)"
        if isinstance(rate, (int, float)) else None,
        f"{overall['incomplete']} left out (an ask without an answer)" if overall.get("incomplete") else None,
    ])])


def _thresholds(report: Report, rows: List[List[str]]) -> None:
    t = report.thresholds
    if not isinstance(t, Mapping):
        rows.append(["thresholds", "none: no thresholds file, nothing gated"])
        return
    figure = "mean of domains" if t.get("figure") != "pooled" else "pooled"
    reg = _map(t.get("regression"))
    confidence = reg.get("confidence")
    rows.append(["thresholds", _join([
        str(t.get("source")) if t.get("source") else None,
        f"decide {t.get('decide') or 'point'}" + (" (a figure fails when its whole 95% interval is beyond its limit)"
                                                  if t.get("decide") == "interval" else " (on the figure)"),
        f"overall figure: {figure}",
        f"regression confidence {confidence:.0%}" if isinstance(confidence, (int, float)) else None,
    ])])
    limits = _map(t.get("limits"))
    distinct: Dict[str, List[str]] = {}
    for scope, lim in limits.items():
        text = ", ".join(f"{k} = {_plain(v)}" for k, v in _map(lim).items()) or "none"
        distinct.setdefault(text, []).append(str(scope))
    for text, scopes in distinct.items():
        where = "every scope" if len(distinct) == 1 and len(scopes) > 1 else ", ".join(scopes)
        rows.append(["limits", f"{where}: {text}"])


def _usage(report: Report, rows: List[List[str]]) -> None:
    usage = _map(report.usage)
    if not usage:
        return
    tokens, lat = _map(usage.get("tokens")), _map(usage.get("latency"))
    rows.append(["usage", _join([
        f"call path {usage['call_path']}" if usage.get("call_path") else None,
        "tokens " + _join([f"{tokens.get(k, 0):,} {k}" for k in ("prompt", "completion", "total")
                           if isinstance(tokens.get(k), int)], ", ") if tokens else None,
        f"{tokens['unknown']:,} answers without token counts" if isinstance(tokens.get("unknown"), int) and tokens["unknown"] else None,
        "latency " + _join([f"{k} {_seconds(lat.get(k))}" for k in ("p50", "p95", "mean") if _seconds(lat.get(k))], ", ")
        if lat else None,
        f"cost ${usage['cost']:.4f}" if isinstance(usage.get("cost"), (int, float)) else "cost unknown",
        f"budget {_plain(usage['budget'])}" if usage.get("budget") is not None else None,
    ])])


def _baseline(report: Report, rows: List[List[str]]) -> None:
    reg = _map(report.regression)
    b = _map(reg.get("baseline"))
    if b:
        rows.append(["baseline", _join([
            str(b.get("path")) if b.get("path") else None, f"model {b.get('model')}", f"created {b.get('created')}",
            f"defan-pytest {b['defan_pytest']}" if b.get("defan_pytest") else None,
            f"compared despite: {_plain(b['forced'])}" if b.get("forced") else None,
            levels_note(b),
        ])])


_KNOWN_META = ("defan_pytest", "producer", "created", "model", "dataset", "scorer", "selection", "calls",
               "durations", "merged", "repeat")


def run_rows(report: Report, truncated: int = 0) -> List[List[str]]:
    """The Run section's ``[label, text]`` rows of ``report`` (``truncated``: how many texts
    the page cut)."""
    meta = report.meta.to_json()
    rows: List[List[str]] = []
    steps: List[Callable[[Mapping[str, Any], List[List[str]]], None]] = [_model, _dataset, _selection, _calls, _repeat]
    for step in steps:
        step(meta, rows)
    _thresholds(report, rows)
    _usage(report, rows)
    _baseline(report, rows)
    rows.append(["produced", _join([f"defan-pytest {meta.get('defan_pytest')}", f"by {meta.get('producer')}",
                                    f"created {meta.get('created')}"])])
    rows.extend([str(k).replace("_", " "), _plain(v)] for k, v in meta.items() if k not in _KNOWN_META)
    if truncated:
        rows.append(["this page", f"{_count(truncated, 'text')} cut to their first characters (whole in the JSON report)"])
    return rows
