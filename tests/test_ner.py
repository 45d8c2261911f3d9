"""Loading a spaCy pipeline by name or path, and running without one."""
from __future__ import annotations

from pathlib import Path

import pytest

from defan_pytest.scoring import ner
from defan_pytest.scoring.scorer import Scorer

needs_pipeline = pytest.mark.skipif(not ner.installed_pipelines(), reason="no spaCy pipeline installed")


def test_none_means_rules_only() -> None:
    for spec in (None, "none", "off", ""):
        assert ner.load(spec) is None
    assert Scorer(nlp="none").pipeline is None


def test_unknown_pipeline_names_what_is_installed() -> None:
    with pytest.raises(ner.NerError, match="installed known pipelines") as err:
        ner.load("xx_no_such_pipeline")
    assert "'none'" in str(err.value)


@needs_pipeline
def test_auto_takes_an_installed_pipeline_and_finds_entities() -> None:
    model = ner.load("auto")
    assert model is not None and model.name in ner.KNOWN_PIPELINES
    assert "ner" in model.nlp.pipe_names and "parser" not in model.nlp.pipe_names
    [ents] = model.entities(["Marie Curie was born in Warsaw."])
    assert any(label == "PERSON" for _, _, label in ents)


@needs_pipeline
def test_a_pipeline_by_path(tmp_path: Path) -> None:
    model = ner.load("auto")
    assert model is not None
    folder = tmp_path / "my-pipeline"
    model.nlp.to_disk(folder)
    by_path = ner.load(str(folder))
    assert by_path is not None
    assert by_path.entities(["Marie Curie was born in Warsaw."]) == model.entities(["Marie Curie was born in Warsaw."])
    assert Scorer(nlp=folder).pipeline == str(folder)


def test_describe_says_which_scorer_runs(tmp_path: Path) -> None:
    rules = ner.describe(None)
    assert rules["ner"] is False and rules["text"].startswith("rules only")
    folder = tmp_path / "pipe"
    folder.mkdir()
    (folder / "meta.json").write_text('{"name": "core_web_x", "version": "9.9.9"}')
    by_path = ner.describe(str(folder))
    assert by_path["ner"] is True and by_path["version"] == "core_web_x 9.9.9"
    assert by_path["text"].startswith(f"spaCy {folder} core_web_x 9.9.9")


@needs_pipeline
def test_describe_names_an_installed_pipeline_and_its_version() -> None:
    name = ner.installed_pipelines()[0]
    d = ner.describe(name)
    assert d["ner"] is True and d["pipeline"] == name and d["version"]
