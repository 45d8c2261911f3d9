"""The pytest-free run: configuration, the call pool, scoring, figures, gate and report."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

import defan_pytest
from defan_pytest.calls import models
from defan_pytest.report.schema import validate_report
from defan_pytest.run import Run, Worker
from defan_pytest.settings import ConfigError, Settings

ROWS = [
    {"question": f"Who won prize {g} (paraphrase {p})?", "answer": ["Ada Lovelace", "Alan Turing"][g % 2],
     "type": "name", "domain": "toy", "group": f"g{g}"}
    for g in range(4) for p in range(3)
] + [{"question": f"How many moons has planet {g}?", "answer": str(g + 1), "type": "numeric",
      "domain": "sky", "group": f"n{g}"} for g in range(3)]


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    (tmp_path / "set.jsonl").write_text("\n".join(json.dumps(r) for r in ROWS) + "\n", encoding="utf-8")
    (tmp_path / "thresholds.toml").write_text("[defaults]\nmax_fch = 0.5\n\n[domains.toy]\nmax_fch = 0.1\n")

    @defan_pytest.model("run-echo", version="1")
    def echo(prompt: str) -> str:
        if "moons" in prompt:
            return prompt.split("planet ")[1].rstrip("?")  # one below the gold: wrong
        return "Ada Lovelace"

    yield tmp_path
    models.unregister("run-echo")


def _settings(root: Path, **values: object) -> Settings:
    base = {"model": "run-echo", "dataset": "set.jsonl", "cache": "off", "spacy-model": "none"}
    base.update(values)  # type: ignore[arg-type]
    return Settings.from_values(base, root=root, invocation_dir=root)


def test_a_whole_run_without_pytest(project: Path) -> None:
    run = Run.configure(_settings(project, report="out.json"))
    assert [r.domain for r in run.rows].count("toy") == 12 and len(run.rows) == 15
    assert run.thresholds_source == str(project / "thresholds.toml")
    worker = Worker()
    run.start_pool(run.rows, worker)
    assert run.wait() is None
    run.score_all(run.rows)
    run.records = [run.record(row, i) for i, row in enumerate(run.rows)]
    run.finish()
    assert run.summary is not None
    toy, sky = run.summary["domains"]["toy"], run.summary["domains"]["sky"]
    assert toy["fch"] == 0.5 and toy["rc"] == 1.0 and sky["fch"] == 1.0
    failed = {(v.scope, v.metric) for v in run.verdicts if v.status == "fail"}
    assert failed == {("toy", "fch"), ("sky", "fch"), ("overall", "fch")}
    run.write_report()
    report = json.loads((project / "out.json").read_text())
    assert validate_report(report) == []
    assert report["meta"]["model"]["name"] == "run-echo" and len(report["rows"]) == 15
    assert report["meta"]["model"]["version"] == "1" and report["meta"]["selection"]["selected"] == 15
    assert list(report["rows"][0]) == ["id", "domain", "group", "type", "claim", "aligned", "correct", "error", "question",
                                       "answer", "response", "error_kind", "attempts", "answered_by", "latency"]
    assert report["gate_status"] == "fail" and report["regression"] is None
    assert {g["scope"] for g in report["gate"]} == {"toy", "sky", "overall"}
    counts = run.call_counts()
    assert counts == {"prompts": 15, "answered": 15, "cached": 0, "peer": 0, "retries": 0, "errors": 0,
                      "not_sent": 0, "failed": 0, "cut": 0, "cached_from": counts["cached_from"]}
    assert counts["cached_from"].startswith("run-echo version 1, source ")
    run.close(worker)


def test_configuration_reports_every_problem(project: Path) -> None:
    (project / "bad.toml").write_text("[defaults]\nmax_fch = 2\n")
    settings = _settings(project, model="no-such-model", thresholds="bad.toml", domain=["mars"])
    with pytest.raises(ConfigError) as info:
        Run.configure(settings, problems=["--defan-seed: earlier problem"])
    text = "\n".join(info.value.problems)
    assert "--defan-seed: earlier problem" in text
    assert "no domain 'mars'" in text and "its domains: toy, sky" in text
    assert "defaults.max_fch: 2 is outside [0, 1]" in text
    assert "--defan-model: unknown model 'no-such-model'" in text


def test_cache_folder_follows_the_mode(project: Path) -> None:
    run = Run.configure(_settings(project, cache="mycache"))
    assert run.cache_folder(shared=False) == project / "mycache"
    run = Run.configure(_settings(project, cache="off"))
    assert run.cache_folder(shared=False) is None
    assert run.cache_folder(shared=True) == project / ".defan_cache" / "runs" / run.run_id
    run = Run.configure(_settings(project, cache="refresh"))
    assert run.cache_folder(shared=False) == project / ".defan_cache"


def test_the_pipeline_never_imports_pytest() -> None:
    # Only defan_pytest.plugin may import pytest: everything else is plain Python, usable from
    # 'defan'.  Every module of the package is imported (walked, not listed by hand).
    import defan_pytest

    root = Path(defan_pytest.__file__).parent
    modules = sorted(
        ".".join(("defan_pytest",) + p.relative_to(root).with_suffix("").parts).removesuffix(".__init__")
        for p in root.rglob("*.py")
        if "plugin" not in p.relative_to(root).parts
    )
    assert len(modules) > 40, modules
    code = (
        "import sys\n"
        + "".join(f"import {m}\n" for m in modules)
        + "print('pytest' in sys.modules, '_pytest' in sys.modules, 'litellm' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False", "False"]
