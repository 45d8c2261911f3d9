"""The terminal table and the JSON report for a DefAn run.

The table is for a human reading a terminal or CI log: one fixed-width row per domain, then the
two overall rows (the paper's mean of domains, and the pooled figure). The JSON report is for
machines and later comparison: ``{"rows": [...], "domains": {...}, "overall": {...}}`` where
``rows`` are the per-response records and the rest is :func:`defan_pytest.metrics.summarize`.
"""
from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

__all__ = ["build_report", "format_table", "write_json"]

#: Figures where a higher value is worse (a threshold is a maximum); RC is the opposite.
_MAX_FIGURES = ("fch", "pmh", "error_rate")
_MIN_FIGURES = ("rc",)

_MEAN_LABEL = "overall (mean of domains)"
_POOLED_LABEL = "overall (pooled)"
_BREACH = "!"


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _rate_ci(value: float | None, ci: Sequence[float] | None) -> str:
    if value is None:
        return "-"
    if ci is None:
        return f"{value:.3f}"
    return f"{value:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]"


def _breached(figure: str, value: float | None, limits: Mapping[str, Any] | None) -> bool:
    if value is None or not limits or limits.get(figure) is None:
        return False
    limit = float(limits[figure])
    if figure in _MAX_FIGURES:
        return value > limit
    if figure in _MIN_FIGURES:
        return value < limit
    return False


def _row(label: str, figs: Mapping[str, Any], limits: Mapping[str, Any] | None) -> list[str]:
    def cell(figure: str, text: str) -> str:
        # The marker goes after the text so the numbers stay aligned in their column.
        return text + (_BREACH if _breached(figure, figs.get(figure), limits) else "")

    return [
        label,
        str(figs.get("n", 0)),
        str(figs.get("errors", 0)),
        cell("fch", _rate_ci(figs.get("fch"), figs.get("fch_ci"))),
        cell("pmh", _rate_ci(figs.get("pmh"), figs.get("pmh_ci"))),
        cell("rc", _rate_ci(figs.get("rc"), figs.get("rc_ci"))),
        cell("error_rate", _rate(figs.get("error_rate"))),
    ]


def format_table(
    summary: Mapping[str, Any],
    thresholds: Mapping[str, Mapping[str, float]] | None = None,
) -> str:
    """Render a summary from :func:`~defan_pytest.metrics.summarize` as a fixed-width table.

    Columns: domain, n, errors, FCH, PMH and RC (each with its 95% interval) and the error rate;
    then an "overall (mean of domains)" and an "overall (pooled)" row. Rates print with three
    decimals; a figure that cannot be computed prints as ``-``.

    ``thresholds`` optionally maps a domain name (or ``"overall"``, which applies to the mean
    row, the figure the paper reports) to limits ``{"fch": max, "pmh": max, "error_rate": max,
    "rc": min}``; a figure outside its limit is marked with ``!`` and a legend line is added.
    The table only marks figures; deciding pass/fail is the gate's job.
    """
    thresholds = thresholds or {}
    domains: Mapping[str, Any] = summary.get("domains") or {}
    overall: Mapping[str, Any] = summary.get("overall") or {}

    header = ["domain", "n", "errors", "FCH [95% CI]", "PMH [95% CI]", "RC [95% CI]", "error rate"]
    body = [_row(name, figs, thresholds.get(name)) for name, figs in domains.items()]
    tail = [
        _row(_MEAN_LABEL, overall.get("mean") or {}, thresholds.get("overall")),
        _row(_POOLED_LABEL, overall.get("pooled") or {}, None),
    ]
    rows = [header, *body, *tail]
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    # Text columns left-aligned, numbers right-aligned so digits line up.
    left = {0, 3, 4, 5}

    def fmt(r: list[str]) -> str:
        cells = [c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))]
        return "  ".join(cells).rstrip()

    rule = "  ".join("-" * w for w in widths)
    lines = [fmt(header), rule, *(fmt(r) for r in body)]
    if body:
        lines.append(rule)
    lines.extend(fmt(r) for r in tail)
    if any(_BREACH in c for r in body + tail for c in r[3:]):
        lines.append(f"{_BREACH} outside its threshold")
    return "\n".join(lines) + "\n"


def build_report(rows: Iterable[Mapping[str, Any]], summary: Mapping[str, Any]) -> dict[str, Any]:
    """Assemble the JSON report ``{"rows": [...], "domains": {...}, "overall": {...}}``.

    ``rows`` are the per-response records (in the order they were asked), copied into plain
    dicts so the report does not alias the caller's objects.
    """
    return {
        "rows": [dict(r) for r in rows],
        "domains": dict(summary.get("domains") or {}),
        "overall": dict(summary.get("overall") or {}),
    }


def write_json(path: str | os.PathLike[str], report: Mapping[str, Any]) -> None:
    """Write ``report`` to ``path`` as UTF-8 JSON, atomically.

    The report is written to a temporary file in the same directory and moved into place with
    :func:`os.replace`, so a reader (or a crash mid-write) never sees half a report. Non-ASCII
    text (names such as ``Röntgen``) is kept as is rather than ``\\u``-escaped.
    """
    target = Path(path)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    # os.open with 0o666 (not tempfile.mkstemp, which forces 0o600) so the report gets the same
    # permissions under the user's umask as any file they write themselves.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            json.dump(report, fh, ensure_ascii=False, indent=1, allow_nan=False)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
