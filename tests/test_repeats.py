"""The model's agreement with itself (``defan_pytest/metrics/repeats.py``) and the extra asks of
``--defan-repeat`` in a run (``defan_pytest/run/repeats.py``), without a session: the counts,
the shares and the flip rate per domain and overall, what is left out, the sentences, the asks
the pool gets and the usage records."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from defan_pytest.calls.protocol import Prompt, Response
from defan_pytest.dataset.sampling import Repeat
from defan_pytest.metrics.repeats import agreement, add_up, noise_sentence, normalise, summary_lines
from defan_pytest.run import repeats
from defan_pytest.scoring.scorer import Scorer

RIGHT = {"response": "Paris", "claim": "paris", "correct": True, "aligned": True, "error": None}
WRONG = {"response": "Lyon", "claim": "lyon", "correct": False, "aligned": True, "error": None}
NO_CLAIM = {"response": "I cannot say.", "claim": None, "correct": False, "aligned": False, "error": None}
FAILED = {"response": None, "claim": None, "correct": None, "aligned": None, "error": "TimeoutError: slow"}


def test_whitespace_alone_does_not_make_answers_differ() -> None:
    assert normalise("  Paris\n\t is  the capital ") == "Paris is the capital"
    assert normalise(None) == ""
    said = agreement([("geo", [RIGHT, {**RIGHT, "response": " Paris\n"}])], times=2)["overall"]
    assert (said["identical"], said["verdicts_agree"], said["flipped_pairs"]) == (1, 1, 0)
    assert agreement([("geo", [RIGHT, {**RIGHT, "response": "paris"}])], times=2)["overall"]["identical"] == 0


def test_the_flip_rate_counts_every_pair_of_asks() -> None:
    # 5 asks with 2 wrong: 2 x 3 = 6 of the 10 pairs differ; 5 right: none.
    fig = agreement([("geo", [RIGHT, WRONG, RIGHT, WRONG, RIGHT]), ("geo", [RIGHT] * 5)], times=5)["overall"]
    assert (fig["prompts"], fig["flipped_pairs"], fig["pairs"], fig["flip_rate"]) == (2, 6, 20, 0.3)
    assert (fig["verdicts_agree"], fig["verdicts_agree_share"], fig["identical_share"]) == (1, 0.5, 0.5)


def test_verdicts_agree_on_both_figures_bits() -> None:
    # No claim is wrong like a wrong claim, but misaligned too: the verdicts differ, FCH's does not.
    fig = agreement([("geo", [WRONG, NO_CLAIM])], times=2)["overall"]
    assert (fig["verdicts_agree"], fig["flipped_pairs"]) == (0, 0)


def test_per_domain_and_overall_pooled_over_prompts() -> None:
    fig = agreement([("a", [RIGHT, WRONG]), ("a", [RIGHT, RIGHT]), ("b", [WRONG, WRONG])], times=2, temperature=0.0)
    assert fig["times"] == 2 and fig["temperature"] == 0.0
    assert {d: (f["prompts"], f["flipped_pairs"], f["flip_rate"]) for d, f in fig["domains"].items()} == {
        "a": (2, 1, 0.5), "b": (1, 0, 0.0)}
    assert (fig["overall"]["prompts"], fig["overall"]["flipped_pairs"], fig["overall"]["pairs"]) == (3, 1, 3)


def test_a_prompt_with_an_errored_or_missing_ask_is_left_out_and_counted() -> None:
    fig = agreement([("a", [RIGHT, FAILED]), ("a", [RIGHT]), ("a", [RIGHT, RIGHT])], times=2)
    assert (fig["overall"]["prompts"], fig["overall"]["incomplete"]) == (1, 2)
    nothing = agreement([("a", [RIGHT, FAILED])], times=2)["overall"]
    assert (nothing["prompts"], nothing["flip_rate"], nothing["identical_share"]) == (0, None, None)
    assert noise_sentence(agreement([("a", [RIGHT, FAILED])], times=2)) is None


def test_the_noise_sentence_uses_the_scope_s_own_figure_where_it_has_one() -> None:
    fig = agreement([("a", [RIGHT, WRONG]), ("a", [RIGHT, RIGHT]), ("b", [WRONG, WRONG])], times=2, temperature=0)
    assert noise_sentence(fig) == ("the model's own verdict flip rate at temperature 0 is 33.3% (2 repeats of 3 "
                                   "prompts): changes below ~that are noise")
    assert "is 50.0% (2 repeats of 2 prompts)" in (noise_sentence(fig, "a") or "")
    assert "is 33.3% (2 repeats of 3 prompts)" in (noise_sentence(fig, "elsewhere") or "")
    untold = agreement([("a", [RIGHT, WRONG])], times=2)
    assert (noise_sentence(untold) or "").startswith("the model's own verdict flip rate is 100.0%")
    assert noise_sentence(None) is None and noise_sentence({}) is None


def test_the_summary_lines_show_domains_only_when_asked_or_when_verdicts_flipped() -> None:
    steady = agreement([("a", [RIGHT, RIGHT]), ("b", [WRONG, WRONG])], times=2)
    assert summary_lines(steady) == [
        "defan repeat: 2 asks of 2 prompts: answers identical 2 of 2 (100%), verdicts agree 2 of 2 (100%), "
        "FCH verdict flip rate 0.0% (0 of 2 pairs)"]
    assert len(summary_lines(steady, by_domain=True)) == 3
    flipped = agreement([("a", [RIGHT, WRONG]), ("b", [WRONG, WRONG]), ("b", [RIGHT, FAILED])], times=2)
    lines = summary_lines(flipped)
    assert lines[1] == "  (1 repeated prompts left out: an ask of theirs has no answer)"
    assert lines[2].startswith("  a  answers identical 0 of 1 (0%)") and lines[3].startswith("  b  answers identical 1")


ROWS = [SimpleNamespace(id=f"geo-q{i:04d}-p00", question=f"Capital {i}?", answer="Paris", type="city", domain="geo")
        for i in range(3)]


def test_the_pool_gets_each_row_then_the_extra_asks_keyed_apart() -> None:
    asks = repeats.asks(ROWS, {ROWS[0].id, ROWS[2].id}, Repeat(3))
    assert [(a.key, a.repeat) for a in asks] == [
        ("geo-q0000-p00", 0), ("geo-q0001-p00", 0), ("geo-q0002-p00", 0),
        ("geo-q0000-p00#repeat1", 1), ("geo-q0002-p00#repeat1", 1),
        ("geo-q0000-p00#repeat2", 2), ("geo-q0002-p00#repeat2", 2)]
    assert repeats.asks(ROWS, {ROWS[0].id}, None) == [Prompt(r.id, r.question) for r in ROWS]
    assert repeats.asks(ROWS, (), Repeat(3)) == [Prompt(r.id, r.question) for r in ROWS]


def test_the_run_s_own_ask_keeps_its_cache_text_and_each_repeat_has_its_own() -> None:
    own, second, third = Prompt("x", "Capital?"), Prompt("x#repeat1", "Capital?", 1), Prompt("x#repeat2", "Capital?", 2)
    assert own.stored == "Capital?"
    assert len({own.stored, second.stored, third.stored}) == 3
    assert second.text == "Capital?"  # what the model is sent is the prompt alone


def test_an_item_s_extra_asks_are_scored_as_plain_json() -> None:
    answers = {"geo-q0000-p00#repeat1": Response("Paris", prompt_tokens=5, completion_tokens=1, latency=0.1),
               "geo-q0000-p00#repeat2": Response(None, error="TimeoutError: slow")}
    scorer = Scorer(nlp=None)

    def score(row: SimpleNamespace, r: Response) -> object:
        return scorer.score(row.question, row.answer, row.type, r.text, error=r.error, domain=row.domain)

    out = repeats.scored(ROWS[0], 3, answers.__getitem__, score)
    assert [(a["repeat"], a["response"], a["correct"], a["error"]) for a in out] == [
        (1, "Paris", True, None), (2, None, None, "TimeoutError: slow")]
    assert out[0]["prompt_tokens"] == 5 and out[0]["answered_by"] == "model"


def test_the_controller_joins_records_and_repeats() -> None:
    records = [{**RIGHT, "id": "a1", "domain": "a"}, {**RIGHT, "id": "a2", "domain": "a"}]
    fig = repeats.figures(records, {"a1": [WRONG]}, 2, temperature=0.7)
    assert (fig["overall"]["prompts"], fig["overall"]["flipped_pairs"], fig["temperature"]) == (1, 1, 0.7)
    used = repeats.usage_records(records, {"a1": [{**WRONG, "prompt_tokens": 3}], "gone": [WRONG]})
    assert len(used) == 3 and used[-1]["domain"] == "a" and used[-1]["prompt_tokens"] == 3


@pytest.mark.parametrize("params, expected", [
    ({"temperature": 0}, 0.0), ({"temperature": 0.2}, 0.2), ({}, None), ({"temperature": "hot"}, None),
    ({"temperature": True}, None),
])
def test_the_temperature_is_the_model_s_when_its_parameters_set_one(params: dict, expected: object) -> None:
    assert repeats.temperature_of(SimpleNamespace(params=params)) == expected
    assert repeats.temperature_of(object()) is None


def test_the_shards_of_one_run_add_up() -> None:
    one = agreement([("a", [RIGHT, WRONG]), ("b", [RIGHT, RIGHT])], 2, temperature=0)
    two = agreement([("a", [RIGHT, RIGHT]), ("a", [WRONG, FAILED])], 2, temperature=0)
    whole = agreement([("a", [RIGHT, WRONG]), ("b", [RIGHT, RIGHT]), ("a", [RIGHT, RIGHT]), ("a", [WRONG, FAILED])],
                      2, temperature=0)
    assert add_up([one, None, two]) == whole
    assert add_up([None]) is None and add_up([]) is None
    assert add_up([one, agreement([("a", [RIGHT] * 3)], 3)]) is None  # asked a different number of times
    assert add_up([one, agreement([("a", [RIGHT] * 2)], 2, temperature=0.5)])["temperature"] is None  # type: ignore[index]
