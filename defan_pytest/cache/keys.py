"""How the cache names an answer: the canonical text of a model identity
(:func:`identity_json`), the key of a prompt under it (:func:`key_of`: a sha256 over the
identity's digest and the prompt), and which prompts have no answer yet (:func:`uncached`, and
:func:`uncached_in` for a cache folder read only, as the estimate before a run reads it).

The prompt the store is given is :attr:`defan_pytest.calls.protocol.Prompt.stored`: the text
itself for a run's own ask (so every cache made before ``--defan-repeat`` keeps its keys), the
text with a NUL, ``repeat``, a NUL and ``i`` after it for the i-th extra ask of the same prompt, so that each
repeat has a key, and an answer, of its own.
"""
from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any, Iterable, List, Mapping

from defan_pytest.cache.database import DB_NAME

__all__ = ["identity_json", "key_of", "uncached", "uncached_in"]


def identity_json(identity: Mapping[str, Any]) -> str:
    """A canonical JSON text of a model identity (sorted keys, no whitespace)."""
    return json.dumps(identity, sort_keys=True, separators=(",", ":"), default=str)


def key_of(prefix: bytes, prompt: str) -> str:
    """The key of ``prompt`` under the identity whose digest is ``prefix``."""
    h = hashlib.sha256(prefix)
    h.update(b"\0prompt\0")
    h.update(prompt.encode("utf-8"))
    return h.hexdigest()


def uncached(conn: sqlite3.Connection, prefix: bytes, prompts: Iterable[str]) -> List[str]:
    """The prompts without an answer under the identity whose digest is ``prefix``."""
    keyed = [(p, key_of(prefix, p)) for p in prompts]
    if len(keyed) <= 500:
        return [p for p, key in keyed if conn.execute("SELECT 1 FROM answers WHERE key = ?", (key,)).fetchone() is None]
    # Many prompts: one pass over the primary key's index (it covers the query), not a query each.
    wanted = {key for _, key in keyed}
    found = {key for (key,) in conn.execute("SELECT key FROM answers") if key in wanted}
    return [p for p, key in keyed if key not in found]


def uncached_in(folder: Path, identity: Mapping[str, Any], prompts: Iterable[str]) -> List[str]:
    """:func:`uncached` for the cache in ``folder``, read only (every prompt when there is no
    cache, or it cannot be read)."""
    prompts = list(prompts)
    path = Path(folder) / DB_NAME
    if not path.is_file():
        return prompts
    prefix = hashlib.sha256(identity_json(identity).encode()).digest()
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
    except sqlite3.Error:
        return prompts
    try:
        return uncached(conn, prefix, prompts)
    except sqlite3.Error:
        return prompts
    finally:
        conn.close()
