"""Tests of defan_pytest.report.builder: the one builder of a report and its metadata."""
from __future__ import annotations

import dataclasses
from types import SimpleNamespace
from typing import Any

import defan_pytest
from defan_pytest.calls import models
from defan_pytest.calls.budget import BUDGET_ERROR, STOPPED_ERROR
from defan_pytest.metrics.summary import summarize
from defan_pytest.records import Calls, ScoredRecord, Selection
from defan_pytest.report import builder

DOMAIN_KEYS = {
    "n", "scored", "errors", "groups", "scored_groups", "rc_groups", "consistent_groups", "fch_count", "pmh_count",
    "fch", "fch_ci", "pmh", "pmh_ci", "rc", "rc_ci", "error_rate", "error_rate_ci", "cost", "cost_ci", "latency_p95",
    "latency_p95_ci",
}
MEAN_KEYS = {
    "domains", "rc_domains", "n", "scored", "errors", "groups", "scored_groups",
    "fch", "fch_ci", "pmh", "pmh_ci", "rc", "rc_ci", "error_rate", "error_rate_ci", "cost", "cost_ci", "latency_p95",
    "latency_p95_ci",
}


def _rec(i: int, **kw: Any) -> ScoredRecord:
    base: dict[str, Any] = dict(id=f"math-q{i // 3:04d}-p{i % 3:02d}", domain="math", group=f"math-q{i // 3:04d}",
                                type="numeric", claim="42", aligned=True, correct=i % 2 == 0, question="Q?", answer="42",
                                response="42", index=i, via="model", attempts=1)
    base.update(kw)
    return ScoredRecord(**base)


def _meta(**kw: Any) -> Any:
    return builder.build_meta(
        producer="defan score", model=None, dataset=builder.questions_meta("x.jsonl", []),
        scorer=builder.scorer_meta(None), selection=Selection(("math",), None, 0, 0, 0), calls=Calls(),
        durations={}, **kw,
    )


def test_every_report_has_one_shape() -> None:
    summary = {"domains": {}, "overall": {}}
    keys = ["schema", "schema_version", "meta", "thresholds", "gate_status", "gate", "regression", "domains", "overall",
            "rows"]
    assert list(builder.build_report([], summary, _meta()).to_json()) == keys
    with_usage = builder.build_report([], summary, _meta(), verdicts=[], usage={"tokens": 1}).to_json()
    assert list(with_usage) == [*keys[:-1], "usage", "rows"]


def test_the_figures_and_rows_of_a_report() -> None:
    rows = [_rec(i) for i in range(6)] + [_rec(6, claim=None, aligned=None, correct=None, error="HTTP 429: slow")]
    verdict = SimpleNamespace(scope="math", metric="fch", status="fail", value=0.5, limit=0.1, message="too many")
    report = builder.build_report(rows, summarize(rows), _meta(), verdicts=[verdict], gate_status="fail").to_json()
    assert [r["id"] for r in report["rows"]] == [r.id for r in rows]
    assert report["rows"][-1]["error_kind"] == "HTTP 429" and "index" not in report["rows"][0]
    assert set(report["domains"]["math"]) == DOMAIN_KEYS
    assert set(report["overall"]) == {"mean", "pooled"} and set(report["overall"]["mean"]) == MEAN_KEYS
    assert report["gate"] == [{"scope": "math", "metric": "fch", "status": "fail", "value": 0.5, "limit": 0.1,
                               "message": "too many"}]


def test_the_metadata_is_stated_once() -> None:
    meta = _meta(created="2030-01-01T00:00:00Z")
    assert meta.version == defan_pytest.__version__ and meta.created == "2030-01-01T00:00:00Z"
    again = builder.rejudged(meta, "defan gate")
    assert again.producer == "defan gate" and again.created == meta.created
    assert builder.rejudged(meta, "defan merge", created="later").created == "later"
    assert _meta().created.endswith("Z")


def test_call_counts_of_a_run_and_of_responses() -> None:
    rows = [
        _rec(0), _rec(1, via="cache", answered_by="cache"), _rec(2, via="peer", answered_by="gw1"),
        _rec(3, attempts=3), _rec(4, error="TimeoutError: slow", attempts=2), _rec(5, error="TimeoutError: again"),
        _rec(6, error=f"{BUDGET_ERROR}: not sent: --defan-budget $1 would be passed", attempts=0),
        _rec(7, via="peer", error=STOPPED_ERROR, attempts=0),
    ]
    # What became of each prompt, adding up to the prompts: answered by the model, from the
    # cache, not sent (the budget; the run stopped first), failed (sent, no answer).
    assert builder.call_counts(rows).to_json() == {
        "prompts": 8, "answered": 3, "cached": 1, "peer": 2, "retries": 3, "errors": 4,
        "error_kinds": {"TimeoutError": 2, "BudgetExceeded": 1, "NotSent": 1}, "not_sent": 2, "failed": 2,
        "cut": 0,
    }
    assert builder.call_counts(rows, asked=False).to_json() == {
        "prompts": 8, "errors": 4, "error_kinds": {"TimeoutError": 2, "BudgetExceeded": 1, "NotSent": 1}}
    assert builder.call_counts([]).to_json() == {"error_kinds": {}}


def test_a_responses_file_is_identified_by_its_questions_not_its_answers() -> None:
    rows = [_rec(i) for i in range(3)]
    other_answers = [dataclasses.replace(r, response="7", claim="7") for r in rows]
    meta = builder.questions_meta("a.jsonl", rows)
    assert meta == builder.questions_meta("a.jsonl", other_answers) and meta.identity.startswith("questions:")
    assert builder.questions_meta("a.jsonl", rows[:2]).identity != meta.identity


def test_the_model_is_described_without_a_secret() -> None:
    model = models.LitellmModel("gpt", "openai/gpt-4o-mini", {"api_key": "sk-secret123456789", "temperature": 0})
    meta = builder.model_meta(model)
    assert meta is not None and meta.kind == "litellm" and "sk-secret123456789" not in str(meta.to_json())
    assert list(meta.to_json()) == ["name", "kind", "model", "system_prompt", "version", "params"]
    assert builder.model_meta(object()) is None


def test_the_gate_status_word() -> None:
    def v(status: str) -> Any:
        return SimpleNamespace(status=status)

    assert builder.gate_status([v("pass"), v("fail")]) == "fail"
    assert builder.gate_status([v("insufficient")]) == "fail"
    assert builder.gate_status([v("pass")]) == "pass"
    assert builder.gate_status([]) == "not judged"
    assert builder.gate_status([v("fail")], skipped=True) == "skipped"


def test_a_custom_header_is_written_as_stars_never_hashed() -> None:
    """Issue 34 (11): a header that is not a known credential reached meta.model.params as an
    unsalted 64-bit sha256 prefix of its value (guessable for a short value); docs/secrets.md
    says header values are ***.  The cache identity still tells two values apart."""
    from defan_pytest.calls.redaction import public_identity

    params = {"temperature": 0, "extra_headers": {"X-Tenant": "acme"}, "headers": {"X-Org": "org-7"}}
    meta = builder.model_meta(models.LitellmModel("gpt", "openai/gpt-4o-mini", params))
    assert meta is not None
    written = meta.to_json()["params"]
    assert written["extra_headers"] == {"X-Tenant": "***"} and written["headers"] == {"X-Org": "***"}
    assert "sha256" not in str(meta.to_json())
    other = dict(params, extra_headers={"X-Tenant": "globex"})
    assert public_identity(params) != public_identity(other)
