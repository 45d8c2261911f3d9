"""Several models in one session (issue 23, point 1) in real pytest sessions, serial and under
``-n 2``: every prompt asked of every model, items ``defan::<model>::<id>``, each model judged
by its own gate (its own threshold table), the paired comparison with ``--defan-compare-to``,
one report of every model (schema version 2) that the ``defan`` commands read, and a baseline
compared model by model.

Three registered callables answer a toy set of two domains, ten paraphrase groups each:
``steady`` (right but for two groups), ``twin`` (the same answers: a model compared with
itself), ``worse`` (wrong in eight groups more: a constructed regression).
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from timings import untimed

ROWS = [{"question": f"How many moons does planet {d}{g} have (asked {p})?", "answer": str(g + 2), "type": "numeric",
         "domain": d, "group": f"{d}{g}"} for d in ("toy", "more") for g in range(20) for p in range(3)]
ARGS = ["--defan-dataset=toy.jsonl", "--defan-spacy-model=none", "--defan-cache=off", "-p", "no:cacheprovider",
        "-p", "no:randomly", "-rs"]
WORKERS = [pytest.param([], id="serial"), pytest.param(["-n", "2"], id="n2")]

CONFTEST = '''
import json
import defan_pytest

GOLD = {r["question"]: (r["group"], r["answer"]) for r in (json.loads(l) for l in open("toy.jsonl"))}

def answer(prompt, wrong):
    group, gold = GOLD[prompt]
    return str(int(gold) + 1) if int(group[len(group.rstrip("0123456789")):]) < wrong else gold

@defan_pytest.model("steady", version="1")
def steady(prompt):
    return answer(prompt, 2)

@defan_pytest.model("twin", version="1")
def twin(prompt):
    return answer(prompt, 2)

@defan_pytest.model("worse", version="1")
def worse(prompt):
    return answer(prompt, 14)
'''

# Each model its own limits: worse's table lets it pass its level gate, so that only the
# comparison with steady finds it worse.
THRESHOLDS = '''
[domains.toy]
max_fch = 0.5
[domains.more]
max_fch = 0.5
[models."worse".domains.toy]
max_fch = 1.0
[models."worse".domains.more]
max_fch = 1.0
'''


@pytest.fixture
def toy(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("DEFAN_PROGRESS_SECONDS", "60")
    for name in ("CI", "BUILD_NUMBER", "GITHUB_STEP_SUMMARY", "GITHUB_ACTIONS"):
        monkeypatch.delenv(name, raising=False)
    pytester.path.joinpath("toy.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    pytester.path.joinpath("thresholds.toml").write_text(THRESHOLDS, encoding="utf-8")
    pytester.makeconftest(CONFTEST)
    return pytester


def figures(report: dict) -> dict:
    """What must not depend on how the run was made: each scope's figures."""
    return dict(untimed({"domains": report["domains"], "overall": report["overall"], "gate": report["gate_status"]}))


def defan(project: pytest.Pytester, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "import sys; from defan_pytest.cli import main; sys.exit(main())", *args], cwd=project.path, capture_output=True,
                          text=True, timeout=300)


