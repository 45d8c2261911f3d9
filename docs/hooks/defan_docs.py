"""MkDocs hook of the documentation site (``hooks:`` in mkdocs.yml): the pages that must not
drift from the code are generated when the site is built.

* ``<!-- defan:options -->`` in ``options.md`` becomes the table of every ``--defan-*`` option
  and ini key, built from :data:`defan_pytest.settings.options.OPTIONS` (the one table the
  plugin registers its options from), each default as ``--help`` states it.
* ``<!-- defan:report-schema -->`` in ``outputs.md`` becomes the published JSON Schema of the
  report (``defan_pytest/report/report.schema.json``), verbatim.

``tests/test_docs.py`` builds the site with ``--strict`` and checks the built options page
against :func:`option_rows`.
"""
from __future__ import annotations

import html
from pathlib import Path
from typing import Any, List, Tuple

OPTIONS_MARKER = "<!-- defan:options -->"
SCHEMA_MARKER = "<!-- defan:report-schema -->"

#: How each kind of option is given, on the command line and in the ini file.
KINDS = {
    "string": ("`--defan-{noun}=VALUE`", "a value"),
    "bool": ("`--defan-{noun}`", "`true` / `false`"),
    "linelist": ("`--defan-{noun}=VALUE`, repeatable", "one value a line"),
    "args": ("`--defan-{noun} KEY=VALUE`, repeatable", "one `KEY=VALUE` a line"),
}

#: The columns of the generated table.
HEADER = ("option", "ini key", "ini value", "default", "what")


def option_rows() -> List[Tuple[str, str, str, str, str]]:
    """One row per option, as plain text (what the built page's cells must read): the flag as
    given on the command line, the ini key, the ini value's form, the default as the help text
    states it, and the help."""
    from defan_pytest.settings.options import OPTIONS

    rows = []
    for opt in OPTIONS:
        usage, ini = KINDS[opt.kind]
        shown = opt.shown if opt.shown is not None else str(opt.default)
        rows.append((usage.format(noun=opt.noun).replace("`", ""), opt.dest, ini.replace("`", ""), shown, opt.help))
    return rows


def _escape(text: str) -> str:
    """``text`` as literal Markdown in a table cell: HTML escaped, Markdown's specials and the
    cell separator backslash-escaped."""
    text = html.escape(text, quote=False)
    for char in "\\`*_[]|":
        text = text.replace(char, "\\" + char)
    return text


def options_table() -> str:
    """The Markdown table of :func:`option_rows` (flags and keys as code)."""
    from defan_pytest.settings.options import OPTIONS

    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    for opt, (_, dest, _, shown, help_) in zip(OPTIONS, option_rows()):
        usage, ini = KINDS[opt.kind]
        cells = (usage.format(noun=opt.noun), f"`{dest}`", ini, _escape(shown), _escape(help_))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def schema_block() -> str:
    """The report's JSON Schema as a fenced block, read from the installed package."""
    import importlib

    path = Path(importlib.import_module("defan_pytest.report.schema").__file__ or "").with_name("report.schema.json")
    return "```json\n" + path.read_text(encoding="utf-8").rstrip("\n") + "\n```\n"


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    """Replace the markers of the generated parts (mkdocs event)."""
    if OPTIONS_MARKER in markdown:
        markdown = markdown.replace(OPTIONS_MARKER, options_table())
    if SCHEMA_MARKER in markdown:
        markdown = markdown.replace(SCHEMA_MARKER, schema_block())
    return markdown
