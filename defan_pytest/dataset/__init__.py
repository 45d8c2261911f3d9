"""The DefAn data: domain registry, the public split, and a user's own set.

Everything that reads questions from disk lives in this package, so that the rest of
defan-pytest only ever sees :class:`Row` objects with stable ids.

* :mod:`.domains`: :data:`DOMAINS` / :func:`get_domain` / :func:`parse_domains`, the pinned
  :data:`PUBLIC_COMMIT` and :data:`PUBLIC_SHA256`, :class:`Row` and :class:`DatasetError`.
* :mod:`.checks`: what every reader checks: :func:`answer_types` (the scorer's registry), golds
  of value types, paraphrase blocks.
* :mod:`.fetch`: :func:`resolve_public_dir` finds the public split in an explicit folder,
  ``DEFAN_DATA_DIR``, or a user cache filled on first use from the pinned upstream commit;
  every file is checked against its sha256, wherever it comes from.
* :mod:`.public`: :func:`read_public_csv` / :func:`load_public`.
* :mod:`.user`: :func:`load_user_set` (CSV, JSON or JSONL) and :func:`load_responses` (the
  ``defan score`` input), read by :mod:`.formats` and validated by :mod:`.validate` alike
  (:mod:`.textfiles`: decoding and CSV records, for every reader).
* :mod:`.sampling` (stratified samples of whole groups) and :mod:`.shards` (``--defan-shard``).
* :func:`load_dataset` (here): one entry point for ``"public"``, a folder or a user file.

Malformed input is never skipped: all problems of a file are collected and raised as one
:class:`DatasetError` that names the file and the line of each problem.
"""
from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from defan_pytest.dataset import checks, profiles  # profiles: DefAn's domain profiles, registered
from defan_pytest.dataset.checks import answer_types
from defan_pytest.dataset.domains import (
    DOMAINS,
    GROUP_SIZE,
    PUBLIC_COMMIT,
    PUBLIC_SHA256,
    DatasetError,
    Domain,
    Row,
    StrPath,
    get_domain,
    parse_domains,
    split_names,
)
from defan_pytest.dataset.fetch import DEFAULT_BASE_URL, default_cache_dir, resolve_public_dir
from defan_pytest.dataset.public import clear_caches, load_public, read_public_csv
from defan_pytest.dataset.user import Response, load_responses, load_user_set

__all__ = [
    "ANSWER_TYPES",
    "DEFAULT_BASE_URL",
    "DOMAINS",
    "GROUP_SIZE",
    "PUBLIC_COMMIT",
    "PUBLIC_SHA256",
    "Dataset",
    "DatasetError",
    "Domain",
    "Response",
    "Row",
    "answer_types",
    "clear_caches",
    "dataset_file",
    "default_cache_dir",
    "get_domain",
    "load_dataset",
    "load_public",
    "load_responses",
    "load_user_set",
    "parse_domains",
    "read_public_csv",
    "resolve_public_dir",
]


def __getattr__(name: str) -> object:
    # ANSWER_TYPES follows answer_types() on every access instead of being bound at import
    # time (PEP 562): the answer types come from a registry that may grow.
    if name == "ANSWER_TYPES":
        return checks.answer_types()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class Dataset(list[Row]):
    """The rows :func:`load_dataset` selected, in dataset order: a plain ``list`` of
    :class:`Row`, plus ``source_domains``, every domain the source holds (the registry ids for
    the public split, the file's domains in first-seen order for a user set), selected or not.

    ``source_domains`` is what a thresholds file may name: a ``[domains.x]`` table for a
    domain of the file stays valid when ``--defan-domain`` selects another one.  ``notes``
    says what was read other than as written (invalid characters replaced), one line each.
    """

    __slots__ = ("notes", "source_domains")

    def __init__(
        self, rows: Iterable[Row] = (), source_domains: Iterable[str] = (), notes: Iterable[str] = ()
    ) -> None:
        super().__init__(rows)
        self.source_domains: tuple[str, ...] = tuple(source_domains)
        self.notes: tuple[str, ...] = tuple(notes)


def _locate(spec: StrPath, root: StrPath | None) -> Path:
    """``spec`` as a path: a relative one under ``root`` when it exists there, else as given."""
    path = Path(spec).expanduser()
    if root is not None and not path.is_absolute():
        under_root = Path(root) / path
        if os.path.lexists(under_root):  # a link there, even a broken one or a loop, is what is meant
            return under_root
    return path


def dataset_file(spec: StrPath | None, root: StrPath | None = None) -> Path | None:
    """The file (or folder) a dataset ``spec`` names, found as :func:`load_dataset` finds it;
    ``None`` for the public split.  What a run reads, so that no output ever replaces it."""
    if spec is None or (isinstance(spec, str) and spec.strip() in ("", "public")):
        return None
    return _locate(spec, root)


def load_dataset(
    spec: StrPath | None = "public",
    domains: str | Domain | Iterable[str | Domain] | None = None,
    *,
    root: StrPath | None = None,
    data_dir: StrPath | None = None,
    cache_dir: StrPath | None = None,
    base_url: str | None = None,
    group_by_blocks: bool = False,
    default_domain: str | None = None,
) -> Dataset:
    """Load ``spec``: ``"public"``, a folder (the public split from there), or a user set file.

    ``spec`` ``None`` or blank means ``"public"``. A relative path is looked up under ``root``
    first (the pytest rootdir) and used as given (relative to the current folder) when it does
    not exist there. (A folder literally named ``public`` is reachable as ``./public``.)

    ``domains`` selects domains (one string or an iterable of strings, each of which may hold
    comma-separated names); ``None``, blank strings or no names select every domain. For the
    public split they must be registry ids; for a user set they must be domains the file has,
    else :class:`DatasetError` lists the ones it has. ``data_dir``, ``cache_dir`` and
    ``base_url`` go to :func:`load_public` for ``"public"``; ``group_by_blocks`` and
    ``default_domain`` to :func:`load_user_set` for a file.

    Returns a :class:`Dataset` (a list of rows that also knows every domain of its source).
    Raises :class:`DatasetError`.
    """
    if spec is None or (isinstance(spec, str) and spec.strip() in ("", "public")):
        rows = load_public(domains, data_dir=data_dir, cache_dir=cache_dir, base_url=base_url)
        return Dataset(rows, DOMAINS)
    path = _locate(spec, root)
    if path.is_dir():
        rows = load_public(domains, data_dir=path, cache_dir=cache_dir, base_url=base_url)
        return Dataset(rows, DOMAINS)
    if not os.path.lexists(path):  # a broken link or a loop: load_user_set says which
        looked = ""
        if root is not None and not path.is_absolute():
            looked = f" under {os.fspath(root)} or {Path.cwd()}"
        raise DatasetError(
            f"dataset {os.fspath(spec)!r} is not 'public', a folder or a file (no such path"
            f"{looked}): use 'public', a folder holding the DefAn public files, or a "
            ".csv/.json/.jsonl file"
        )
    notes: list[str] = []
    rows = load_user_set(path, group_by_blocks=group_by_blocks, default_domain=default_domain, notes=notes)
    have = list(dict.fromkeys(r.domain for r in rows))
    names = [str(n) for n in split_names(domains)]
    if not names:
        return Dataset(rows, have, notes)
    unknown = [n for n in names if n not in have]
    if unknown:
        raise DatasetError(
            f"{os.fspath(path)}: no domain {', '.join(map(repr, unknown))} in this file; "
            f"its domains: {', '.join(have)}"
        )
    wanted = set(names)
    return Dataset((r for r in rows if r.domain in wanted), have, notes)
