"""Where the public split comes from: the pinned upstream commit and digests, a per-process
digest cache, :func:`resolve_public_dir` and the verified download into a user cache."""
from __future__ import annotations

import hashlib
import http.client
import os
import tempfile
import threading
import types
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping
from pathlib import Path

from defan_pytest.version import __version__
from defan_pytest.dataset.domains import DatasetError, Domain, StrPath, parse_domains

__all__ = [
    "DEFAULT_BASE_URL",
    "DOWNLOAD_TIMEOUT",
    "ENV_BASE_URL",
    "ENV_CACHE_DIR",
    "ENV_DATA_DIR",
    "PUBLIC_COMMIT",
    "PUBLIC_SHA256",
    "default_cache_dir",
    "resolve_public_dir",
]

#: Upstream commit of github.com/ashikiut/DefAn whose ``DefAn-public/`` folder is the public
#: split. Pinned so every user scores against byte-identical questions and golds.
PUBLIC_COMMIT = "3fcefd0ee77435f214eff79860f5f4c48f184960"

#: Where the public files are fetched from; ``{base}/QA_domain_N_public.csv``.
DEFAULT_BASE_URL = (
    f"https://raw.githubusercontent.com/ashikiut/DefAn/{PUBLIC_COMMIT}/DefAn-public"
)

#: sha256 of each public file at :data:`PUBLIC_COMMIT` (from ``defan-public/SOURCE.md``).
PUBLIC_SHA256: Mapping[str, str] = types.MappingProxyType(
    {
        "QA_domain_1_public.csv": "992a3e1f5061c4ada8663b9a7f95ceb61ade6166d2fc4699c525828d825a0d10",
        "QA_domain_2_public.csv": "8f922d2aabb32c7dcd9954be54ded710ba22348133ab5e9371ebe1142bf73243",
        "QA_domain_3_public.csv": "c8fb6f346de998070983a8ed17e9eeb255fdf4941615f14d73eb6e843960939d",
        "QA_domain_4_public.csv": "1f41941183ea4f689ebaf27d2a237312a299548908b3bd1fa9f4066be6906231",
        "QA_domain_5_public.csv": "963e7fdf1415dce70f0d6290b83714579b5afe92ca7744244af5cf2fbf5b7e70",
        "QA_domain_6_public.csv": "9cd8a218912bb357f04cbdf2a84088647e461346eceff4fd51290b9896b64ecf",
        "QA_domain_7_public.csv": "ac63800c4ab19d2edc1dcc08bd12f8fbf96982e91008ec6438030c301d1c0016",
        "QA_domain_8_public.csv": "9f899e95bbbc81d38417a63c3814b4bc11efa4e4c3e0836e81e76a398a766717",
    }
)

#: Seconds to wait on the network before a download counts as failed.
DOWNLOAD_TIMEOUT = 60.0

ENV_DATA_DIR = "DEFAN_DATA_DIR"
ENV_CACHE_DIR = "DEFAN_CACHE_DIR"
ENV_BASE_URL = "DEFAN_BASE_URL"

_LOCAL_FILES_HINT = (
    "point defan-pytest at local copies of the files: set "
    f"{ENV_DATA_DIR}=/path/to/DefAn-public, or pass data_dir=... "
    "(the --defan-dataset option also takes a folder path)"
)


# --------------------------------------------------------------------------------------------
# Digests (cached per process)
# --------------------------------------------------------------------------------------------

# (resolved path, size, mtime_ns, inode) -> sha256 hex. Hashing ~9 MB on every load would be
# waste; any rewrite of a file (os.replace gives a new inode, an edit a new mtime) misses.
_DIGEST_CACHE: dict[tuple[str, int, int, int], str] = {}
# Guards this module's digest cache and the parsed-rows cache of ``public``.
_CACHE_LOCK = threading.Lock()


def _clear_digests() -> None:
    """Forget every digest computed by this process (``clear_caches`` calls this)."""
    with _CACHE_LOCK:
        _DIGEST_CACHE.clear()


def _stat_key(path: Path) -> tuple[str, int, int, int]:
    st = path.stat()
    return (str(path.resolve()), st.st_size, st.st_mtime_ns, st.st_ino)


def _sha256_file(path: Path) -> str:
    """The sha256 of ``path``, computed once per process per (path, size, mtime, inode)."""
    key = _stat_key(path)
    with _CACHE_LOCK:
        cached = _DIGEST_CACHE.get(key)
    if cached is not None:
        return cached
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    value = digest.hexdigest()
    with _CACHE_LOCK:
        _DIGEST_CACHE[key] = value
    return value


def _check_public_digest(path: Path, domain: Domain) -> None:
    actual = _sha256_file(path)
    if actual != domain.sha256:
        raise DatasetError(
            f"{path}: sha256 mismatch for {domain.filename} (domain {domain.id!r}): "
            f"expected {domain.sha256}, got {actual}. The public split must be the files of "
            f"DefAn commit {PUBLIC_COMMIT}; to evaluate your own questions, pass the file "
            "with --defan-dataset=PATH (a .csv, .json or .jsonl file) instead"
        )


# --------------------------------------------------------------------------------------------
# Locating and downloading the public split
# --------------------------------------------------------------------------------------------


def _env(name: str) -> str | None:
    """An environment variable, with an empty value treated as unset."""
    value = os.environ.get(name, "").strip()
    return value or None


def default_cache_dir() -> Path:
    """The user cache folder for the public split:
    ``$XDG_CACHE_HOME/defan-pytest/<commit>``, else ``~/.cache/defan-pytest/<commit>``."""
    base = _env("XDG_CACHE_HOME")
    root = Path(base).expanduser() if base else Path.home() / ".cache"
    return root / "defan-pytest" / PUBLIC_COMMIT


