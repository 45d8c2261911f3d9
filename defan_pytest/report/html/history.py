"""The history page (``defan history --html``): FCH, PMH and RC per domain over a branch's
reports, a line chart and a table a figure, the regressions between consecutive reports and
the figures beyond their limits marked, then the regressions, the pairs not compared and the
files not read.

One self-contained page under the same content security policy as a run's page
(:func:`defan_pytest.report.html.render`): its CSS (``report.css`` and ``history.css``) and its
script (``history.js``) inline and allowed by their sha256, nothing else, so it can neither load
nor send anything; the history travels as inert JSON (every ``<`` escaped) that the script puts
into the page with ``textContent``.  It starts with the mark of a page of ours, so that a new
history replaces the last one.
"""
from __future__ import annotations

import string

from defan_pytest.report.history import History
from defan_pytest.report.html import _asset, _json_for_html, _sha256

__all__ = ["MARK", "render_history"]

#: The page's first line after the doctype (:func:`defan_pytest.report.writer.is_report` knows it).
MARK = "<!-- defan-pytest-report (HTML history) -->"


def render_history(history: History) -> str:
    """The HTML page of ``history`` (see the module docstring)."""
    css, js = "\n" + _asset("report.css") + _asset("history.css"), "\n" + _asset("history.js")
    csp = (
        "default-src 'none'; base-uri 'none'; form-action 'none'; img-src data:; "
        f"style-src 'sha256-{_sha256(css)}'; script-src 'sha256-{_sha256(js)}'"
    )
    page = string.Template(_asset("history.html"))
    return page.substitute(mark=MARK, csp=csp, css=css, js=js, data=_json_for_html(history.to_json()))
