"""``@defan_pytest.cases("golden.jsonl")``: a test parametrized with a team's own question file,
read by the same reader as ``--defan-dataset`` (CSV, JSON or JSONL; ``question``, ``answer``,
``type``, optional ``domain`` and ``group``), one test per row, its id the row's id.

A file with problems fails collection with the reader's message (every bad line at once, each
named by file and line), not a traceback.  A relative path is read from the test module's folder.
"""
from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any, Callable, Optional, TypeVar, Union

import pytest

from defan_pytest.dataset import DatasetError
from defan_pytest.dataset.user import load_user_set

__all__ = ["cases"]

F = TypeVar("F", bound=Callable[..., Any])


def _caller_folder() -> Path:
    """The folder of the module that called :func:`cases` (two frames up: cases, its caller)."""
    frame = inspect.currentframe()
    try:
        caller = frame.f_back.f_back if frame is not None and frame.f_back is not None else None
        name = caller.f_globals.get("__file__") if caller is not None else None
    finally:
        del frame
    return Path(name).resolve().parent if name else Path.cwd()


def cases(path: Union[str, Path], *, argname: str = "case", group_by_blocks: bool = False,
          domain: Optional[str] = None) -> Callable[[F], F]:
    """Parametrize the decorated test with one :class:`defan_pytest.dataset.Row` per row of
    ``path`` as ``argname`` (``case.question``, ``case.answer``, ``case.type``, ``case.domain``,
    ``case.id``).  ``group_by_blocks`` groups 15 consecutive rows as paraphrases (as the public
    split); ``domain`` names rows without one (default: the file's stem).

    >>> import defan_pytest
    >>> @defan_pytest.cases("golden.jsonl")   # doctest: +SKIP
    ... def test_my_app(case):
    ...     defan_pytest.assert_answer(question=case.question, response=my_app(case.question),
    ...                                gold=case.answer, type=case.type)
    """
    __tracebackhide__ = True  # called from a team's test module: a failure points there
    file = Path(path)
    if not file.is_absolute():
        file = _caller_folder() / file
    problem = None
    try:
        rows = load_user_set(file, group_by_blocks=group_by_blocks, default_domain=domain)
    except DatasetError as exc:
        problem = str(exc)
    if problem is not None:
        # Collection fails with the reader's message alone (outside the except block, so that
        # the DatasetError is not shown again as the context; pytrace off: no traceback).
        pytest.fail(f"defan_pytest.cases: {problem}", pytrace=False)

    def decorate(test: F) -> F:
        marked: F = pytest.mark.parametrize(argname, rows, ids=[r.id for r in rows])(test)
        return marked

    return decorate

