"""The identity of a user's application: a digest of the code it can reach and the data it
declares.

A registered callable (``@defan_pytest.model``) is usually a thin function around the user's
own code (``from myapp import answer``): a digest of the function alone misses every edit that
matters.  Its answers are therefore keyed by a :class:`Fingerprint` of

* every source file of the user's project that is imported when the run starts: the modules in
  ``sys.modules`` whose file lies under the rootdir, outside site-packages, the virtual
  environment, the interpreter's own library and defan-pytest itself; and
* the files and folders the model declares (``@defan_pytest.model(..., inputs=["knowledge/"])``:
  a RAG's knowledge base, a prompt file), relative to the rootdir, walked recursively.

Editing ``myapp.py`` or a declared file changes the digest, and the cache asks the model again;
a file the model does not import (a test module) is not part of it.  The summary and the
report say what was covered (:meth:`Fingerprint.describe`, :meth:`Fingerprint.to_json`).
"""
from __future__ import annotations

import hashlib
import os
import site
import stat
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

__all__ = ["Fingerprint", "FingerprintError", "fingerprint", "project_modules"]

#: Files one declared folder may hold; beyond it the model's ``inputs`` is an error (a folder
#: such as ``/`` or a data lake would otherwise be read whole at every start).
MAX_INPUT_FILES = 20_000
#: Folders never walked inside a declared input folder.
_SKIPPED_DIRS = frozenset({"__pycache__", ".git", ".hg", ".svn", ".venv", "venv", "node_modules", ".tox", ".nox",
                           ".mypy_cache", ".pytest_cache", ".defan_cache"})


class FingerprintError(ValueError):
    """A declared input that does not exist, is not readable, or is too large a folder."""


@dataclass(frozen=True)
class Fingerprint:
    """The digest of an application's code and data, and what it covered.

    ``sources`` and ``inputs`` are the files (relative to the rootdir where they lie under
    it), sorted; ``digest`` a sha256 over each file's path and content digest.
    """

    digest: str
    sources: Tuple[str, ...]
    inputs: Tuple[str, ...]

    def describe(self) -> str:
        """``fingerprint 3f2a9c1b: 4 source files, 12 declared input files``."""
        parts = [f"{len(self.sources)} source file{'s' * (len(self.sources) != 1)}"]
        if self.inputs:
            parts.append(f"{len(self.inputs)} declared input file{'s' * (len(self.inputs) != 1)}")
        return f"fingerprint {self.digest[:8]}: " + ", ".join(parts)

    def to_json(self) -> Dict[str, Any]:
        """The report's ``meta.model.fingerprint``."""
        return {"digest": self.digest, "sources": list(self.sources), "inputs": list(self.inputs)}