@pytest.mark.parametrize("workers", WORKERS)
def test_three_models_in_one_run_are_three_runs_side_by_side(toy: pytest.Pytester, workers: list) -> None:
    result = toy.runpytest_subprocess("--defan-model=steady,twin", "--defan-model=worse", "--defan-compare-to=steady",
                                      "--defan-report=all.json", "--defan-html=all.html", "-v", *ARGS, *workers)
    out = result.stdout.str()
    # Every prompt of every model is a test of its own, named for the model.
    lines = out.splitlines()
    models = [line.split("::")[1] for line in lines if line.startswith("defan::") and "-q0" in line]
    # 120 prompts each, in the order the models were given (a serial run shows it).
    assert sorted(models) == ["steady"] * 120 + ["twin"] * 120 + ["worse"] * 120
    if not workers:
        assert models == ["steady"] * 120 + ["twin"] * 120 + ["worse"] * 120
    # The constructed regression fails its comparison; the model compared with itself passes.
    result.assert_outcomes(passed=3 * 3 + 3, failed=3)
    for scope in ("toy", "more", "overall"):
        assert any(f"defan::worse::compared[{scope}]" in line and "FAILED" in line for line in out.splitlines()), scope
        assert any(f"defan::twin::compared[{scope}]" in line and "PASSED" in line for line in out.splitlines()), scope
    assert "DefAn: 3 models" in out
    assert "right in steady, wrong in worse: 72 prompts (first 10)" in out
    both = json.loads((toy.path / "all.json").read_text())
    assert both["schema_version"] == 2 and both["models"] == ["steady", "twin", "worse"]
    assert both["comparisons"]["worse"]["status"] == "fail" and both["comparisons"]["twin"]["status"] == "pass"
    assert "steady" not in both["comparisons"]
    html = (toy.path / "all.html").read_text()
    assert "right in" in (Path(__file__).parents[1] / "defan_pytest/report/html/models.js").read_text()
    assert '"models":["steady","twin","worse"]' in html

    # The same figures as a run of each model alone (serial).
    for model in ("steady", "worse"):
        alone = toy.runpytest_subprocess(f"--defan-model={model}", f"--defan-report={model}.json", *ARGS)
        assert alone.ret == 0, alone.stdout.str()[-2000:]
        one = json.loads((toy.path / f"{model}.json").read_text())
        run = next(r for r in both["runs"] if r["meta"]["model"]["name"] == model)
        assert figures(run) == figures(one), model
        assert [(r["id"], r["claim"], r["correct"]) for r in run["rows"]] == [(r["id"], r["claim"], r["correct"]) for r in one["rows"]]

    # The report of several models, read by every command.
    gate = defan(toy, "gate", "all.json")
    assert gate.returncode == 1 and "worse against steady: fail" in gate.stdout and "twin against steady: pass" in gate.stdout
    compare = defan(toy, "compare", "all.json", "all.json")
    assert compare.returncode == 0 and "== worse ==" in compare.stdout
    page = defan(toy, "html", "all.json", "-o", "again.html")
    assert page.returncode == 0, page.stderr
    # A report of one model compared with the same model's run in the report of several.
    single = defan(toy, "compare", "all.json", "worse.json")
    assert single.returncode == 0, single.stdout + single.stderr


def test_k_selects_one_model_and_the_others_gates_are_skipped(toy: pytest.Pytester) -> None:
    result = toy.runpytest_subprocess("--defan-model=steady,worse", "--defan-compare-to=steady", "-k", "worse", *ARGS)
    out = result.stdout.str()
    # worse ran whole: its gate judged it; steady ran nothing: its gates skipped as narrowed runs' are,
    # and so is the comparison with it.
    result.assert_outcomes(passed=3, skipped=3 + 3)
    assert "SKIPPED [3] thresholds.toml: the gate judges whole runs: 0 of the 120 selected prompts ran" in out
    assert "SKIPPED [3] thresholds.toml: not judged: the run of steady it is compared with was narrowed" in out


def test_a_baseline_of_several_models_is_compared_model_by_model(toy: pytest.Pytester) -> None:
    first = toy.runpytest_subprocess("--defan-model=steady,worse", "--defan-report=base.json", *ARGS)
    assert first.ret == 0, first.stdout.str()[-2000:]
    again = toy.runpytest_subprocess("--defan-model=worse,steady", "--defan-baseline=base.json", "-v", *ARGS, "-n", "2")
    out = again.stdout.str()
    for model in ("steady", "worse"):
        for scope in ("toy", "more", "overall"):
            assert any(f"defan::{model}::regression[{scope}]" in line and "PASSED" in line for line in out.splitlines())
    assert again.ret == 0, out[-2000:]
    # A run of one model takes its own run out of a report of several ...
    one = toy.runpytest_subprocess("--defan-model=worse", "--defan-baseline=base.json", *ARGS)
    assert one.ret == 0, one.stdout.str()[-2000:]
    # ... and a model the baseline does not hold is one clear error before any call.
    toy.makeconftest(CONFTEST + '\n@defan_pytest.model("new", version="1")\ndef new(prompt):\n    return "1"\n')
    missing = toy.runpytest_subprocess("--defan-model=new", "--defan-baseline=base.json", *ARGS)
    assert missing.ret == pytest.ExitCode.USAGE_ERROR
    assert "no run of model 'new' (it holds steady, worse)" in missing.stderr.str()


