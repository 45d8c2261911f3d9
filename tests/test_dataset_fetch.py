"""Tests for defan_pytest.dataset.fetch: local folders, digests, the user cache and the
download, against a real loopback HTTP server.

They run on the synthetic public-format files of tests/data/synthetic, whose digests stand in for
the pinned ones (fixture ``synthetic_public``); one test checks the pinned digests themselves
against the real files and skips without them.
"""
from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import synthetic_dir

from dataset_httpserver import LoopbackFileServer, closed_port_url
from defan_pytest import dataset
from defan_pytest.dataset import DOMAINS, DatasetError, domains, fetch, load_dataset, load_public, resolve_public_dir

pytestmark = pytest.mark.usefixtures("dataset_env")

SYNTHETIC_ROWS = 7 * 30 + 6  # rows of the synthetic split


# ------------------------------------------------------------------------------------------
# Local folders: data_dir, DEFAN_DATA_DIR, digests
# ------------------------------------------------------------------------------------------


def test_data_dir_argument_beats_env(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, synthetic_public: Path
) -> None:
    monkeypatch.setenv("DEFAN_DATA_DIR", str(tmp_path / "nowhere"))
    assert resolve_public_dir(data_dir=synthetic_public, domains="sports") == synthetic_public


def test_defan_data_dir_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, synthetic_public: Path) -> None:
    monkeypatch.setenv("DEFAN_DATA_DIR", str(synthetic_public))
    # The env folder wins over the cache: nothing may be downloaded from this dead URL.
    rows = load_public("conference_venue", cache_dir=tmp_path / "cache", base_url=closed_port_url())
    assert len(rows) == 30
    assert rows[0].source == str(synthetic_public / "QA_domain_7_public.csv")
    assert not (tmp_path / "cache").exists()


def test_local_digest_mismatch_is_refused(tmp_path: Path, synthetic_public: Path) -> None:
    name = "QA_domain_7_public.csv"
    data = bytearray((synthetic_public / name).read_bytes())
    data[60] ^= 0x01
    (tmp_path / name).write_bytes(bytes(data))
    with pytest.raises(DatasetError) as info:
        load_public("conference_venue", data_dir=tmp_path)
    message = str(info.value)
    assert name in message
    assert domains.PUBLIC_SHA256[name] in message
    assert hashlib.sha256(bytes(data)).hexdigest() in message
    assert "--defan-dataset" in message


def test_local_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match=r"QA_domain_3_public\.csv not found"):
        load_public("nobel", data_dir=tmp_path)
    with pytest.raises(DatasetError, match="is not a folder"):
        load_public("nobel", data_dir=tmp_path / "missing")


def test_digest_is_computed_once_per_file(monkeypatch: pytest.MonkeyPatch, synthetic_public: Path) -> None:
    dataset.clear_caches()
    opened: list[str] = []
    real_sha256 = fetch.hashlib.sha256

    def counting_sha256(*args: object) -> object:
        opened.append("x")
        return real_sha256(*args)

    monkeypatch.setattr(fetch.hashlib, "sha256", counting_sha256)
    for _ in range(3):
        resolve_public_dir(data_dir=synthetic_public, domains="sports,math")
        load_public("sports,math", data_dir=synthetic_public)
    assert len(opened) == 2


def test_default_cache_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert dataset.default_cache_dir() == tmp_path / "defan-pytest" / dataset.PUBLIC_COMMIT
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert dataset.default_cache_dir() == Path.home() / ".cache" / "defan-pytest" / dataset.PUBLIC_COMMIT


def test_pinned_digests_match_the_real_files(public_dir: Path) -> None:
    for domain in DOMAINS.values():
        data = (public_dir / domain.filename).read_bytes()
        assert hashlib.sha256(data).hexdigest() == dataset.PUBLIC_SHA256[domain.filename], domain.id


# ------------------------------------------------------------------------------------------
# Downloader against a real loopback HTTP server
# ------------------------------------------------------------------------------------------


