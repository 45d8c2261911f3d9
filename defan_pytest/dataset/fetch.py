"""Where the public split comes from: the download URL of the pinned upstream commit, a
per-process digest cache, :func:`resolve_public_dir` and the verified download into a user cache.
(The pinned commit and digests themselves are :data:`~defan_pytest.dataset.domains.PUBLIC_COMMIT`
and :data:`~defan_pytest.dataset.domains.PUBLIC_SHA256`.)"""
from __future__ import annotations

import hashlib
import http.client
import os
import tempfile
import threading
import urllib.error
import urllib.request
from collections.abc import Iterable
from pathlib import Path

from defan_pytest.dataset import reader
from defan_pytest.dataset.domains import PUBLIC_COMMIT, DatasetError, Domain, StrPath, parse_domains
from defan_pytest.version import __version__

__all__ = [
    "DEFAULT_BASE_URL",
    "DOWNLOAD_TIMEOUT",
    "ENV_BASE_URL",
    "ENV_CACHE_DIR",
    "ENV_DATA_DIR",
    "check_public_digest",
    "clear_digests",
    "default_cache_dir",
    "file_key",
    "resolve_public_dir",
]

#: Where the public files are fetched from; ``{base}/QA_domain_N_public.csv``.
DEFAULT_BASE_URL = (
    f"https://raw.githubusercontent.com/ashikiut/DefAn/{PUBLIC_COMMIT}/DefAn-public"
)

#: Seconds to wait on the network before a download counts as failed.
DOWNLOAD_TIMEOUT = 60.0

ENV_DATA_DIR = "DEFAN_DATA_DIR"
ENV_CACHE_DIR = "DEFAN_CACHE_DIR"
ENV_BASE_URL = "DEFAN_BASE_URL"

#: What a machine that cannot reach the upstream host does instead: copy the public CSV files
#: (from the upstream repository at the pinned commit) to a folder, and name it.
_LOCAL_FILES_HINT = (
    "copy the files "
    f"(DefAn-public/QA_domain_N_public.csv at DefAn commit {PUBLIC_COMMIT}) to a folder and point "
    f"defan-pytest at it: set {ENV_DATA_DIR}=/path/to/DefAn-public, or run pytest with "
    "--defan-dataset=/path/to/DefAn-public"
)


# --------------------------------------------------------------------------------------------
# Digests (cached per process)
# --------------------------------------------------------------------------------------------

#: What identifies one version of a file: (resolved path, size, mtime_ns, inode).  Any rewrite
#: of a file (os.replace gives a new inode, an edit a new mtime) has another key.
FileKey = tuple[str, int, int, int]

# File key -> sha256 hex. Hashing ~9 MB on every load would be waste.
_DIGEST_CACHE: dict[FileKey, str] = {}
_DIGEST_LOCK = threading.Lock()


def clear_digests() -> None:
    """Forget every digest computed by this process."""
    with _DIGEST_LOCK:
        _DIGEST_CACHE.clear()


def file_key(path: Path) -> FileKey:
    """The key of the file at ``path`` as it is now (what the per-process caches are keyed by)."""
    st = path.stat()
    return (str(path.resolve()), st.st_size, st.st_mtime_ns, st.st_ino)


def _sha256_file(path: Path) -> str:
    """The sha256 of ``path``, computed once per process per :func:`file_key`."""
    key = file_key(path)
    with _DIGEST_LOCK:
        cached = _DIGEST_CACHE.get(key)
    if cached is not None:
        return cached
    try:
        value = reader.sha256_of(path)  # the one reader: never a FIFO or a device that never ends
    except reader.InputError as exc:
        raise DatasetError(str(exc)) from None
    with _DIGEST_LOCK:
        _DIGEST_CACHE[key] = value
    return value


def check_public_digest(path: Path, domain: Domain) -> None:
    """Raise :class:`DatasetError` unless ``path`` is the pinned public file of ``domain``."""
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
        actual = _fetch_into(fd, tmp, request, url, dest, domain)
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
    key = file_key(dest)
    with _DIGEST_LOCK:
        _DIGEST_CACHE[key] = actual


def _fetch_into(
    fd: int, tmp: Path, request: urllib.request.Request, url: str, dest: Path, domain: Domain
) -> str:
    """Write the response to ``request`` (for ``url``) into the open temp file ``fd``
    (``tmp``); return the sha256 of the bytes.  A network failure or a local write error is a
    :class:`DatasetError`."""
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
            f"The DefAn public split is downloaded on first use; on a machine without access to "
            f"that host, "
            f"{_LOCAL_FILES_HINT}"
        ) from exc
    except OSError as exc:  # local: disk full, permissions
        raise DatasetError(f"could not write {tmp}: {exc}") from exc
    return digest.hexdigest()


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
            check_public_digest(path, domain)
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
