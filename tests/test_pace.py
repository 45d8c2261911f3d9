"""The pace of the requests in flight (defan_pytest/calls/pace.py, issue 24 point 1): slow start,
Little's law on the server's own time, one halving per limit on timeouts under load, what the
server states; then real sessions against a loopback server with a fixed number of slots."""
from __future__ import annotations

import asyncio
import json
import re
from typing import List

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from defan_pytest.calls.pace import FIRST, HOLD, Pace, Ticket, combined, summary_of
from defan_pytest.calls.ratelimits import RateLimits, seconds_of
from openai_server import OpenAIServer


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def serve(pace: Pace, slots: int, n: int, service: float = 0.05) -> List[int]:
    """``n`` requests through ``pace`` into a server of ``slots`` slots; the in-flight counts seen."""
    sem = asyncio.Semaphore(slots)
    seen: List[int] = []

    async def one() -> None:
        ticket = await pace.acquire()
        seen.append(pace.in_flight)
        t0 = asyncio.get_running_loop().time()
        async with sem:
            t1 = asyncio.get_running_loop().time()
            await asyncio.sleep(service)
            served = asyncio.get_running_loop().time() - t1
        pace.release()
        pace.answered(asyncio.get_running_loop().time() - t0, served, ticket)

    await asyncio.gather(*(one() for _ in range(n)))
    return seen


def test_it_starts_slow_and_doubles_while_nothing_queues() -> None:
    clock = Clock()
    p = Pace(16, clock=clock)
    assert p.limit == FIRST
    for _ in range(FIRST):
        clock.now += 1
        p.answered(1.0, 1.0, Ticket(1, 0))
    assert p.limit == 2 * FIRST
    for _ in range(2 * FIRST):
        clock.now += 1
        p.answered(1.0, 1.0, Ticket(1, 0))
    assert p.limit == 16 and summary_of(p.snapshot()) is None  # it kept --defan-concurrency


def test_a_queueing_server_brings_the_limit_down_to_what_it_serves() -> None:
    p = Pace(16)
    asyncio.run(serve(p, slots=2, n=80))
    snap = p.snapshot()
    assert snap["limit"] == 2, snap
    assert "queued" in str(summary_of(snap))
    assert p.requeued == 0


def test_one_server_one_reason_whichever_comes_first() -> None:
    # Issue 36 (9): the same server was "queued the requests beyond that" in one run and "its 2
    # slots (GET /props)" in the next, as the probe (now beside the first calls) answered before
    # or after the queue was measured.  Where the pace settles at the slots the server states,
    # those are the reason, in either order.
    measured_first = Pace(16)
    asyncio.run(serve(measured_first, slots=2, n=80))
    assert "queued" in str(summary_of(measured_first.snapshot()))
    measured_first.state(2, "the server's 2 slots (GET /props)")
    asyncio.run(serve(measured_first, slots=2, n=40))
    stated_first = Pace(16)
    stated_first.state(2, "the server's 2 slots (GET /props)")
    asyncio.run(serve(stated_first, slots=2, n=80))
    for p in (measured_first, stated_first):
        assert summary_of(p.snapshot()) == "concurrency 2 of 16: the server's 2 slots (GET /props)"


def test_the_limit_is_never_exceeded() -> None:
    p = Pace(6)
    seen = asyncio.run(serve(p, slots=3, n=60, service=0.01))
    assert max(seen) <= 6 and p.in_flight == 0


def test_timeouts_under_load_halve_the_limit_once_per_limit() -> None:
    p = Pace(16, processes=1)
    p.limit = 16
    tickets = [Ticket(16, 0) for _ in range(8)]
    assert all(p.timed_out(t) for t in tickets)
    assert p.limit == 8  # eight timeouts of requests sent under one limit: one halving
    assert p.timed_out(Ticket(8, 1)) and p.limit == 4
    assert not p.timed_out(Ticket(1, 2))  # alone with the server: a plain failure
    assert p.requeued == 9
    line = summary_of(p.snapshot())
    assert line is not None and "timed out while the server was busy" in line and "9 requests" in line


def test_within_the_stated_slots_a_timeout_is_a_slow_answer_not_a_queue() -> None:
    p = Pace(16)
    p.state(4, "the server's 4 slots (GET /props)")
    assert not p.timed_out(Ticket(4, 0))  # four at once on four slots: nothing waited
    assert p.limit == 4 and p.requeued == 0
    assert summary_of(p.snapshot()) == "concurrency 4 of 16: the server's 4 slots (GET /props)"


def test_after_a_decrease_it_holds_then_probes_up_by_one() -> None:
    clock = Clock()
    p = Pace(8, clock=clock)
    p.timed_out(Ticket(4, 0))  # 4 -> 2
    assert p.limit == 2
    for _ in range(HOLD * 4):
        clock.now += 1
        p.answered(1.0, 1.0, Ticket(1, p._epoch))
    assert p.limit == 3