def _excluded_roots() -> List[Path]:
    """Where installed code lives: never the user's project, even under the rootdir."""
    roots = {sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            roots.add(path)
    try:
        roots.update(site.getsitepackages())
    except AttributeError:  # pragma: no cover - some embedded interpreters lack it
        pass
    user_site = getattr(site, "USER_SITE", None)
    if user_site:
        roots.add(user_site)
    roots.add(str(Path(__file__).resolve().parents[1]))  # defan-pytest itself (defan_pytest/)
    return [Path(r).resolve() for r in roots if r]


def _within(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
    except ValueError:
        return False
    return True


def _installed(path: Path, excluded: Sequence[Path]) -> bool:
    if any(part in ("site-packages", "dist-packages") for part in path.parts):
        return True
    return any(_within(path, root) for root in excluded)


def project_modules(rootdir: Path, modules: Optional[Mapping[str, Any]] = None) -> List[Path]:
    """The source files of the imported modules that belong to the project under ``rootdir``.

    A virtual environment inside the project (``.venv/``), the interpreter's library and
    defan-pytest are left out; so are modules without a ``.py`` file (built-ins, namespace
    packages, compiled extensions), and test modules (pytest's default ``test_*.py`` and
    ``*_test.py``): pytest imports them after a run starts, so a fingerprint taken inside a
    test (the ``defan_evaluate`` fixture) would otherwise differ from the run's, and an
    application does not import its tests.
    """
    root = Path(rootdir).resolve()
    # An installation root that holds the project itself (a project inside a conda prefix)
    # would exclude everything: only the roots beside or inside the project count.
    excluded = [r for r in _excluded_roots() if not _within(root, r)]
    mods = dict(sys.modules if modules is None else modules)
    found = set()
    for mod in mods.values():
        file = getattr(mod, "__file__", None) if isinstance(mod, ModuleType) or hasattr(mod, "__file__") else None
        if not isinstance(file, str) or not file.endswith(".py"):
            continue
        path = Path(file).resolve()
        if _is_test_module(path.name) or not _within(path, root) or _installed(path, excluded) or _in_venv(path, root):
            continue
        found.add(path)
    return sorted(found)


def _is_test_module(name: str) -> bool:
    return (name.startswith("test_") and name.endswith(".py")) or name.endswith("_test.py")


def _in_venv(path: Path, root: Path) -> bool:
    for parent in path.parents:
        if parent == root or not _within(parent, root):
            return False
        if (parent / "pyvenv.cfg").is_file():
            return True
    return False


def _input_files(rootdir: Path, declared: Iterable[str]) -> List[Path]:
    out: List[Path] = []
    problems: List[str] = []
    for item in declared:
        path = Path(item)
        if not path.is_absolute():
            path = rootdir / path
        if path.is_file():
            resolved = _resolved(path)
            if resolved is None:
                problems.append(f"input {item!r}: a link that leads to itself ({path})")
            else:
                out.append(resolved)
        elif path.is_dir():
            files, bad = _walk(path)
            problems.extend(f"input {item!r}: {x}" for x in bad)
            if len(files) > MAX_INPUT_FILES:
                problems.append(f"input {item!r} holds more than {MAX_INPUT_FILES:,} files")
            out.extend(files)
        else:
            problems.append(f"input {item!r}: {_not_readable(path)} ({path})")
    if problems:
        raise FingerprintError("; ".join(problems))
    return sorted(set(out))


def _not_readable(path: Path) -> str:
    """What ``path`` is, when it is neither a regular file nor a folder."""
    try:
        mode = path.lstat().st_mode
    except OSError:
        return "no such file or folder"
    if stat.S_ISLNK(mode):
        return "a link that leads nowhere (its target is missing, or it leads to itself)"
    for test, what in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device")):
        if test(mode):
            return f"{what}, not a regular file or a folder: declare files or folders only"
    return "not a regular file or a folder"


def _resolved(path: Path) -> Optional[Path]:
    """``path`` with its links followed, or ``None`` for a link loop (``Path.resolve`` raises
    RuntimeError for one on older Pythons)."""
    try:
        return Path(os.path.realpath(path, strict=True))
    except (OSError, RuntimeError):
        return None


def _walk(folder: Path) -> Tuple[List[Path], List[str]]:
    """The files under ``folder``, and what in it is no file (a link loop, a dangling link)."""
    files: List[Path] = []
    problems: List[str] = []
    for here, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_DIRS and not d.startswith("."))
        for n in names:
            if n.startswith(".") or n.endswith(".pyc"):
                continue
            resolved = _resolved(Path(here, n))
            if resolved is None:
                problems.append(f"{Path(here, n)}: {_not_readable(Path(here, n))}")
                continue
            files.append(resolved)
        if len(files) > MAX_INPUT_FILES or len(problems) > 10:
            break
    return files, problems


def _shown(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


def fingerprint(rootdir: Path, inputs: Sequence[str] = (), modules: Optional[Mapping[str, Any]] = None) -> Fingerprint:
    """The :class:`Fingerprint` of the project under ``rootdir`` as imported now, with the
    declared ``inputs``.  Raises :class:`FingerprintError` for a missing or oversized input."""
    # lazy: start-up. This module is imported in every pytest session (the model registry); the
    # one reader lives in the dataset package, which loads only when a fingerprint is taken.  The
    # reader refuses a FIFO, a socket or a device in a declared folder instead of reading it forever.
    from defan_pytest.dataset import reader

    root = Path(rootdir).resolve()
    sources = project_modules(root, modules)
    declared = _input_files(root, inputs)
    h = hashlib.sha256()
    for kind, files in (("source", sources), ("input", declared)):
        for path in files:
            try:
                content = reader.sha256_of(path)
            except reader.InputError as exc:
                raise FingerprintError(f"{kind} {_shown(path, root)}: {exc.reason}") from None
            h.update(f"{kind}\0{_shown(path, root)}\0{content}\n".encode("utf-8", "surrogateescape"))
    return Fingerprint(h.hexdigest(), tuple(_shown(p, root) for p in sources), tuple(_shown(p, root) for p in declared))
