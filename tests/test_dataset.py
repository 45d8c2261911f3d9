"""Tests for the defan_pytest.dataset package: its public API and load_dataset.

The submodules have their own test modules: test_dataset_domains, test_dataset_fetch,
test_dataset_public and test_dataset_user.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from defan_pytest import dataset
from defan_pytest.dataset import DOMAINS, Dataset, DatasetError, load_dataset

pytestmark = pytest.mark.usefixtures("dataset_env")


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8", newline="")
    return path


def test_public_api_is_re_exported() -> None:
    from defan_pytest.dataset import (
        ANSWER_TYPES,
        DEFAULT_BASE_URL,
        DOMAINS,
        GROUP_SIZE,
        PUBLIC_COMMIT,
        PUBLIC_SHA256,
        DatasetError,
        Row,
        clear_caches,
        default_cache_dir,
        get_domain,
        load_dataset,
        load_public,
        load_responses,
        load_user_set,
        parse_domains,
        read_public_csv,
        resolve_public_dir,
    )

    assert GROUP_SIZE == 15
    assert ANSWER_TYPES == ("name", "numeric", "date", "rank", "city")
    assert PUBLIC_COMMIT in DEFAULT_BASE_URL
    for name in dataset.__all__:
        assert getattr(dataset, name) is not None, name


# ------------------------------------------------------------------------------------------
# load_dataset
# ------------------------------------------------------------------------------------------


def test_load_dataset_public_and_folder(synthetic_public: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rows = load_dataset(synthetic_public, "world_org")
    assert isinstance(rows, Dataset) and isinstance(rows, list)
    assert len(rows) == 30 and rows[0].domain == "world_org"
    assert rows.source_domains == tuple(DOMAINS)
    rows = load_dataset("public", ["sports"], data_dir=synthetic_public)
    assert len(rows) == 30
    # An unset or blank spec, and an unset or blank domain list, mean the whole public split.
    monkeypatch.setenv("DEFAN_DATA_DIR", str(synthetic_public))
    for spec in (None, "", " public "):
        for domains in (None, "", [], [" ", ","]):
            assert len(load_dataset(spec, domains)) == 7 * 30 + 6, (spec, domains)
    with pytest.raises(DatasetError, match="valid domains: sports, census"):
        load_dataset(synthetic_public, "oscars")


def test_load_dataset_missing_path(tmp_path: Path) -> None:
    with pytest.raises(DatasetError) as info:
        load_dataset(tmp_path / "nope.csv")
    assert f"dataset {str(tmp_path / 'nope.csv')!r} is not 'public', a folder or a file (no such path)" in str(info.value)
    with pytest.raises(DatasetError) as info:
        load_dataset("nope.csv", root=tmp_path)
    assert f"'nope.csv' is not 'public', a folder or a file (no such path under {tmp_path} or {Path.cwd()})" in str(
        info.value
    )


def test_load_dataset_relative_path_under_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                synthetic_public: Path) -> None:
    root = tmp_path / "project"
    elsewhere = tmp_path / "cwd"
    (root / "data").mkdir(parents=True)
    elsewhere.mkdir()
    _write(root / "data" / "mine.csv", "question,answer,type\nWhere is Windmere?,Ostland,city\n")
    _write(elsewhere / "mine.csv", "question,answer,type\nQ1,A,name\nQ2,B,name\n")
    monkeypatch.chdir(elsewhere)
    # Found under the root: the root wins.
    rows = load_dataset("data/mine.csv", root=root)
    assert [r.question for r in rows] == ["Where is Windmere?"]
    assert rows[0].source == os.fspath(root / "data" / "mine.csv")
    # Not under the root: as given, relative to the current folder.
    assert len(load_dataset("mine.csv", root=root)) == 2
    assert len(load_dataset("mine.csv")) == 2
    # A folder of public files, relative to the root.
    (root / "pub").symlink_to(synthetic_public, target_is_directory=True)
    assert len(load_dataset("pub", "math", root=str(root))) == 6


def test_load_dataset_user_set_domain_filter(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "mine.csv",
        "question,answer,type,domain\nq1,a,name,alpha\nq2,2,numeric,beta\nq3,b,name,alpha\n",
    )
    alpha = load_dataset(path, "alpha")
    assert [r.id for r in alpha] == ["alpha-q0000-p00", "alpha-q0001-p00"]
    # Every domain of the file, selected or not (what a thresholds file may name).
    assert alpha.source_domains == ("alpha", "beta")
    assert len(load_dataset(str(path))) == 3
    assert len(load_dataset(path, [" ", ""])) == 3
    with pytest.raises(DatasetError) as info:
        load_dataset(path, ["alpha,gamma"])
    assert "'gamma'" in str(info.value) and "its domains: alpha, beta" in str(info.value)


def test_load_dataset_passes_user_set_options(tmp_path: Path) -> None:
    text = "question,answer,type\n" + "".join(f"Windmere question {i}?,A,name\n" for i in range(30))
    path = _write(tmp_path / "blocks.csv", text)
    rows = load_dataset(path, group_by_blocks=True, default_domain="mine")
    assert {r.domain for r in rows} == {"mine"}
    assert [r.group for r in rows] == [0] * 15 + [1] * 15
