"""``--defan-budget`` holds, the counts say what became of every prompt, two sessions share one
cache, and the estimate names every prompt -- in real pytest sessions (serial and ``-n 2``)
against the loopback OpenAI-protocol server (issue 20, points 6 and 9; issue 19)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from openai_server import OpenAIServer

KEY = "sk-test-SECRET-0123456789abcdef"
ARGS = ["--defan-dataset=toy.jsonl", "--defan-spacy-model=none", "-p", "no:cacheprovider", "--defan-report=r.json"]
WORKERS = [pytest.param([], id="serial"), pytest.param(["-n", "2"], id="xdist", marks=pytest.mark.slow)]
#: USD per million tokens: dear, so that a few answers reach a budget.
PRICE_IN, PRICE_OUT = 1000.0, 2000.0
PRICED = """
[tool.defan.models.priced]
model = "openai/test-model"
api_base = "{base}"
price_in = {price_in}
price_out = {price_out}
{extra}
litellm = {{ api_key = "{key}" }}
"""


def rows(n: int, repeated: int = 0) -> list[dict]:
    """``n`` prompts of our own (7 words each), the last ``repeated`` of them asking the text
    of an earlier one again."""
    out = [{"question": f"How many moons does planet {i} have?", "answer": str(i % 7), "type": "numeric",
            "domain": "toy", "group": f"g{i // 3}"} for i in range(n)]
    for k in range(repeated):
        out[n - 1 - k]["question"] = out[k]["question"]
        out[n - 1 - k]["answer"] = out[k]["answer"]
    return out


def project(pytester: pytest.Pytester, data: list[dict], srv: OpenAIServer, extra: str = "") -> None:
    pytester.path.joinpath("toy.jsonl").write_text("".join(json.dumps(r) + "\n" for r in data), encoding="utf-8")
    pytester.makepyprojecttoml(PRICED.format(base=srv.base_url, key=KEY, price_in=PRICE_IN, price_out=PRICE_OUT,
                                             extra=extra))
    # The prompts a budget leaves unsent are call errors, which the built-in max_error_rate (0.05)
    # would fail: what is spent is the point here, not the gate.
    pytester.path.joinpath("thresholds.toml").write_text("[defaults]\nmax_error_rate = 1.0\n", encoding="utf-8")


def cost(prompt_tokens: int, completion_tokens: int) -> float:
    return (prompt_tokens * PRICE_IN + completion_tokens * PRICE_OUT) / 1e6


def long_answers(data: list[dict], words: int) -> dict[str, str]:
    """Answers of ``words`` words (the server counts a word a completion token), right at the end."""
    return {r["question"]: " ".join(["well"] * (words - 1) + [r["answer"]]) for r in data}


def report(pytester: pytest.Pytester, name: str = "r.json") -> dict[str, Any]:
    return json.loads((pytester.path / name).read_text(encoding="utf-8"))


def adds_up(calls: dict[str, Any]) -> bool:
    return calls["answered"] + calls["cached"] + calls["not_sent"] + calls["failed"] == calls["prompts"]


@pytest.fixture
def quiet(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("DEFAN_PROGRESS_SECONDS", "60")
    return pytester


# -- the budget holds ---------------------------------------------------------------------------


@pytest.mark.parametrize("workers", WORKERS)
def test_answers_ten_times_the_guess_spend_at_most_the_budget_plus_the_requests_in_flight(
        quiet: pytest.Pytester, workers: list) -> None:
    # Answers of 1,000 tokens where 100 are guessed before the first one comes back: each
    # process sends one request, learns, then books every request at the largest answer seen.
    data = rows(30)
    per_call = cost(7, 1000)
    limit = 2.5 * per_call
    with OpenAIServer(answers=long_answers(data, 1000), latency=0.05) as srv:
        project(quiet, data, srv)
        result = quiet.runpytest_subprocess("--defan-model=priced", f"--defan-budget={limit}",
                                            "--defan-concurrency=4", *ARGS, *workers, timeout=300)
        sent = srv.total
    assert result.ret == 0, result.stdout.lines[-20:]
    processes = 2 if workers else 1
    assert sent * per_call <= limit + processes * per_call  # the budget, plus the requests in flight
    calls = report(quiet)["meta"]["calls"]
    # What became of every prompt, adding up: answered by the model, not sent; nothing cached or failed.
    assert (calls["prompts"], calls["answered"], calls["cached"], calls["not_sent"], calls["failed"]) == (
        30, sent, 0, 30 - sent, 0) and adds_up(calls)
    result.stdout.fnmatch_lines([
        f"30 prompts: {sent} answered by the model, 0 from the cache, {30 - sent} not sent (the budget was reached), "
        "0 failed; 0 retries*",
    ])
    errors = [r["error"] for r in report(quiet)["rows"] if r["error"]]
    assert len(errors) == 30 - sent
    assert all(e.startswith("BudgetExceeded: not sent: --defan-budget $5.0") for e in errors)
    assert all("its completion taken as the largest answer so far" in e for e in errors)


@pytest.mark.parametrize("workers", WORKERS)
def test_max_tokens_raises_the_booking_and_the_budget_is_never_passed(quiet: pytest.Pytester, workers: list) -> None:
    data = rows(30)
    per_call = cost(7, 1000)
    limit = 2.5 * per_call
    with OpenAIServer(answers=long_answers(data, 1000), latency=0.05) as srv:
        project(quiet, data, srv, extra="max_tokens = 1000")
        result = quiet.runpytest_subprocess("--defan-model=priced", f"--defan-budget={limit}",
                                            "--defan-concurrency=4", *ARGS, *workers, timeout=300)
        sent = srv.total
        assert srv.requests[0]["body"]["max_tokens"] == 1000
    assert result.ret == 0, result.stdout.lines[-20:]
    assert 0 < sent and sent * per_call <= limit  # every request booked at max_tokens: never past it
    rep = report(quiet)
    assert rep["usage"]["budget"]["spent"] == pytest.approx(sent * per_call) and adds_up(rep["meta"]["calls"])
    errors = [r["error"] for r in rep["rows"] if r["error"]]
    assert errors and all("its completion taken as max_tokens=1000" in e for e in errors)


@pytest.mark.parametrize("workers", WORKERS)
def test_answers_that_cannot_be_read_are_charged_and_stop_a_small_budget(quiet: pytest.Pytester, workers: list) -> None:
    # Every answer is a 200 with a truncated body (no usage): the provider may bill it, so it
    # is charged at its estimate, retries included -- a budget smaller than one request sends
    # one request per process, not every prompt.
    data = rows(30)
    limit = 0.5 * cost(16, 100)  # half the first booking
    with OpenAIServer(faults=[{"fault": "malformed"}]) as srv:
        project(quiet, data, srv)
        result = quiet.runpytest_subprocess("--defan-model=priced", f"--defan-budget={limit}", "--defan-retries=2",
                                            "--defan-concurrency=4", *ARGS, *workers, timeout=300)
        sent = srv.total
    processes = 2 if workers else 1
    assert 1 <= sent <= processes, result.stdout.lines[-20:]
    rep = report(quiet)
    calls = rep["meta"]["calls"]
    assert (calls["answered"], calls["cached"], calls["failed"], calls["not_sent"]) == (0, 0, sent, 30 - sent)
    assert adds_up(calls)
    failed = [r["error"] for r in rep["rows"] if r["error_kind"] == "InternalServerError"]
    assert failed and all(e.endswith("(1 answer that could not be read charged to --defan-budget at its estimate; "
                                     "not asked again: --defan-budget would be passed)") for e in failed)
    assert rep["usage"]["budget"]["charged"] == sent
    unsent = [r["error"] for r in rep["rows"] if r["error_kind"] == "BudgetExceeded"]
    assert len(unsent) == 30 - sent
    result.stdout.fnmatch_lines([
        f"30 prompts: 0 answered by the model, 0 from the cache, {30 - sent} not sent (the budget was reached), "
        f"{sent} failed; 0 retries*",
    ])
    result.stdout.fnmatch_lines([f"budget $* reached ($0 spent on the answers received; {sent} answer* that could not "
                                 "be read charged to --defan-budget at its estimate): * prompts not sent*"])
    if not workers:
        assert all("spent with 1 answer that could not be read charged to --defan-budget at its estimate;" in e
                   for e in unsent)


# -- two sessions on one cache ------------------------------------------------------------------


@pytest.mark.parametrize("workers", WORKERS)
def test_two_sessions_started_at_once_on_one_cache_ask_each_prompt_once(quiet: pytest.Pytester, workers: list) -> None:
    data = rows(24)
    answers = {r["question"]: r["answer"] for r in data}
    with OpenAIServer(answers=answers, latency=0.3) as srv:
        project(quiet, data, srv)
        base = [sys.executable, "-m", "pytest", "--defan-model=priced", "--defan-concurrency=1", *ARGS[:-1], *workers]
        sessions = [quiet.popen([*base, f"--defan-report=r{i}.json"], stdin=subprocess.DEVNULL,
                                stderr=subprocess.STDOUT) for i in range(2)]
        outs = [s.communicate(timeout=300)[0].decode("utf-8", "replace") for s in sessions]
        counts = srv.counts
    assert [s.returncode for s in sessions] == [0, 0], [o[-2000:] for o in outs]
    assert counts == {q: 1 for q in answers}  # each prompt asked once, by one of them
    reports = [report(quiet, f"r{i}.json") for i in range(2)]
    for rep in reports:
        assert all(r["response"] == r["answer"] for r in rep["rows"])  # both have every answer
        assert adds_up(rep["meta"]["calls"]) and rep["meta"]["calls"]["not_sent"] == 0
    assert sum(rep["meta"]["calls"]["answered"] for rep in reports) == 24  # the model's answers, once each
    for out in outs:
        assert "24 prompts:" in out and "0 not sent, 0 failed" in out


# -- the estimate names every prompt ------------------------------------------------------------


@pytest.mark.parametrize("workers", WORKERS)
def test_the_estimate_names_cached_and_repeated_prompts_and_repeats_are_asked_once(
        quiet: pytest.Pytester, workers: list) -> None:
    data = rows(15, repeated=3)  # 15 prompts, 12 texts
    answers = {r["question"]: r["answer"] for r in data}
    with OpenAIServer(answers=answers, latency=0.05) as srv:
        project(quiet, data, srv)
        first = quiet.runpytest_subprocess("--defan-model=priced", *ARGS, *workers, timeout=300)
        assert first.ret == 0, first.stdout.lines[-20:]
        assert srv.counts == {q: 1 for q in answers}
        quiet.path.joinpath("toy.jsonl").write_text(
            "".join(json.dumps(r) + "\n" for r in data + rows(20)[15:]), encoding="utf-8")  # 5 new prompts
        second = quiet.runpytest_subprocess("--defan-model=priced", *ARGS, *workers, timeout=300)
        assert second.ret == 0, second.stdout.lines[-20:]
    first.stdout.fnmatch_lines([
        "defan estimate: 12 prompts to send (0 from the cache, 3 repeating another prompt's text, asked once; "
        "15 in all) via the OpenAI protocol: *",
    ])
    second.stdout.fnmatch_lines([
        "defan estimate: 5 prompts to send (12 from the cache, 3 repeating another prompt's text, asked once; "
        "20 in all) via the OpenAI protocol: *",
    ])
    calls = report(quiet)["meta"]["calls"]
    assert (calls["prompts"], calls["answered"], calls["cached"]) == (20, 5, 15) and adds_up(calls)
