"""Tokens, latency and cost: the pure arithmetic of ``defan_pytest.calls.usage``, ``.estimate``,
``.prices`` and ``.budget``, the usage the cache keeps with each answer, and ``--defan-budget`` in
the pool against the loopback server."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from defan_pytest.calls import budget, estimate, prices, usage
from defan_pytest.cache.store import DB_NAME, ResponseCache, identity_json, uncached_in
from defan_pytest.cache.folder import check_folder
from defan_pytest.calls.backends import make_caller
from defan_pytest.calls.budget import BUDGET_ERROR, Budget
from defan_pytest.calls.pool import CallPool
from defan_pytest.calls.protocol import Prompt
from defan_pytest.calls.models import LitellmModel, price_problems, resolve
from defan_pytest.calls.prices import Price
from defan_pytest.calls.protocol import BadAnswer, EmptyAnswer
from openai_server import OpenAIServer

KEY = "sk-test-SECRET-0123456789abcdef"


def test_percentiles_and_dollars() -> None:
    assert usage.percentile([], 50) is None
    assert usage.percentile([3.0], 95) == 3.0
    values = [i / 100 for i in range(1, 101)]
    assert usage.percentile(values, 50) == pytest.approx(0.505)
    assert usage.percentile(values, 95) == pytest.approx(0.9505)
    assert [prices.format_usd(x) for x in (0, 1.5e-9, 0.004, 12.3456, 98765.4)] == [
        "$0", "$1.50e-09", "$0.004", "$12.3456", "$98,765.40"]


def test_a_price_comes_from_the_table_of_the_model_or_litellms_price_map() -> None:
    table = {"gpt-4o-mini": {"input_cost_per_token": 1.5e-7, "output_cost_per_token": 6e-7},
             "azure/gpt-4o": {"input_cost_per_token": 2.5e-6, "output_cost_per_token": 1e-5}}
    mini = prices.find_price("openai/gpt-4o-mini", table=table)
    assert mini is not None and (mini.input, mini.output, mini.source) == (1.5e-7, 6e-7, "litellm's price table")
    assert prices.find_price("azure/gpt-4o", table=table).input == 2.5e-6  # the full string first
    own = prices.find_price("openai/gpt-4o-mini", price_in=0.5, price_out=2, table=table, where="[models.mini]")
    assert (own.input, own.output, own.source) == (0.5e-6, 2e-6, "[models.mini]")  # the table of the model wins
    assert prices.find_price("openai/local-llama", table=table) is None
    assert prices.find_price("openai/local-llama", price_in=1, table={}).output == 0.0
    # litellm's bundled table, read without importing litellm
    real = prices.find_price("openai/gpt-4o-mini")
    assert real is not None and real.input > 0 and real.output > real.input


def test_prices_in_a_model_table_are_ours_not_call_parameters() -> None:
    tables = {"mini": {"model": "openai/gpt-4o-mini", "price_in": 0.15, "price_out": 0.6, "max_tokens": 8}}
    m = resolve("mini", tables, {})
    assert (m.price_in, m.price_out) == (0.15, 0.6)
    assert "price_in" not in m.params and m.params["max_tokens"] == 8
    assert resolve("mini", tables, {"price_out": "0.7"}).price_out == 0.7  # --defan-model-arg wins
    assert price_problems("mini", {"mini": {"price_in": "cheap", "price_out": -1}}, {}) == [
        "[models.mini] price_in: 'cheap' is not a price (USD per million tokens, 0 or more)",
        "[models.mini] price_out: -1 is not a price (USD per million tokens, 0 or more)",
    ]


def test_the_estimate_before_a_run() -> None:
    assert estimate.estimate_prompt_tokens("x" * 40) == 10 + 3 + 4
    assert estimate.estimate_prompt_tokens("x" * 40, system_prompt="y" * 20) == 15 + 3 + 8
    assert estimate.typical_completion(None) == 100 and estimate.typical_completion(16) == 16
    e = estimate.estimate(["x" * 40] * 3, 7, price=Price(1e-6, 2e-6, "[models.m]"), path="openai", model="openai/m")
    assert (e.prompts, e.cached, e.to_send, e.prompt_tokens, e.completion_tokens) == (10, 7, 3, 51, 300)
    line = estimate.format_estimate(e)
    assert line == ("defan estimate: 3 prompts to send (7 from the cache) via the OpenAI protocol: ~51 prompt + ~300 "
                    "completion tokens, ~$0.000651 at $1.0000 in, $2.0000 out per million tokens ([models.m])")
    unpriced = estimate.format_estimate(estimate.estimate(["q"], 0, path="litellm", model="openai/m"), "[models.x]")
    assert "cost unknown (no price for openai/m: set price_in and price_out, USD per million tokens, in [models.x])" in unpriced
    assert estimate.format_estimate(estimate.estimate([], 5, path="openai")).endswith("nothing to pay")
    assert estimate.format_estimate(estimate.estimate(["q"], 0, path="callable")) == (
        "defan estimate: 1 prompts to send (0 from the cache) via the registered callable")


def records() -> list:
    fresh = [{"answered_by": "model", "prompt_tokens": 10, "completion_tokens": 5, "latency": 0.05 + i / 1000,
              "domain": "nobel"} for i in range(20)]
    cached = [{"answered_by": "cache", "prompt_tokens": 10, "completion_tokens": 5, "latency": 9.0,
               "domain": "math"}] * 4
    errors = [{"answered_by": "model", "error": "InternalServerError (HTTP 500): boom"},
              {"answered_by": "model", "error": BUDGET_ERROR + ": not sent"}]
    return fresh + cached + errors


def test_the_usage_block_of_a_run() -> None:
    u = usage.summarize(records(), price=Price(1e-6, 2e-6, "[models.m]"), path="openai", budget=0.001)
    assert (u["prompts"], u["answered"], u["cached"], u["errors"]) == (26, 20, 4, 2)
    assert u["tokens"] == {"prompt": 200, "completion": 100, "total": 300, "answers": 20, "unknown": 0}
    assert u["cached_tokens"]["total"] == 60  # kept with the cached answers, counted apart
    assert u["latency"]["p50"] == pytest.approx(0.0595) and u["latency"]["p95"] == pytest.approx(0.06805)
    assert u["cost"]["spent"] == pytest.approx(0.0004) and u["cost"]["cached"] == pytest.approx(0.00008)
    assert u["budget"] == {"limit": 0.001, "spent": 0.0004, "unsent": 1, "complete": False, "charged": 0}
    assert u["price"] == {"price_in": 1.0, "price_out": 2.0, "source": "[models.m]"}
    # the same figures per domain (for the per-domain table)
    assert set(u["domains"]) == {"nobel", "math"}
    assert u["domains"]["nobel"]["tokens"]["total"] == 300 and u["domains"]["nobel"]["cost"]["spent"] == 0.0004
    assert u["domains"]["math"]["cached"] == 4 and u["domains"]["math"]["latency"]["n"] == 0
    lines = usage.format_summary(u)
    assert lines[0] == ("usage via the OpenAI protocol: 200 prompt + 100 completion tokens in 20 answers; latency "
                        "p50 60 ms, p95 68 ms; cost $0.0004; 4 cached answers saved $0.00008")
    # Then a line per domain with answers from the model (the per-domain usage table).
    assert lines[1].split() == ["domain", "answered", "tokens", "p50", "ms", "p95", "ms", "cost"]
    assert lines[2].split()[:3] == ["nobel", "20", "300"] and lines[2].endswith("$0.0004")
    assert all(len(line) <= 80 for line in lines[1:3])
    assert lines[3].startswith("budget $0.001 reached ($0.0004 spent): 1 prompts not sent, the run is incomplete")
    callable_run = usage.summarize([{"answered_by": "model", "latency": 0.2}], path="callable")
    assert callable_run["cost"] is None and callable_run["tokens"]["unknown"] == 1
    assert usage.format_summary(callable_run) == [
        "usage via the registered callable: 1 answers, tokens not reported; latency p50 200 ms, p95 200 ms"]


def test_the_budget_books_in_flight_requests_and_follows_what_comes_back() -> None:
    b = Budget(0.01, Price(1e-6, 1e-5, "t"), completion_tokens=100)
    verdict, first = b.decide("x" * 400)
    assert verdict == "send" and first == pytest.approx((107 + 100 * 10) * 1e-6)
    assert b.inflight == pytest.approx(first)
    # Nothing has come back: what an answer costs is a guess, so one request at a time.
    assert b.decide("x" * 400) == ("wait", 0.0)
    b.settle(first, 107, 10)  # the answers are shorter than assumed
    assert b.spent == pytest.approx(207e-6) and b.inflight == 0
    assert b.estimate("x" * 400) == pytest.approx((107 + 10 * 10) * 1e-6)  # learnt: the largest answer so far
    booked = []
    while True:
        verdict, cost = b.decide("x" * 400)
        if verdict != "send":
            break
        booked.append(cost)
    # only the requests in flight stand in the way: wait for them, do not give up
    assert verdict == "wait" and not b.stopped and b.spent + b.inflight <= 0.01
    for cost in booked:
        b.settle(cost, 107, 10)
    while b.decide("x" * 400)[0] == "send":
        b.settle(b.inflight, 107, 10)
    assert b.stopped and b.refused == 1 and b.spent <= 0.01  # the spending alone leaves no room
    assert b.decide("x")[0] == "refuse" and b.refused == 2  # once stopped, nothing more is sent
    assert b.message().startswith("BudgetExceeded: not sent: --defan-budget $0.0100 would be passed ($0.00")
    assert "its completion taken as the largest answer so far); every answer is kept in the cache" in b.message()


def test_the_budget_books_the_largest_answer_seen_and_values_the_requests_in_flight_again() -> None:
    b = Budget(1.0, Price(0.0, 1e-3, "t"))  # completions only: $0.001 a token
    verdict, probe = b.decide("q")
    b.settle(probe, 1, 10)
    booked = [b.decide("q")[1] for _ in range(3)]
    assert booked == [pytest.approx(0.01)] * 3  # three requests of 10 tokens in flight
    b.settle(booked.pop(), 1, 300)  # a long answer: the two others may be as long
    assert b.estimate("q") == pytest.approx(0.3) and b.completion() == (300, "the largest answer so far")
    # spent 0.31, two in flight worth 0.3 each now (not the 0.01 they were booked at): no room
    assert b.decide("q") == ("wait", 0.0)
    shorter = Budget(1.0, Price(0.0, 1e-3, "t"))
    for n in (300, 10, 10):  # a mean would forget the long answer; the largest does not
        v, cost = shorter.decide("q")
        shorter.settle(cost, 1, n)
    assert shorter.estimate("q") == pytest.approx(0.3)


def test_max_tokens_bounds_each_booking_and_the_budget_holds() -> None:
    b = Budget(0.05, Price(1e-6, 1e-5, "t"), max_tokens=1000)
    verdict, cost = b.decide("x" * 400)
    assert verdict == "send" and cost == pytest.approx((107 + 1000 * 10) * 1e-6)
    assert b.completion() == (1000, "max_tokens=1000")
    booked = [cost]
    while (d := b.decide("x" * 400))[0] == "send":  # a cap is known: the window fills at once
        booked.append(d[1])
    assert len(booked) == 4 and d == ("wait", 0.0)
    for cost in booked:
        b.settle(cost, 100, 1000)  # every answer as long as max_tokens allows
    while (d := b.decide("x" * 400))[0] == "send":
        b.settle(d[1], 100, 1000)
    assert d[0] == "refuse" and b.spent <= 0.05  # never past the budget
    assert "its completion taken as max_tokens=1000" in b.message()
    assert estimate.completion_cap({"max_completion_tokens": 64, "max_tokens": 8}) == 64
    assert estimate.completion_cap({"max_tokens": 0}) is None and estimate.completion_cap({"max_tokens": True}) is None


def test_an_answer_that_cannot_be_read_is_charged_at_its_booking() -> None:
    def chained(outer: Exception, inner: Exception) -> Exception:
        try:
            try:
                raise inner
            except Exception as exc:
                raise outer from exc
        except Exception as exc:
            return exc

    unreadable = chained(RuntimeError("InternalServerError (HTTP 500): OpenAIException"),
                         json.JSONDecodeError("Unterminated string", "{", 1))
    assert budget.billed(unreadable) and budget.billed(EmptyAnswer("no content"))
    assert budget.billed(BadAnswer("returned None")) and budget.billed(type("E", (Exception,), {"status_code": 200})())
    refused = type("E", (Exception,), {"status_code": 500})()
    assert not budget.billed(refused) and not budget.billed(TimeoutError()) and not budget.billed(ConnectionError())
    b = Budget(0.001, Price(1e-6, 1e-5, "t"))
    verdict, cost = b.decide("x" * 400)  # a guess above the budget: one request tells
    assert verdict == "send" and cost > 0.001
    b.charge(cost)
    assert b.spent == cost and b.decide("x" * 400)[0] == "refuse"
    assert "spent with 1 answer that could not be read charged to --defan-budget at its estimate;" in b.message()
    off = Budget(0.0001, Price(1e-6, 1e-5, "t"), cache="off")
    off.charge(off.decide("q")[1])
    assert off.decide("q")[0] == "refuse" and off.message().endswith(
        "--defan-cache=off keeps no answer: a run with a larger budget asks every prompt again")
    assert budget.not_sent(b.message()) == "budget" and budget.not_sent(budget.STOPPED_ERROR) == "stopped"
    # The usage summary says why the budget was reached with nothing reported spent.
    failed = f"InternalServerError: malformed response from the server (2 {budget.CHARGED.join(['answers that could not be read ', ''])})"
    u = usage.summarize([{"answered_by": "model", "error": failed}, {"answered_by": "model", "error": b.message()}],
                        price=Price(1e-6, 1e-5, "t"), budget=0.001)
    assert u["budget"]["charged"] == 2 and u["budget"]["unsent"] == 1
    assert usage.format_summary(u)[-1].startswith(
        "budget $0.001 reached ($0 spent on the answers received; 2 answers that could not be read charged to "
        "--defan-budget at its estimate): 1 prompts not sent")
    assert budget.not_sent("TimeoutError: slow") is None and budget.not_sent(None) is None


def test_a_cache_of_an_earlier_version_gains_the_usage_columns(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / DB_NAME)
    conn.executescript(  # the schema before usage was kept
        "CREATE TABLE answers (key TEXT PRIMARY KEY, model TEXT NOT NULL, prompt TEXT NOT NULL, answer TEXT NOT NULL,"
        " created REAL NOT NULL, note TEXT);"
        "CREATE TABLE claims (run TEXT NOT NULL, key TEXT NOT NULL, owner TEXT NOT NULL, status TEXT NOT NULL,"
        " error TEXT, attempts INTEGER, PRIMARY KEY (run, key));"
    )
    identity = {"kind": "litellm", "model": "openai/m"}
    old = ResponseCache.__new__(ResponseCache)
    import hashlib

    old._prefix = hashlib.sha256(identity_json(identity).encode()).digest()
    conn.execute("INSERT INTO answers VALUES (?, ?, 'q', 'kept', 0, NULL)", (old.key("q"), identity_json(identity)))
    conn.commit()
    conn.close()
    assert check_folder(tmp_path) is None
    c = ResponseCache(tmp_path, identity)
    assert tuple(c.lookup_entry("q")) == ("kept", None, None, None, None, None)  # reused; usage, finish unknown
    c.put("n", "new", prompt_tokens=12, completion_tokens=3, latency=0.25)
    assert tuple(c.lookup_entry("n"))[:5] == ("new", None, 12, 3, 0.25)
    c.close()
    assert uncached_in(tmp_path, identity, ["q", "n", "other"]) == ["other"]
    assert uncached_in(tmp_path, identity, [f"p{i}" for i in range(600)] + ["q"]) == [f"p{i}" for i in range(600)]
    assert uncached_in(tmp_path / "nowhere", identity, ["q"]) == ["q"]


PRICE = Price(1e-3, 2e-3, "[models.priced]")  # USD per token: dear, so that a few calls reach a budget


def priced_pool(srv: OpenAIServer, path: str, budget: float, store: ResponseCache, concurrency: int):
    model = LitellmModel("priced", "openai/test-model", {"api_base": srv.base_url, "api_key": KEY, "temperature": 0})
    caller = make_caller(model, timeout=10, path=path)
    return CallPool(caller, concurrency=concurrency, store=store, budget=Budget(budget, PRICE), retries=0)


@pytest.mark.parametrize("path", ["openai", "litellm"])
def test_a_budget_stops_within_one_concurrency_window_and_a_resume_asks_nothing_twice(tmp_path: Path, path: str) -> None:
    prompts = [f"question number {i} about the ranking" for i in range(120)]  # 6 words each
    answers = {p: f"rank {i} of the list" for i, p in enumerate(prompts)}  # 5 words each
    per_call = PRICE.cost(6, 5)  # 0.016
    concurrency = 8
    with OpenAIServer(answers=answers, latency=0.02) as srv:
        model = LitellmModel("priced", "openai/test-model", {"api_base": srv.base_url, "api_key": KEY})
        identity = make_caller(model, timeout=10, path=path).identity
        store = ResponseCache(tmp_path, identity, background=True)
        pool = priced_pool(srv, path, 0.5, store, concurrency)
        pool.start([Prompt(str(i), p) for i, p in enumerate(prompts)])
        assert pool.join(60)
        out = [pool.result(str(i)) for i in range(len(prompts))]
        pool.close()
        store.close()
        answered = [r for r in out if r.text is not None]
        unsent = [r for r in out if r.error is not None]
        spent = sum(PRICE.cost(r.prompt_tokens, r.completion_tokens) for r in answered)
        assert spent == pytest.approx(pool.budget.spent)
        assert spent <= 0.5 + concurrency * per_call  # stopped within one concurrency window
        assert spent >= 0.5 - concurrency * per_call - per_call  # ... and not long before it
        assert unsent and all(r.error.startswith("BudgetExceeded: not sent: --defan-budget $0.5000") for r in unsent)
        assert all(r.attempts == 0 for r in unsent) and srv.total == len(answered)  # the unsent were never sent
        assert ResponseCache(tmp_path, identity).count() == len(answered)  # every answer kept
        # resumed with a larger budget: only what was not sent is asked, nothing twice
        store = ResponseCache(tmp_path, identity, background=True)
        resumed = priced_pool(srv, path, 10.0, store, concurrency)
        resumed.start([Prompt(str(i), p) for i, p in enumerate(prompts)])
        assert resumed.join(60)
        again = [resumed.result(str(i)) for i in range(len(prompts))]
        resumed.close()
        store.close()
        assert all(r.text == answers[p] for r, p in zip(again, prompts))
        assert srv.counts == {p: 1 for p in prompts}
        assert sum(r.via == "cache" for r in again) == len(answered)


def test_a_budget_shared_between_processes_never_waits_for_another_process(tmp_path: Path) -> None:
    # The other process spent nearly all of it and shows a float residue in flight (or died with
    # a request booked): this one may probe once, waits only for its own request, then stops.
    other = ResponseCache(tmp_path, {}, run="r", shared=True, owner="gw1")
    here = ResponseCache(tmp_path, {}, run="r", shared=True, owner="gw0")
    other.spending_ledger().publish(0.299, 3e-18, 0, None)
    b = Budget(0.3, Price(1e-3, 2e-3, "t"), ledger=here.spending_ledger())
    verdict, booked = b.decide("x" * 40)
    assert verdict == "send" and other.spending_ledger().others() == (0.0, booked, 1, None)
    assert b.decide("x" * 40)[0] == "wait"  # for its own request: its settlement wakes it
    b.settle(booked, 7, 3)
    assert b.inflight == 0.0 and other.spending_ledger().others() == (pytest.approx(0.013), 0.0, 0, 3)
    assert b.decide("x" * 40)[0] == "refuse" and b.stopped
    assert "($0.3120 spent; the next request" in b.message()
    # The other's booking counts as spent; and the largest answer it saw is this one's estimate.
    other.spending_ledger().publish(0.0, 0.99, 1, 400)
    dead = Budget(1.0, Price(1e-3, 2e-3, "t"), ledger=here.spending_ledger())
    verdict, booked = dead.decide("x" * 40)
    assert verdict == "refuse" and dead.completion() == (400, "the largest answer so far")
    assert "$0.9900 booked for other processes' requests in flight" in dead.message()
    # Two requests in flight there, booked low: valued at this prompt's estimate each.
    other.spending_ledger().publish(0.0, 0.001, 2, 10)
    two = Budget(0.12, Price(1e-3, 2e-3, "t"), ledger=here.spending_ledger())
    assert two.decide("x" * 40) == ("send", pytest.approx(0.037))  # 2 x 0.037 + 0.037 <= 0.12 < 4 x 0.037
    assert two.decide("x" * 40) == ("wait", 0.0)


def test_the_estimate_counts_the_extra_asks_of_repeat() -> None:
    e = estimate.estimate(["x" * 40] * 30, 15, price=Price(1e-6, 2e-6, "[models.m]"), path="openai", repeats=30)
    assert (e.prompts, e.to_send, e.repeats, e.to_json()["repeats"]) == (45, 30, 30, 30)
    line = estimate.format_estimate(e)
    assert line.startswith("defan estimate: 30 prompts to send (15 from the cache; 30 of the 45 are the extra asks "
                           "of --defan-repeat) via the OpenAI protocol: ~510 prompt + ~3,000 completion tokens")
    assert "--defan-repeat" not in estimate.format_estimate(estimate.estimate(["q"], 0, path="openai"))