def test_what_the_server_states_is_the_ceiling_shared_by_the_processes() -> None:
    p = Pace(16, processes=2)
    p.state(4, "the server's 4 slots (GET /props)")
    assert p.limit == 2 and p.ceiling == 2
    assert "shared by 2 processes" in str(summary_of(p.snapshot()))
    fixed = Pace(16, adaptive=False)
    fixed.state(4, "x")
    assert fixed.limit == 16 and summary_of(fixed.snapshot()) is None


def test_the_processes_of_a_run_are_summed() -> None:
    a, b = Pace(8), Pace(8)
    a.state(2, "s")
    b.state(2, "s")
    both = combined([a.snapshot(), b.snapshot()])
    assert both["start"] == 16 and both["limit"] == 4 and both["processes"] == 2
    assert summary_of(both) == "concurrency 4 of 16 (8 in each of 2 processes): s"
    assert combined([]) == {}


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 64), st.lists(st.tuples(st.sampled_from(["answer", "timeout", "state"]),
                                              st.floats(0.01, 50), st.floats(0.01, 50), st.integers(1, 64)),
                                    max_size=80))
def test_the_limit_stays_between_one_and_the_ceiling(ceiling: int, events: list) -> None:
    clock = Clock()
    p = Pace(ceiling, clock=clock)
    for kind, a, b, n in events:
        clock.now += a
        if kind == "answer":
            p.answered(a, b, Ticket(n, p._epoch))
        elif kind == "timeout":
            p.timed_out(Ticket(n, p._epoch))
        else:
            p.state(n, "s")
        assert 1 <= p.limit <= max(1, ceiling)
        assert p.lowest <= p.limit or p.lowest >= 1


# -- real sessions against a server of fixed capacity ------------------------------------------

ROWS = [{"question": f"How many moons does planet {i} have?", "answer": str(i % 7), "type": "numeric",
         "domain": "toy", "group": f"g{i // 3}"} for i in range(40)]
ANSWERS = {r["question"]: r["answer"] for r in ROWS}


