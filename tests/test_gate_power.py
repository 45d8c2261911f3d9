"""Issue 33 in real sessions: the regressions a team ships are caught, a re-run is not.

A prize data set of our own (60 questions: six categories by ten years, three paraphrases each)
and applications registered the way a team registers its own: a deterministic one that knows a
third of the facts, the same with a one-line bug that makes every Physics answer wrong (a sixth
of the questions), and a noisy one whose uncertain prompts flip between runs. Serial and ``-n 2``
give the same verdicts; the thresholds are the shipped defaults of the regression gate.
"""
from __future__ import annotations

import json

import pytest

CATEGORIES = ("Physics", "Chemistry", "Medicine", "Literature", "Peace", "Economics")
YEARS = range(1990, 2000)
PHRASES = (
    "Who was awarded the {c} Prize for {y}?",
    "Who won the {y} {c} Prize?",
    "Name the {c} laureate of {y}.",
)


def _dataset() -> str:
    lines = ["question,answer,type,domain,group"]
    for c in CATEGORIES:
        for y in YEARS:
            gold = f"{c[:3]}son {y}"
            for phrase in PHRASES:
                lines.append(f'"{phrase.format(c=c, y=y)}",{gold},name,prizes,{c}-{y}')
    return "\n".join(lines) + "\n"


CONFTEST = '''
import hashlib, os, re
import defan_pytest

def _fact(prompt):
    c = re.search(r"(Physics|Chemistry|Medicine|Literature|Peace|Economics)", prompt).group(1)
    y = int(re.search(r"(19\\d\\d)", prompt).group(1))
    return c, y

def _knows(c, y):
    return (y + len(c)) % 3 == 0  # a third of the facts, the same every run

def _right(c, y):
    return f"{c[:3]}son {y}"

@defan_pytest.model("app", version="1")
def app(prompt):
    c, y = _fact(prompt)
    return _right(c, y) if _knows(c, y) else "Albert Einstein"

@defan_pytest.model("app-broken", version="1")
def app_broken(prompt):
    c, y = _fact(prompt)
    if c == "Physics":  # the one-line bug
        return "Albert Einstein"
    return _right(c, y) if _knows(c, y) else "Albert Einstein"

CALLS = {}

@defan_pytest.model("noisy")  # no version: never reused across runs
def noisy(prompt):
    c, y = _fact(prompt)
    digest = hashlib.sha256(prompt.encode()).digest()
    if digest[0] < 64:  # a quarter of the prompts the model is unsure of: a coin each call
        CALLS[prompt] = CALLS.get(prompt, 0) + 1  # (seeded by the run and the call: repeatable)
        seed = hashlib.sha256(f"{prompt}{os.environ.get('NOISE_RUN', '')}{CALLS[prompt]}".encode()).digest()
        return _right(c, y) if seed[0] < 128 else "Albert Einstein"
    return _right(c, y) if _knows(c, y) else "Albert Einstein"
'''

ARGS = ["--defan-dataset=prizes.csv", "--defan-spacy-model=none", "-p", "no:cacheprovider", "--defan-cache=off"]


@pytest.fixture
def prizes(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".csv", prizes=_dataset())
    pytester.makeconftest(CONFTEST)
    pytester.path.joinpath("thresholds.toml").write_text("[defaults]\nmax_fch = 1.0\n", encoding="utf-8")
    assert pytester.runpytest("--defan-model=app", "--defan-report=base.json", *ARGS).ret == 0
    return pytester


def _fch(pytester: pytest.Pytester, scope: str = "prizes") -> dict:
    report = json.loads((pytester.path / "new.json").read_text(encoding="utf-8"))
    change: dict = report["regression"]["scopes"][scope]["fch"]
    return change


@pytest.mark.slow
@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "n2"])
def test_a_broken_category_fails_and_the_same_application_passes(prizes: pytest.Pytester, xdist: list[str]) -> None:
    # The one-line bug: every Physics answer wrong, a sixth of the domain. Its right Physics
    # answers flip (deterministic: nothing else does) and the rise passes the tolerance.
    broken = prizes.runpytest("--defan-model=app-broken", "--defan-baseline=base.json", "--defan-report=new.json",
                              *ARGS, *xdist)
    assert broken.ret == 1
    change = _fch(prizes)
    assert change["regressed"] and change["better_flips"] == 0 and change["worse_flips"] > 0
    assert change["change"] > 0.02 and change["p_value"] < change["level"]
    broken.stdout.fnmatch_lines([
        "*prizes: FCH * (+0.*; flips * worse / 0 better in 60 groups, p?0.00* against noise, needs < *): regressed: "
        "worse than the model's own noise and past the tolerance 0.02",
        "*the model's own noise: each answer its own draw, read from the flips*",
        "*smallest change this sample catches*",
    ])
    # The same application again: no flip, no regression.
    same = prizes.runpytest("--defan-model=app", "--defan-baseline=base.json", "--defan-report=new.json", *ARGS, *xdist)
    assert same.ret == 0
    assert _fch(prizes)["worse_flips"] == 0 and not _fch(prizes)["regressed"]


@pytest.mark.slow
def test_a_noisy_model_against_its_own_earlier_run_passes(prizes: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    # A quarter of the prompts decided by a coin each run: dozens of flips each way, no
    # regression; with --defan-repeat=3 the noise is measured and every answer counts.
    monkeypatch.setenv("NOISE_RUN", "first")
    assert prizes.runpytest("--defan-model=noisy", "--defan-report=noisy.json", *ARGS).ret == 0
    monkeypatch.setenv("NOISE_RUN", "second")
    again = prizes.runpytest("--defan-model=noisy", "--defan-baseline=noisy.json", "--defan-report=new.json", *ARGS)
    assert again.ret == 0, again.stdout.lines[-30:]
    change = _fch(prizes)
    assert change["worse_flips"] > 5 and change["better_flips"] > 5 and not change["regressed"]
    monkeypatch.setenv("NOISE_RUN", "third")
    repeated = prizes.runpytest("--defan-model=noisy", "--defan-baseline=noisy.json", "--defan-report=new.json",
                                "--defan-repeat=3", *ARGS)
    assert repeated.ret == 0, repeated.stdout.lines[-30:]
    report = json.loads((prizes.path / "new.json").read_text(encoding="utf-8"))
    assert report["regression"]["scopes"]["prizes"]["fch"]["noise"] == "repeats"
    assert all(len(r["repeats"]) == 2 for r in report["rows"])  # each repeat's verdict kept
    assert 0.0 < report["domains"]["prizes"]["fch"] < 1.0 and report["power"]["noise"] == "repeats"
