"""Shared test setup: helper modules on the path, and where the data comes from.

* The loopback server helpers are importable as ``openai_server`` and ``dataset_httpserver``.
* The real DefAn public split is found by :func:`find_public_dir` / the ``public_dir`` fixture
  through the resolver users get, with ``../shared/defan-public`` as a fast local source; tests
  that need the real files skip, with the reason, when it is nowhere to be had.
* Everything else runs on the synthetic files of ``tests/data`` (``synthetic_public``).
* Every test leaves the registries (models, answer types, metrics) as it found them
  (:func:`registries_restored`): what a test or an in-process session registers goes with it.
"""
from __future__ import annotations

import functools
import hashlib
import os
import sys
import types
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from defan_pytest.calls import models
from defan_pytest.calls.backends import BACKENDS
from defan_pytest.metrics import registry as metric_registry
from defan_pytest.scoring import types as answer_types

sys.path.insert(0, str(Path(__file__).parent))
# litellm must never fetch its price table over the network in tests.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# Most tests run real pytest sessions in new processes (pytester, xdist workers), and each one
# imports the plugin and its dependencies afresh, pytest rewriting the asserts of every module of
# an entry-point plugin (all of defan_pytest, hypothesis, ...).  Where bytecode is not written
# (PYTHONDONTWRITEBYTECODE), every process compiled all of that again, seconds per session: the
# processes the tests start keep their bytecode, and pytest its rewritten modules, in a folder of
# their own outside the checkout instead (sys.pycache_prefix), so the source tree stays clean.
if os.environ.get("PYTHONDONTWRITEBYTECODE"):
    import tempfile

    os.environ.pop("PYTHONDONTWRITEBYTECODE")
    os.environ.setdefault("PYTHONPYCACHEPREFIX",
                          str(Path(tempfile.gettempdir()) / f"defan-pytest-tests-pycache-{os.getuid()}"))

#: The synthetic fixture files (our own invented questions; never DefAn rows).
DATA = Path(__file__).parent / "data"
#: The synthetic public-format files, one per domain (their digests are not the pinned ones),
#: stored as ``domain_N.csv`` so that nothing in the repository is named like a DefAn file; the
#: tests see them under the public names in a folder made once per process (:func:`synthetic_dir`).
SYNTHETIC_FILES = DATA / "synthetic"


@functools.lru_cache(maxsize=1)
def synthetic_dir() -> Path:
    """A folder holding the synthetic files under the public split's names
    (``QA_domain_N_public.csv``), byte for byte."""
    import atexit
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="defan-synthetic-"))
    atexit.register(shutil.rmtree, folder, True)
    for src in sorted(SYNTHETIC_FILES.glob("domain_*.csv")):
        (folder / f"QA_{src.stem}_public.csv").write_bytes(src.read_bytes())
    return folder
#: A checkout of the real public split beside the project, used when present (no download).
SHARED_PUBLIC = Path(__file__).resolve().parents[1].parent / "shared" / "defan-public"


@functools.lru_cache(maxsize=1)
def _locate_public() -> tuple[Path | None, str]:
    """(folder of the verified real public split, "") or (None, why not); looked up once."""
    from defan_pytest.dataset import DatasetError, resolve_public_dir

    def first_sentence(exc: Exception) -> str:
        # The resolver's messages end with advice for users; a skip reason needs the cause.
        return str(exc).split(". ", 1)[0]

    needs = "needs the real DefAn public split"
    env = os.environ.get("DEFAN_DATA_DIR", "").strip()
    if env:
        # An explicit setting wins, as it does for users; if it is wrong, say so in the reason
        # rather than quietly testing other files.
        try:
            return resolve_public_dir(data_dir=env), ""
        except DatasetError as exc:
            return None, f"{needs}; DEFAN_DATA_DIR is unusable: {first_sentence(exc)}"
    tried: list[str] = []
    if SHARED_PUBLIC.is_dir():
        try:
            return resolve_public_dir(data_dir=SHARED_PUBLIC), ""
        except DatasetError as exc:
            tried.append(first_sentence(exc))
    else:
        tried.append(f"no {SHARED_PUBLIC}")
    try:
        # The user cache (DEFAN_CACHE_DIR, else ~/.cache), filled by the pinned download.
        return resolve_public_dir(), ""
    except DatasetError as exc:
        tried.append(first_sentence(exc))
    return None, f"{needs} (set DEFAN_DATA_DIR=/path/to/DefAn-public): {'; '.join(tried)}"