@pytest.fixture
def toy(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("DEFAN_PROGRESS_SECONDS", "60")
    for var in ("CI", "BUILD_NUMBER", "GITHUB_STEP_SUMMARY"):
        monkeypatch.delenv(var, raising=False)
    pytester.path.joinpath("toy.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    return pytester


def run(toy: pytest.Pytester, srv: OpenAIServer, *extra: str) -> pytest.RunResult:
    return toy.runpytest_subprocess(
        "--defan-model=openai/smollm2", f"--defan-model-arg=api_base={srv.base_url}", "--defan-dataset=toy.jsonl",
        "--defan-spacy-model=none", "--defan-concurrency=16", "--defan-timeout=1.2", "--defan-cache=off",
        "-p", "no:cacheprovider", "-p", "no:randomly", *extra)


def retries(result: pytest.RunResult) -> int:
    m = re.search(r"40 prompts: 40 answered by the model, .*; (\d+) retr", result.stdout.str())
    assert m, result.stdout.lines[-15:]
    return int(m.group(1))


@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_the_slots_a_llama_server_states_are_the_concurrency(toy: pytest.Pytester, workers: list) -> None:
    with OpenAIServer(answers=ANSWERS, slots=2, latency=0.1, props=True) as srv:
        result = run(toy, srv, *workers)
        assert srv.peak_in_flight <= 2
    assert result.ret == 0, result.stdout.lines[-15:]
    assert retries(result) == 0
    # Under xdist too one process (the controller) asks: the server's slots are its own.
    result.stdout.fnmatch_lines(["concurrency 2 of 16: the server's 2 slots (GET /props)"])


def test_a_queueing_server_settles_near_its_slots_where_a_fixed_pace_retries(toy: pytest.Pytester) -> None:
    with OpenAIServer(answers=ANSWERS, slots=2, latency=0.2, timings=True) as srv:
        fixed = run(toy, srv, "--defan-pace=fixed")
        srv.reset()
        paced = run(toy, srv)
    assert retries(fixed) > 5, fixed.stdout.lines[-15:]  # queued requests timed out and were asked again
    assert paced.ret == 0 and retries(paced) == 0, paced.stdout.lines[-15:]
    m = re.search(r"concurrency (\d) of 16: the server queued the requests beyond that", paced.stdout.str())
    assert m and 1 <= int(m.group(1)) <= 3, paced.stdout.lines[-15:]  # near the 2 slots (a busy machine adds latency)
    assert "asked again" not in paced.stdout.str()


def test_without_the_servers_timings_timeouts_under_load_lower_the_pace(toy: pytest.Pytester) -> None:
    with OpenAIServer(answers=ANSWERS, slots=2, latency=0.2) as srv:
        result = run(toy, srv)
    out = result.stdout.str()
    assert result.ret == 0, result.stdout.lines[-15:]
    assert "0 failed" in out
    result.stdout.re_match_lines([r"concurrency \d+ of 16: requests timed out while the server was busy; \d+ requests? "
                                  r"that timed out while others were in flight asked again"])


# -- issue 35 point 3: a hosted API's rate limits ----------------------------------------------------

def test_reset_headers_and_hostile_values() -> None:
    assert [seconds_of(v) for v in ("1s", "6m0s", "1h2m3s", "20ms", "0.5", "-1", "nan", "1e400", "soon", "1s2", "")] == \
        [1.0, 360.0, 3723.0, 0.02, 0.5, None, None, None, None, None, None]
    r = RateLimits()
    r.heard({"x-ratelimit-limit-requests": "-5", "x-ratelimit-limit-tokens": "nan", "x-ratelimit-remaining-requests": "x"})
    assert not r.active and r.summary() is None  # nothing believable: no limit


def test_the_servers_limits_are_kept_and_a_429_holds_every_send_until_retry_after() -> None:
    clock = Clock()
    r = RateLimits(clock=clock)
    r.heard({"x-ratelimit-limit-requests": "60", "x-ratelimit-remaining-requests": "0"})
    assert r.buckets["requests"].wait(1, clock.now) == pytest.approx(1 / 0.97)  # one a second, a little under
    clock.now = 100.0
    r.refused_now(7.5, {"x-ratelimit-reset-requests": "2s"})
    assert r.blocked_until == 107.5 and r.refused == 1  # Retry-After wins over the reset
    r.refused_now(None, {"x-ratelimit-reset-tokens": "3s", "x-ratelimit-reset-requests": "1s"})
    assert r.blocked_until == 107.5  # never shortened
    clock.now = 200.0
    r.refused_now(None, {"x-ratelimit-reset-tokens": "30s", "x-ratelimit-reset-requests": "1s"})
    assert r.blocked_until == 230.0  # no Retry-After: the later reset
    assert "2 requests refused" not in (r.summary() or "") and "3 requests refused (429)" in (r.summary() or "")


def test_the_tokens_a_minute_the_user_states_are_kept() -> None:
    clock = Clock()
    r = RateLimits(tpm=600, clock=clock)  # 10 tokens a second
    r.heard(None, tokens=50)  # answers cost about 50 tokens
    b = r.buckets["tokens"]
    assert b.wait(50, clock.now) == 0  # a second's worth at first ...
    b.level -= 50
    assert b.wait(50, clock.now) == pytest.approx(5.0)  # ... then 50 tokens every five seconds
    assert r.summary() == "rate limits: 600 tokens a minute (--defan-rpm, --defan-tpm)"


def test_a_429_halves_the_concurrency_once_per_limit() -> None:
    p = Pace(16)
    p.state(16, "test")
    t = Ticket(16, 0)
    p.refused(t)
    p.refused(t)
    assert p.limit == 8 and "429" in (p.summary() or "")
    fixed = Pace(16, adaptive=False)
    fixed.refused(Ticket(16, 0))
    assert fixed.limit == 16  # --defan-pace=fixed keeps --defan-concurrency


WORDY = {r["question"]: "The planet has " + " ".join(["moons"] * 40) + " " + r["answer"] for r in ROWS}


@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_a_rate_limited_server_loses_nothing_and_its_limits_are_kept(toy: pytest.Pytester, workers: list) -> None:
    # 1,200 requests and 36,000 tokens a minute, two seconds' worth a burst (40 and 1,200): the
    # tokens bind (about 55 a request).  Before: 429s retried at a fixed concurrency with backoff.
    with OpenAIServer(answers=WORDY, rpm=1200, tpm=36000, window=2, latency=0.02) as srv:
        result = toy.runpytest_subprocess(
            "--defan-model=openai/test-model", f"--defan-model-arg=api_base={srv.base_url}", "--defan-dataset=toy.jsonl",
            "--defan-spacy-model=none", "--defan-concurrency=32", "--defan-cache=off", "--defan-retries=2",
            "--defan-report=r.json", "-p", "no:cacheprovider", "-p", "no:randomly", *workers)
        refused = srv._core.refused
    assert result.ret in (0, 1), result.stdout.lines[-15:]
    result.stdout.fnmatch_lines(["*40 prompts: 40 answered by the model, 0 from the cache, 0 not sent, 0 failed*",
                                 "rate limits: 1,200 requests and 36,000 tokens a minute (the server says so: x-ratelimit headers)*"])
    assert srv.total == 40 and refused <= 4  # nothing lost, hardly a refusal
    rates = json.loads((toy.path / "r.json").read_text())["meta"]["calls"]["pace"]["rates"]
    assert rates["from_server"] and rates["tokens"] == 36000 and rates["refused"] == refused


def test_tpm_is_checked_early(toy: pytest.Pytester) -> None:
    result = toy.runpytest_subprocess("--defan-model=openai/test-model", "--defan-dataset=toy.jsonl",
                                      "--defan-tpm=lots", "--defan-rpm=-1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--defan-tpm: 'lots' is not a number*"])
    assert "--defan-rpm: -1 must be above 0" in result.stderr.str() and "Traceback" not in result.stderr.str()
