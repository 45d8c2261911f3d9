"""Issue 34 (3): the cached place index is read as untrusted input: a regular file only,
size-capped, its digest checked, its values typed; any doubt means a rebuild, never a hang, a
crash, an endless read or a silent change of verdicts."""
from __future__ import annotations

import marshal
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any, Optional

import pytest

from defan_pytest.scoring.scorer import Scorer
from defan_pytest.scoring.text import places

ROOT = Path(__file__).resolve().parent.parent
CONF_Q = "Where did CVPR take place in 2024? Give me the exact location only."


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A good index file, built once into a cache folder of the module's own."""
    home = tmp_path_factory.mktemp("xdg")
    old = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(home)
    try:
        index = places.PlaceIndex()
        path = places._cache_path()
        assert path is not None and path.is_file()
        return index, path, path.read_bytes()
    finally:
        if old is None:
            del os.environ["XDG_CACHE_HOME"]
        else:
            os.environ["XDG_CACHE_HOME"] = old


def _loads(path: Path, timeout: float = 60) -> Optional[bool]:
    """What ``_load`` says of ``path`` (``None``: it did not return within ``timeout``)."""
    index = object.__new__(places.PlaceIndex)
    out: list = []
    t = threading.Thread(target=lambda: out.append(index._load(path)), daemon=True)
    t.start()
    t.join(timeout)
    return out[0] if out else None


def test_the_good_file_is_read(built: Any) -> None:
    _, path, _ = built
    assert _loads(path) is True


def test_a_fifo_in_its_place_is_not_waited_on(built: Any, tmp_path: Path) -> None:
    fifo = tmp_path / built[1].name
    os.mkfifo(fifo)
    assert _loads(fifo, timeout=20) is False


def test_a_link_to_dev_zero_is_not_read(built: Any, tmp_path: Path) -> None:
    """In a process limited to 2 GiB: the old reader read /dev/zero until memory ran out."""
    link = tmp_path / built[1].name
    link.symlink_to("/dev/zero")
    script = textwrap.dedent(f"""
        from pathlib import Path
        from defan_pytest.scoring.text import places
        try:
            print(places.PlaceIndex.__new__(places.PlaceIndex)._load(Path({str(link)!r})))
        except MemoryError:
            print("MemoryError")
    """)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(["bash", "-c", f'ulimit -v {2 << 20}; exec "{sys.executable}" -c "$0"', script],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.stdout.strip() == "False", (proc.stdout, proc.stderr[-1000:])


@pytest.mark.parametrize("damage", ["one byte", "cut", "empty", "oversized", "wrong types", "no digest"])
def test_a_damaged_or_ill_typed_file_is_refused(built: Any, tmp_path: Path, damage: str) -> None:
    index, path, good = built
    payload = marshal.dumps((index.ids, index.country, index.population, index.iso))
    head = good[: len(good) - len(payload)]
    bad = {
        "one byte": good[:-100] + bytes([good[-100] ^ 1]) + good[-99:],
        "cut": good[:1000],
        "empty": b"",
        "oversized": head + b"\0" * (places._MAX_CACHE_BYTES + 1),
        "wrong types": marshal.dumps(({"paris": "x"}, {1: 2}, {}, {})),
        "no digest": payload,
    }[damage]
    target = tmp_path / path.name
    target.write_bytes(bad)
    assert _loads(target) is False


def test_a_crafted_file_cannot_make_lyon_right_for_paris(built: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A valid index whose "lyon" also names Paris: written bare (as the old reader took it),
    or with the header and digest of the good file: both are refused and the index rebuilt,
    so "Lyon" stays wrong for "Paris"."""
    index, path, good = built
    monkeypatch.setenv("XDG_CACHE_HOME", str(path.parent.parent))
    paris = max(index.ids["paris"], key=lambda i: index.population[i])
    ids = dict(index.ids)
    ids["lyon"] = ids["lyon"] + (paris,)
    payload = marshal.dumps((ids, index.country, index.population, index.iso))
    honest = marshal.dumps((index.ids, index.country, index.population, index.iso))
    header = good[: len(good) - len(honest)]
    scorer = Scorer(nlp=None)
    try:
        for crafted in (payload, header + payload):
            path.write_bytes(crafted)
            monkeypatch.setattr(places, "_PLACES", None)
            s = scorer.score("Where was the 2024 Olympics held?", "Paris", "city", "Lyon", domain="conference_venue")
            assert s.correct is False
            assert path.read_bytes() == good  # rebuilt and written again
    finally:
        monkeypatch.setattr(places, "_PLACES", None)
