"""--defan-repeat in real pytest sessions (issue 24, point 5: non-determinism measured, not
assumed): the extra asks are real calls through the pool and the cache, counted in the
estimate, scored, and their agreement stated in the terminal, the JSON and HTML reports and the
regression gate's text -- the same figures serially and under ``-n 2``.

Two non-deterministic models: a registered callable (the cheapest check) and the loopback
OpenAI-protocol server of ``tests/openai_server.py`` (``nondeterministic``: a fixed pattern of
reworded and flipping answers per prompt).  Each prompt's K answers are the n-th, (n+1)-th, ...
request of that prompt's text, wherever it ran, so the multiset of a prompt's answers -- all the
agreement figures depend on -- is the same serially and under xdist.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from openai_server import OpenAIServer, nondeterministic, pattern_of

ROWS = [{"question": f"How many moons does planet {i} have?", "answer": str(i % 7), "type": "numeric",
         "domain": "toy" if i < 9 else "more", "group": f"g{i // 3}"} for i in range(18)]
ANSWERS = {r["question"]: r["answer"] for r in ROWS}
TOY_ARGS = ["--defan-dataset=toy.jsonl", "--defan-spacy-model=none", "-p", "no:cacheprovider", "-p", "no:randomly"]
WORKERS = [pytest.param([], id="serial"), pytest.param(["-n", "2"], id="n2")]

# The callable: the n-th ask of a prompt (counted in a file shared by the processes of a run).
# Prompts 0, 3, 6, ...: the second ask is wrong (a verdict flip); 1, 4, 7, ...: the second ask
# says it in other words (same verdict); 2, 5, 8, ...: the same answer, its spacing changed.
CONFTEST = '''
import fcntl, json, os
import defan_pytest

ROWS = {r["question"]: (i, r["answer"]) for i, r in enumerate(json.loads(l) for l in open("toy.jsonl"))}

def nth_ask(prompt):
    with open(os.environ["DEFAN_TEST_ASKS"], "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        n = f.read().splitlines().count(prompt)
        f.write(prompt + "\\n")
    return n

@defan_pytest.model("wobbly")
def wobbly(prompt):
    i, gold = ROWS[prompt]
    n = nth_ask(prompt)
    if n % 2 == 1 and i % 3 == 0:
        return str(int(gold) + 1)
    if n % 2 == 1 and i % 3 == 1:
        return f"The answer is: {gold}."
    return f"  {gold}\\n" if n % 2 else gold
'''


@pytest.fixture
def toy(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.Pytester:
    monkeypatch.setenv("DEFAN_PROGRESS_SECONDS", "60")
    monkeypatch.setenv("DEFAN_TEST_ASKS", str(tmp_path / "asks.txt"))
    for name in ("CI", "BUILD_NUMBER", "GITHUB_STEP_SUMMARY"):
        monkeypatch.delenv(name, raising=False)
    pytester.path.joinpath("toy.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    pytester.makeconftest(CONFTEST)
    return pytester


def asks(tmp_path: Path) -> list:
    return (tmp_path / "asks.txt").read_text().splitlines()


def figures(project: pytest.Pytester, report: str = "r.json") -> dict:
    return json.loads((project.path / report).read_text())["meta"]["repeat"]


@pytest.mark.parametrize("workers", WORKERS)
def test_a_callable_asked_three_times_states_how_often_it_agrees(toy: pytest.Pytester, tmp_path: Path,
                                                                  workers: list) -> None:
    result = toy.runpytest_subprocess("--defan-model=wobbly", "--defan-repeat=3", "--defan-report=r.json",
                                      "--defan-html=r.html", "--defan-cache=off", *TOY_ARGS, *workers)
    assert result.ret == 0, result.stdout.lines[-30:]
    sent = asks(tmp_path)
    assert len(sent) == 3 * len(ROWS) and all(sent.count(q) == 3 for q in ANSWERS)  # each ask once
    rep = figures(toy)
    overall = rep["overall"]
    # 6 prompts flip once in three asks (2 of 3 pairs each), 6 are reworded, 6 only respaced.
    assert (rep["times"], overall["prompts"], overall["identical"], overall["verdicts_agree"]) == (3, 18, 6, 12)
    assert (overall["flipped_pairs"], overall["pairs"]) == (12, 54)
    assert rep["domains"]["toy"]["prompts"] == 9 and rep["domains"]["more"]["flipped_pairs"] == 6
    out = result.stdout.str()
    assert ("defan repeat: 3 asks of 18 prompts: answers identical 6 of 18 (33%), verdicts agree 12 of 18 (67%), "
            "FCH verdict flip rate 22.2% (12 of 54 pairs)") in out
    assert re.search(r"^  toy +answers identical 3 of 9", out, re.M)  # flips: the table by domain
    assert "defan estimate: 54 prompts to send (0 from the cache; 36 of the 54 are the extra asks of --defan-repeat)" in out
    html = (toy.path / "r.html").read_text()
    assert "FCH verdict flip rate 22.2% (12 of 54 pairs of asks)" in html


def test_the_same_figures_serially_and_under_xdist(toy: pytest.Pytester, tmp_path: Path) -> None:
    args = ["--defan-model=wobbly", "--defan-repeat=4:6", "--defan-cache=off", *TOY_ARGS]
    toy.runpytest_subprocess(*args, "--defan-report=serial.json")
    serial = len(asks(tmp_path))
    (tmp_path / "asks.txt").unlink()
    toy.runpytest_subprocess(*args, "--defan-report=n2.json", "-n", "2")
    assert figures(toy, "serial.json") == figures(toy, "n2.json")
    rep = figures(toy, "serial.json")
    # A sample of about 6 prompts, whole groups of 3, every domain: a group of each asked 4 times.
    assert rep["times"] == 4 and rep["overall"]["prompts"] == 6
    assert {d: f["prompts"] for d, f in rep["domains"].items()} == {"toy": 3, "more": 3}
    assert serial == len(asks(tmp_path)) == len(ROWS) + 3 * 6


def test_a_model_that_agrees_with_itself_says_so_in_one_line(toy: pytest.Pytester) -> None:
    toy.makeconftest("import defan_pytest, json\nG = {json.loads(l)['question']: json.loads(l)['answer'] "
                     "for l in open('toy.jsonl')}\n@defan_pytest.model('steady')\ndef steady(p):\n    return G[p]\n")
    result = toy.runpytest("--defan-model=steady", "--defan-repeat=2", "--defan-cache=off", *TOY_ARGS)
    lines = [line for line in result.stdout.lines if "answers identical" in line]
    assert lines == ["defan repeat: 2 asks of 18 prompts: answers identical 18 of 18 (100%), verdicts agree 18 of 18 "
                     "(100%), FCH verdict flip rate 0.0% (0 of 18 pairs)"]  # no table: nothing flipped, no -v
    result = toy.runpytest("--defan-model=steady", "--defan-repeat=2", "--defan-cache=off", "-v", *TOY_ARGS)
    assert len([line for line in result.stdout.lines if "answers identical" in line]) == 3  # -v: by domain too


def test_repeats_are_cached_apart_and_the_run_s_own_keys_stay(toy: pytest.Pytester, tmp_path: Path) -> None:
    toy.makeconftest(CONFTEST.replace('@defan_pytest.model("wobbly")', '@defan_pytest.model("wobbly", version="1")'))
    once = toy.runpytest_subprocess("--defan-model=wobbly", "--defan-report=once.json", *TOY_ARGS)
    assert once.ret == 0 and len(asks(tmp_path)) == len(ROWS)
    again = toy.runpytest_subprocess("--defan-model=wobbly", "--defan-repeat=3", *TOY_ARGS)
    # The run's own asks come from the cache of the run without repeats; only the repeats are sent.
    assert "defan estimate: 36 prompts to send (18 from the cache; 36 of the 54 are the extra asks" in again.stdout.str()
    assert len(asks(tmp_path)) == 3 * len(ROWS)
    resumed = toy.runpytest_subprocess("--defan-model=wobbly", "--defan-repeat=3", *TOY_ARGS)
    assert "defan estimate: 0 prompts to send (54 from the cache;" in resumed.stdout.str()
    assert len(asks(tmp_path)) == 3 * len(ROWS)
    assert "FCH verdict flip rate 22.2% (12 of 54 pairs)" in resumed.stdout.str()


@pytest.mark.parametrize("value, shown", [
    ("1", "'1' is not a repeat"), ("21", "'21' is not a repeat"), ("3:0", "'3:0' is not a repeat"),
    ("three", "'three' is not a repeat"), ("3:x", "'3:x' is not a repeat"),
])
def test_a_bad_repeat_is_one_usage_error_naming_what_is_allowed(toy: pytest.Pytester, tmp_path: Path, value: str,
                                                                 shown: str) -> None:
    result = toy.runpytest("--defan-model=wobbly", f"--defan-repeat={value}", *TOY_ARGS)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert err.count("--defan-repeat: ") == 1
    assert f"--defan-repeat: {shown}; use K (every selected prompt asked K times) or K:N" in err
    assert "with K from 2 to 20 and N at least 1, e.g. 3 or 3:200" in err
    assert not (tmp_path / "asks.txt").exists()  # before any call


def test_the_ini_key_and_the_help(toy: pytest.Pytester) -> None:
    toy.makeini("[pytest]\ndefan_repeat = 2\n")
    result = toy.runpytest("--defan-model=wobbly", "--defan-cache=off", *TOY_ARGS)
    assert "defan repeat: 2 asks of 18 prompts" in result.stdout.str()
    helped = toy.runpytest("--help")
    assert re.search(r"--defan-repeat=VALUE\s+measure the model's own", helped.stdout.str())
    assert "(default: off)" in " ".join(helped.stdout.str().split())


# -- the loopback OpenAI-protocol server -------------------------------------------------------

def server_args(srv: OpenAIServer, *extra: str) -> list:
    return ["--defan-model=openai/smollm2", f"--defan-model-arg=api_base={srv.base_url}",
            "--defan-model-arg=temperature=0", "--defan-timeout=5", *TOY_ARGS, *extra]


@pytest.mark.parametrize("workers", WORKERS)
def test_a_non_deterministic_server_shows_its_flip_rate_in_the_regression_gate(toy: pytest.Pytester,
                                                                                 workers: list) -> None:
    toy.path.joinpath("thresholds.toml").write_text("[regression]\nmax_fch_rise = 0.5\n")
    with OpenAIServer(answers=ANSWERS) as steady:  # the deterministic server: the baseline
        base = toy.runpytest_subprocess(*server_args(steady, "--defan-report=base.json", "--defan-cache=off"))
        assert base.ret == 0 and figures_absent(toy)
    kinds = {q: pattern_of(q, seed=3) for q in ANSWERS}
    with OpenAIServer(answer_fn=nondeterministic(ANSWERS, seed=3)) as srv:
        result = toy.runpytest_subprocess(*server_args(srv, "--defan-repeat=2", "--defan-baseline=base.json",
                                                       "--defan-report=r.json", "--defan-cache=off", *workers))
        assert srv.total == 2 * len(ROWS)
    rep = figures(toy)
    flipping = sum(1 for k in kinds.values() if k == "flipping")
    stable = sum(1 for k in kinds.values() if k == "stable")
    assert flipping and stable and flipping + stable < len(ROWS)  # the seed gives all three kinds
    assert (rep["temperature"], rep["overall"]["identical"], rep["overall"]["flipped_pairs"]) == (0, stable, flipping)
    rate = f"{flipping / len(ROWS):.1%}"
    said = f"the model's own verdict flip rate at temperature 0 is {rate} (2 repeats of 18 prompts): changes below ~that are noise"
    report = json.loads((toy.path / "r.json").read_text())
    assert report["regression"]["noise"] == said
    assert said in report["regression"]["scopes"]["overall"]["fch"]["message"]
    assert said in result.stdout.str()  # the regression gate's lines in the terminal summary


def figures_absent(project: pytest.Pytester) -> bool:
    return "repeat" not in json.loads((project.path / "base.json").read_text())["meta"]


def test_the_shards_of_a_repeated_run_merge_to_the_whole_run_s_figures(toy: pytest.Pytester, tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    from defan_pytest.cli import main

    args = ["--defan-model=wobbly", "--defan-repeat=3", "--defan-cache=off", *TOY_ARGS]
    toy.runpytest_subprocess(*args, "--defan-report=whole.json")
    whole = figures(toy, "whole.json")
    for i in (1, 2):
        (tmp_path / "asks.txt").unlink()
        toy.runpytest_subprocess(*args, f"--defan-shard={i}/2", f"--defan-report=shard{i}.json")
        assert figures(toy, f"shard{i}.json")["overall"]["prompts"] < len(ROWS)
    merged = toy.path / "merged.json"
    main(["merge", str(toy.path / "shard1.json"), str(toy.path / "shard2.json"), "-o", str(merged)])
    assert figures(toy, "merged.json") == whole
    # defan compare states the newer report's flip rate with its FCH changes.
    assert main(["compare", str(toy.path / "shard1.json"), str(merged)]) in (0, 1)
    assert "the model's own verdict flip rate is 22.2% (3 repeats of 18 prompts)" in capsys.readouterr().out
