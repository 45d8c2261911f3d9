"""examples/github-actions.yml: its structure, and its steps' commands run for real.

The DefAn steps run as GitHub would run them (``bash -e`` with the job's environment), in a
project with a model registered in conftest.py.  Two things are changed, and only through
standard mechanisms: ``PYTEST_ADDOPTS`` points the run at a small data set so that the "full
set" finishes in seconds, and the baseline artifact is put where ``gh run download`` would
put it (there is no GitHub here).  The install, checkout and cache steps are GitHub actions
or need the network, and are not run.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

WORKFLOW = Path(__file__).resolve().parents[1] / "examples" / "github-actions.yml"

CONFTEST = '''
import os
import defan_pytest

# Right on groups below the cut, wrong above it: MODEL_CUT moves the cut (a "pull request").
CUT = int(os.environ.get("MODEL_CUT", "8"))

@defan_pytest.model("my-rag", version=os.environ.get("MODEL_CUT", "8"))
def my_rag(prompt):
    n = int(prompt.split("#")[1].split()[0])
    return "Ada Lovelace" if n % 10 < CUT else "Charles Babbage"
'''


def _load() -> dict[str, Any]:
    import yaml

    return yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def _step(workflow: dict[str, Any], name: str) -> dict[str, Any]:
    steps = workflow["jobs"]["defan"]["steps"]
    return next(s for s in steps if s.get("name") == name)


def test_the_workflow_has_the_recipe() -> None:
    wf = _load()
    triggers = wf[True] if True in wf else wf["on"]  # YAML 1.1 reads a bare `on` as true
    assert "pull_request" in triggers and "schedule" in triggers
    steps = wf["jobs"]["defan"]["steps"]
    uses = [s.get("uses", "") for s in steps]
    assert any(u.startswith("actions/cache@") for u in uses)
    cache = next(s for s in steps if s.get("uses", "").startswith("actions/cache@"))
    assert cache["with"]["path"] == ".defan_cache"
    assert "env.DEFAN_MODEL" in cache["with"]["key"] and "env.DEFAN_MODEL_VERSION" in cache["with"]["key"]
    pr = _step(wf, "DefAn on a sample, compared with main")
    assert pr["if"] == "github.event_name == 'pull_request'"
    assert "--defan-baseline=" in pr["run"] and "--defan-sample=" in pr["run"] and "--defan-seed=" in pr["run"]
    nightly = _step(wf, "DefAn on the full set")
    assert "--defan-sample" not in nightly["run"] and "--defan-report=defan-report.json" in nightly["run"]
    upload = _step(wf, "Save the report (the nightly one is the next baseline)")
    assert upload["uses"].startswith("actions/upload-artifact@") and "defan-baseline" in upload["with"]["name"]
    fetch = _step(wf, "Fetch the baseline of the last nightly run on main")
    assert "gh run download" in fetch["run"] and "--name defan-baseline" in fetch["run"]


def _run(command: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-e", "-c", command], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "conftest.py").write_text(CONFTEST, encoding="utf-8")
    rows = [
        {"question": f"Who wrote note #{g} (take {p})?", "answer": "Ada Lovelace", "type": "name", "domain": "notes",
         "group": f"g{g}"}
        for g in range(40) for p in range(5)
    ]
    (tmp_path / "notes.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    (tmp_path / "thresholds.toml").write_text(
        "[defaults]\nmax_fch = 0.5\nmin_samples = 5\n\n[regression]\nmax_fch_rise = 0.02\n", encoding="utf-8"
    )
    return tmp_path


@pytest.mark.slow
def test_the_steps_run_a_baseline_then_a_pull_request(project: Path) -> None:
    wf = _load()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "GITHUB_"))}
    env.update({str(k): str(v) for k, v in wf["env"].items()})
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTEST_ADDOPTS"] = "--defan-dataset=notes.jsonl --defan-spacy-model=none -p no:randomly"
    summary = project / "step-summary.md"
    env["GITHUB_STEP_SUMMARY"] = str(summary)

    nightly = _run(_step(wf, "DefAn on the full set")["run"], project, env)
    assert nightly.returncode == 0, nightly.stdout[-3000:] + nightly.stderr[-2000:]
    report = json.loads((project / "defan-report.json").read_text(encoding="utf-8"))
    assert report["meta"]["selection"]["selected"] == 200 and report["gate_status"] == "pass"
    assert "regression gate: no baseline" in summary.read_text(encoding="utf-8")
    # What `gh run download ... --name defan-baseline --dir baseline` leaves behind.
    (project / "baseline").mkdir()
    (project / "defan-report.json").rename(project / "baseline" / "defan-report.json")

    pr = _step(wf, "DefAn on a sample, compared with main")["run"]
    same = _run(pr, project, env)
    assert same.returncode == 0, same.stdout[-3000:]
    assert "Compared with the baseline" in summary.read_text(encoding="utf-8")
    assert json.loads((project / "defan-report.json").read_text(encoding="utf-8"))["regression"]["status"] == "pass"

    # A change that gets 4 questions in 10 wrong instead of 2: FCH rises by 0.2.
    worse = _run(pr, project, {**env, "MODEL_CUT": "6"})
    assert worse.returncode == 1, worse.stdout[-3000:]
    assert "FAILED defan::regression[notes]" in worse.stdout
    text = summary.read_text(encoding="utf-8")
    assert "**REGRESSED**" in text and "Right before, wrong now (FCH)" in text


#: A model within the shipped limits on the public split: the gold answer, except "I don't know"
#: to one question in six (FCH about 0.17, RC intact).
ORACLE = '''
import zlib
import defan_pytest
from defan_pytest import dataset

GOLD = {r.question: (r.answer, r.group_key) for r in dataset.load_dataset(None, ())}

@defan_pytest.model("my-rag", version="oracle-1")
def oracle(prompt):
    answer, group = GOLD[prompt]
    return "I don't know." if zlib.crc32(group.encode()) % 6 == 0 else answer
'''


@pytest.mark.slow
def test_the_pull_request_sample_judges_every_domain_of_the_public_split(tmp_path: Path, public_dir: Path) -> None:
    # The recipe's own sample and seed with the shipped thresholds.toml: proportional whole
    # groups gave sports 4 and conference_venue 3 groups, fewer than min_samples = 5, and the
    # gate failed every pull request of every model as "not judged".
    wf = _load()
    (tmp_path / "conftest.py").write_text(ORACLE, encoding="utf-8")
    (tmp_path / "thresholds.toml").write_text(
        (Path(__file__).resolve().parents[1] / "thresholds.toml").read_text(encoding="utf-8"), encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "GITHUB_"))}
    env.update({str(k): str(v) for k, v in wf["env"].items()})
    env.update(PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}", DEFAN_DATA_DIR=str(public_dir),
               PYTEST_ADDOPTS="-p no:randomly --defan-spacy-model=none")
    pr = _run(_step(wf, "DefAn on a sample, compared with main")["run"], tmp_path, env)
    assert pr.returncode == 0, pr.stdout[-4000:] + pr.stderr[-2000:]
    report = json.loads((tmp_path / "defan-report.json").read_text(encoding="utf-8"))
    domains = set(report["domains"])
    assert len(domains) == 8
    judged = {v["scope"] for v in report["gate"] if v["metric"] == "fch" and v["status"] == "pass"}
    assert judged == domains | {"overall"}, report["gate"]
    assert "not judged" not in pr.stdout
    assert "sports 4 -> 5" in pr.stdout and "conference_venue 3 -> 5" in pr.stdout  # the header says why