def test_compare_to_must_name_one_of_several_models(toy: pytest.Pytester) -> None:
    alone = toy.runpytest_subprocess("--defan-model=steady", "--defan-compare-to=worse", *ARGS)
    assert alone.ret == pytest.ExitCode.USAGE_ERROR
    assert "give two or more with --defan-model" in alone.stderr.str()
    other = toy.runpytest_subprocess("--defan-model=steady,worse", "--defan-compare-to=nobody", "--defan-model=nope", *ARGS)
    assert other.ret == pytest.ExitCode.USAGE_ERROR
    err = other.stderr.str()
    # Every problem at once: the comparison's and the unknown model's.
    assert "not one of the models given (--defan-model): steady, worse, nope" in err
    assert "nope" in err and err.count("defan-pytest: configuration") == 1


def test_shards_of_a_run_of_several_models_merge_to_the_whole_run(toy: pytest.Pytester) -> None:
    for i in (1, 2):
        shard = toy.runpytest_subprocess("--defan-model=steady,worse", "--defan-compare-to=steady",
                                         f"--defan-shard={i}/2", f"--defan-report=s{i}.json", *ARGS)
        assert shard.ret in (0, 1), shard.stdout.str()[-2000:]
    whole = toy.runpytest_subprocess("--defan-model=steady,worse", "--defan-compare-to=steady", "--defan-report=w.json", *ARGS)
    assert whole.ret == 1
    merged = defan(toy, "merge", "s1.json", "s2.json", "-o", "m.json")
    assert merged.returncode == 1, merged.stdout + merged.stderr
    m, w = (json.loads((toy.path / n).read_text()) for n in ("m.json", "w.json"))
    assert m["models"] == w["models"] == ["steady", "worse"]
    assert [figures(r) for r in m["runs"]] == [figures(r) for r in w["runs"]]
    assert m["comparisons"]["worse"]["status"] == w["comparisons"]["worse"]["status"] == "fail"
    mixed = defan(toy, "merge", "s1.json", "steady.json" if (toy.path / "steady.json").exists() else "w.json")
    assert mixed.returncode == 2


def test_each_model_has_its_own_pool_limits(toy: pytest.Pytester) -> None:
    toy.path.joinpath("thresholds.toml").write_text(
        THRESHOLDS + '[models."steady"]\nconcurrency = 2\nrpm = 60000\n[models."twin"]\nconcurrency = 3\n', encoding="utf-8")
    result = toy.runpytest_subprocess("--defan-model=steady,twin,worse", "--defan-concurrency=5", "--defan-report=r.json", *ARGS)
    assert result.ret == 0, result.stdout.str()[-2000:]
    runs = {r["meta"]["model"]["name"]: r["meta"]["calls"]["pace"] for r in json.loads((toy.path / "r.json").read_text())["runs"]}
    assert {m: p["start"] for m, p in runs.items()} == {"steady": 2, "twin": 3, "worse": 5}
    assert max(p["limit"] for p in runs.values()) <= 5 and runs["steady"]["limit"] <= 2 and runs["twin"]["limit"] <= 3
    toy.path.joinpath("thresholds.toml").write_text(THRESHOLDS + '[models."twin"]\nconcurrency = 0\nrpm = -1\n', encoding="utf-8")
    bad = toy.runpytest_subprocess("--defan-model=steady,twin", *ARGS)
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    err = bad.stderr.str()
    assert "[models.twin] concurrency: 0 is not a whole number of requests, 1 or more" in err
    assert "[models.twin] rpm: -1 is not a number of requests per minute above 0" in err


def test_ctrl_c_says_what_every_model_keeps(toy: pytest.Pytester) -> None:
    import signal
    import time

    toy.makeconftest(CONFTEST + '''
import time

@defan_pytest.model("slow", version="1")
def slow(prompt):
    time.sleep(0.2)
    return answer(prompt, 2)
''')
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", "--defan-model=steady,slow", "--defan-concurrency=2", *ARGS],
        cwd=toy.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert proc.stdout is not None
    seen = ""
    deadline = time.monotonic() + 120
    while "defan estimate [slow]:" not in seen and time.monotonic() < deadline:  # the calls start now
        seen += proc.stdout.readline()
    time.sleep(2)  # slow's 120 calls take 12 s at 2 at once; steady's are done
    proc.send_signal(signal.SIGINT)
    out = seen + proc.communicate(timeout=120)[0]
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, out[-2000:]
    line = next(line for line in out.splitlines() if "stopped by Ctrl-C" in line)
    assert "steady: " in line and "slow: " in line and line.count("run the same command again") <= 1, line
    assert "Traceback" not in out