def _download(url: str, dest: Path, domain: Domain) -> None:
    """Fetch ``url`` into ``dest`` atomically, keeping it only if its sha256 is the pinned one.

    The bytes go to a temp file in the destination folder (so ``os.replace`` is an atomic
    rename, never a cross-device copy) and are hashed while written; a mismatch or any failure
    removes the temp file, so the cache never holds a half-written or wrong file.
    """
    try:
        request = urllib.request.Request(url, headers={"User-Agent": f"defan-pytest/{__version__}"})
    except ValueError as exc:  # no scheme, e.g. a DEFAN_BASE_URL without http://
        raise DatasetError(f"invalid download URL {url!r}: {exc}; {_LOCAL_FILES_HINT}") from exc
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".part", dir=dest.parent)
    except OSError as exc:
        raise DatasetError(
            f"cannot write to the DefAn cache folder {dest.parent}: {exc}; set "
            f"{ENV_CACHE_DIR} to a writable folder, or {_LOCAL_FILES_HINT}"
        ) from exc
    tmp = Path(tmp_name)
    try:
        digest = hashlib.sha256()
        try:
            with os.fdopen(fd, "wb") as out:
                with urllib.request.urlopen(request, timeout=DOWNLOAD_TIMEOUT) as response:
                    for chunk in iter(lambda: response.read(1 << 16), b""):
                        digest.update(chunk)
                        out.write(chunk)
        except (
            urllib.error.URLError,
            http.client.HTTPException,
            TimeoutError,
            ConnectionError,
            ValueError,
        ) as exc:
            if isinstance(exc, urllib.error.HTTPError):
                reason: object = f"HTTP {exc.code} {exc.reason}"
            else:
                reason = getattr(exc, "reason", None) or exc
            raise DatasetError(
                f"could not download {dest.name} (domain {domain.id!r}) from {url}: {reason}. "
                f"The DefAn public split is downloaded on first use; without network access, "
                f"{_LOCAL_FILES_HINT}"
            ) from exc
        except OSError as exc:  # local: disk full, permissions
            raise DatasetError(f"could not write {tmp}: {exc}") from exc
        actual = digest.hexdigest()
        if actual != domain.sha256:
            raise DatasetError(
                f"downloaded {dest.name} (domain {domain.id!r}) from {url} has the wrong "
                f"sha256: expected {domain.sha256}, got {actual}; the file was not kept"
            )
        os.replace(tmp, dest)
    except BaseException:
        # Also on KeyboardInterrupt: nothing half-written may stay in the cache.
        try:
            tmp.unlink()
        except FileNotFoundError:
            pass
        raise
    # We just hashed these bytes: seed the digest cache so the first load does not hash again.
    key = _stat_key(dest)
    with _CACHE_LOCK:
        _DIGEST_CACHE[key] = actual


def resolve_public_dir(
    data_dir: StrPath | None = None,
    cache_dir: StrPath | None = None,
    base_url: str | None = None,
    domains: str | Domain | Iterable[str | Domain] | None = None,
) -> Path:
    """Return a folder holding verified public files for ``domains`` (default: all).

    Where the files come from, first match wins:

    1. ``data_dir`` (a folder with ``QA_domain_N_public.csv`` files);
    2. the ``DEFAN_DATA_DIR`` environment variable;
    3. a user cache folder: ``cache_dir``, else ``DEFAN_CACHE_DIR``, else
       :func:`default_cache_dir`. Missing files are downloaded there from ``base_url``, else
       ``DEFAN_BASE_URL``, else :data:`DEFAULT_BASE_URL`.

    Every requested file is checked against its pinned sha256. A mismatch in a folder the user
    named (1, 2) is an error; a mismatching cached file is downloaded again. Only the files of
    the requested domains are looked at or downloaded. Raises :class:`DatasetError`.
    """
    selected = parse_domains(domains)
    explicit = data_dir if data_dir is not None else _env(ENV_DATA_DIR)
    if explicit is not None:
        folder = Path(explicit).expanduser()
        origin = "data_dir" if data_dir is not None else ENV_DATA_DIR
        if not folder.is_dir():
            raise DatasetError(f"{origin}: {folder} is not a folder with the DefAn public files")
        for domain in selected:
            path = folder / domain.filename
            if not path.is_file():
                raise DatasetError(
                    f"{path} not found ({origin} {folder} lacks {domain.filename} for domain "
                    f"{domain.id!r}); expected the files of DefAn-public at commit {PUBLIC_COMMIT}"
                )
            _check_public_digest(path, domain)
        return folder

    if cache_dir is not None:
        folder = Path(cache_dir).expanduser()
    else:
        env_cache = _env(ENV_CACHE_DIR)
        folder = Path(env_cache).expanduser() if env_cache else default_cache_dir()
    base = (base_url or _env(ENV_BASE_URL) or DEFAULT_BASE_URL).rstrip("/")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DatasetError(
            f"cannot create the DefAn cache folder {folder}: {exc}; set {ENV_CACHE_DIR} to a "
            f"writable folder, or {_LOCAL_FILES_HINT}"
        ) from exc
    for domain in selected:
        path = folder / domain.filename
        if path.is_file():
            if _sha256_file(path) == domain.sha256:
                continue
            # Our own cache holds a wrong file (a crash before data hit the disk, a manual
            # edit): it is ours to replace, so fetch a fresh copy rather than fail.
        _download(f"{base}/{domain.filename}", path, domain)
    return folder