def find_public_dir() -> Path | None:
    """The folder of the real public split, verified against the pinned digests, or ``None``.

    Usable at import time (module constants, parametrization). Looks at ``DEFAN_DATA_DIR``,
    then ``../shared/defan-public``, then the user cache and the pinned download (through
    :func:`defan_pytest.dataset.resolve_public_dir`, as users get it). Never raises.
    """
    return _locate_public()[0]


@pytest.fixture(scope="session")
def public_dir() -> Path:
    """The folder of the real public split; skips the test (with the reason) without one."""
    folder, reason = _locate_public()
    if folder is None:
        pytest.skip(reason)
    return folder


@pytest.fixture
def dataset_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """No test sees the developer's DEFAN_* settings or writes to the real user cache."""
    for name in ("DEFAN_DATA_DIR", "DEFAN_CACHE_DIR", "DEFAN_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))
    # Loopback requests must never go through a proxy configured on the machine.
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)


def synthetic_digests() -> dict[str, str]:
    """File name -> sha256 of each synthetic public-format file."""
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(synthetic_dir().glob("QA_domain_*_public.csv"))
    }


@pytest.fixture
def synthetic_public(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The synthetic public split's folder, with its digests standing in for the pinned ones.

    Every digest check (local folder, cache, download) then accepts these files and refuses the
    real ones, so the whole public path runs without the real data.
    """
    from defan_pytest.dataset import clear_caches, domains

    monkeypatch.setattr(domains, "PUBLIC_SHA256", types.MappingProxyType(synthetic_digests()))
    clear_caches()
    yield synthetic_dir()
    clear_caches()


def _by_name(
    entries: Callable[[], Mapping[str, Any]], unregister: Callable[[str], Any], register: Callable[[Any], Any]
) -> tuple[Callable[[], Any], Callable[[Any], None]]:
    """(snapshot, restore) of a registry seen through its functions: ``entries()`` (name ->
    entry), ``unregister(name)`` and ``register(entry)``."""

    def snapshot() -> dict[str, Any]:
        return dict(entries())

    def restore(saved: dict[str, Any]) -> None:
        for name, entry in list(entries().items()):
            if saved.get(name) is not entry:
                unregister(name)  # added by the test, or replaced (a model registered again)
        present = entries()
        for name, entry in saved.items():
            if name not in present:
                register(entry)  # removed by the test

    return snapshot, restore


#: (name, snapshot, restore) of each process-wide registry a test can change.  A registry that
#: is a :class:`defan_pytest.registry.Registry` is simply ``("...", REG.snapshot, REG.restore)``.
REGISTRIES: list[tuple[str, Callable[[], Any], Callable[[Any], None]]] = [
    ("models", *_by_name(models.registered, models.unregister,
                         lambda m: models.model(m.name, version=m.version)(m.fn))),
    ("answer types", answer_types.REGISTRY.snapshot, answer_types.REGISTRY.restore),
    ("metrics", metric_registry.REGISTRY.snapshot, metric_registry.REGISTRY.restore),
    ("model backends", BACKENDS.snapshot, BACKENDS.restore),
]


@pytest.fixture(autouse=True)
def registries_restored() -> Iterator[None]:
    """Every registry as it was before the test: a model, type or metric that a test (or a
    session it runs in this process) registers and does not remove cannot leak into the next."""
    saved = [(restore, snapshot()) for _name, snapshot, restore in REGISTRIES]
    yield
    for restore, snapshot in saved:
        restore(snapshot)


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytester, with pytest-randomly off in the inner sessions.

    The test extras install the plugins tests/test_compat.py runs DefAn sessions next to;
    pytest-randomly is active by default and would reorder every other test's inner session.
    (pytester clears PYTEST_ADDOPTS when it starts, so it is set after.)  test_compat.py turns
    it back on where it tests it.
    """
    monkeypatch.setenv("PYTEST_ADDOPTS", "-p no:randomly")
    return pytester