def _routes(folder: Path) -> dict[str, bytes]:
    routes: dict[str, bytes] = {}
    for domain in DOMAINS.values():
        data = (folder / domain.filename).read_bytes()
        routes[f"/good/{domain.filename}"] = data
        bad = bytearray(data)
        bad[len(bad) // 2] ^= 0x20  # one flipped bit
        routes[f"/bad/{domain.filename}"] = bytes(bad)
    return routes


@pytest.fixture(scope="module")
def file_server() -> Iterator[LoopbackFileServer]:
    """Serves the synthetic files under /good, corrupted copies under /bad, a hang under /hang."""
    routes = _routes(synthetic_dir())
    hang = frozenset({f"/hang/{DOMAINS['sports'].filename}"})
    with LoopbackFileServer(routes, hang=hang) as server:
        yield server


def _new_requests(server: LoopbackFileServer, before: int) -> list[str]:
    return server.requests[before:]


def test_download_then_cache_hit(file_server: LoopbackFileServer, tmp_path: Path, synthetic_public: Path) -> None:
    cache = tmp_path / "cache"
    before = len(file_server.requests)
    rows = load_public(cache_dir=cache, base_url=f"{file_server.url}/good")
    assert sorted(_new_requests(file_server, before)) == sorted(
        f"/good/{d.filename}" for d in DOMAINS.values()
    )
    assert len(rows) == SYNTHETIC_ROWS
    local = load_public(data_dir=synthetic_public)
    assert [(r.id, r.question, r.answer, r.type, r.line) for r in rows] == [
        (r.id, r.question, r.answer, r.type, r.line) for r in local
    ]
    assert sorted(p.name for p in cache.iterdir()) == sorted(d.filename for d in DOMAINS.values())

    # Second use, even with caches of this process forgotten: the files are there, no request.
    dataset.clear_caches()
    before = len(file_server.requests)
    again = load_public(cache_dir=cache, base_url=f"{file_server.url}/good")
    assert _new_requests(file_server, before) == []
    assert len(again) == SYNTHETIC_ROWS
    # The server being gone does not matter once the files are cached.
    assert len(load_public("math", cache_dir=cache, base_url=closed_port_url())) == 6


def test_download_only_requested_domains(
    file_server: LoopbackFileServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, synthetic_public: Path
) -> None:
    # Cache folder and base URL from the environment this time.
    monkeypatch.setenv("DEFAN_CACHE_DIR", str(tmp_path / "envcache"))
    monkeypatch.setenv("DEFAN_BASE_URL", f"{file_server.url}/good/")
    before = len(file_server.requests)
    rows = load_dataset("public", ["conference_venue,sports"])
    assert sorted(_new_requests(file_server, before)) == [
        "/good/QA_domain_1_public.csv",
        "/good/QA_domain_7_public.csv",
    ]
    assert len(rows) == 30 + 30
    assert sorted(p.name for p in (tmp_path / "envcache").iterdir()) == [
        "QA_domain_1_public.csv",
        "QA_domain_7_public.csv",
    ]


def test_default_cache_location_is_used(
    file_server: LoopbackFileServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, synthetic_public: Path
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    folder = resolve_public_dir(base_url=f"{file_server.url}/good", domains="conference_venue")
    assert folder == tmp_path / "defan-pytest" / dataset.PUBLIC_COMMIT
    assert [p.name for p in folder.iterdir()] == ["QA_domain_7_public.csv"]


def test_corrupted_download_is_refused_and_not_kept(
    file_server: LoopbackFileServer, tmp_path: Path, synthetic_public: Path
) -> None:
    cache = tmp_path / "cache"
    name = "QA_domain_7_public.csv"
    with pytest.raises(DatasetError) as info:
        load_public("conference_venue", cache_dir=cache, base_url=f"{file_server.url}/bad")
    message = str(info.value)
    assert name in message
    assert domains.PUBLIC_SHA256[name] in message
    bad = file_server.routes[f"/bad/{name}"]
    assert hashlib.sha256(bad).hexdigest() in message
    assert list(cache.iterdir()) == []  # no temp file, no wrong file


def test_wrong_file_in_cache_is_downloaded_again(
    file_server: LoopbackFileServer, tmp_path: Path, synthetic_public: Path
) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    name = "QA_domain_7_public.csv"
    (cache / name).write_bytes(b"questions,answer,type\ntruncated")
    before = len(file_server.requests)
    rows = load_public("conference_venue", cache_dir=cache, base_url=f"{file_server.url}/good")
    assert _new_requests(file_server, before) == [f"/good/{name}"]
    assert len(rows) == 30
    assert (cache / name).read_bytes() == (synthetic_public / name).read_bytes()


def test_server_down_gives_the_local_files_hint(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    with pytest.raises(DatasetError) as info:
        load_public("nobel", cache_dir=cache, base_url=closed_port_url())
    message = str(info.value)
    assert "could not download QA_domain_3_public.csv" in message
    assert "DEFAN_DATA_DIR=/path/to/DefAn-public" in message
    assert "--defan-dataset=/path/to/DefAn-public" in message
    assert "data_dir" not in message  # a Python argument, meaningless in a pytest run
    assert list(cache.iterdir()) == []


def test_http_error_and_timeout(file_server: LoopbackFileServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    with pytest.raises(DatasetError, match=r"could not download QA_domain_2_public\.csv .*Not Found"):
        load_public("census", cache_dir=cache, base_url=f"{file_server.url}/missing")
    monkeypatch.setattr(fetch, "DOWNLOAD_TIMEOUT", 0.3)
    with pytest.raises(DatasetError, match=r"could not download QA_domain_1_public\.csv .*timed out"):
        load_public("sports", cache_dir=cache, base_url=f"{file_server.url}/hang")
    assert list(cache.iterdir()) == []


def test_real_files_download_against_the_pinned_digests(public_dir: Path, tmp_path: Path) -> None:
    # The one download check with the real pinned digests (no synthetic_public here).
    routes = {f"/good/{d.filename}": (public_dir / d.filename).read_bytes() for d in DOMAINS.values()
              if d.id in ("conference_venue", "sports")}
    with LoopbackFileServer(routes) as server:
        rows = load_public("conference_venue,sports", cache_dir=tmp_path, base_url=f"{server.url}/good")
    assert len(rows) == 1305 + 915
