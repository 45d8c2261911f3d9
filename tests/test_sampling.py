"""Stratified sampling (:mod:`defan_pytest.dataset.sampling`): the three ways to state a sample,
whole groups, every domain given the groups its gate needs, nested samples of one seed, and the
refusal of a per-domain sample too small to judge a domain."""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Sequence, Tuple

import pytest
from hypothesis import given, settings, strategies as st

from defan_pytest.dataset import sampling


@dataclass(frozen=True)
class FakeRow:
    """What sampling reads of a row: its id, domain and paraphrase group."""

    id: str
    domain: str
    group_key: str


def _rows(spec: Sequence[Tuple[str, int, int]]) -> List[FakeRow]:
    return [FakeRow(f"{d}-q{g:04d}-p{p:02d}", d, f"{d}-q{g:04d}")
            for d, groups, size in spec for g in range(groups) for p in range(size)]


#: The public split's shape in small: one big domain, two small ones, math's groups of one.
SPEC = [("qs_ranking", 200, 15), ("sports", 30, 15), ("conference_venue", 20, 15), ("math", 900, 1)]


@pytest.mark.parametrize("text, expected", [
    ("500", sampling.Sample(count=500)), ("10%", sampling.Sample(percent=10.0)),
    ("20g", sampling.Sample(groups=20)), (" 7 G ", sampling.Sample(groups=7)),
])
def test_parse(text: str, expected: sampling.Sample) -> None:
    assert sampling.parse_sample(text) == expected
    assert sampling.parse_sample(str(expected)) == expected


@pytest.mark.parametrize("text", ["0", "0g", "g", "20 groups", "-1g", "101%", "1.5g"])
def test_parse_refuses(text: str) -> None:
    with pytest.raises(sampling.SampleError):
        sampling.parse_sample(text)


def test_groups_per_domain() -> None:
    rows = _rows(SPEC)
    picked = sampling.select(rows, sampling.parse_sample("20g"), 3)
    for domain, _groups, size in SPEC:
        ids = [r for r in picked if r.domain == domain]
        assert len({r.group_key for r in ids}) == 20 and len(ids) == 20 * size


def test_a_count_gives_every_domain_its_min_samples() -> None:
    rows = _rows(SPEC)
    need = {"qs_ranking": 5, "sports": 5, "conference_venue": 5, "math": 5}
    sample = sampling.parse_sample("600")
    plain = sampling.planned_groups(rows, sample)
    assert plain["sports"] < 5 and plain["conference_venue"] < 5  # proportional: too few to judge
    raised = sampling.planned_groups(rows, sample, need)
    assert all(raised[d] >= 5 for d in need)
    assert {d: raised[d] for d in raised if plain[d] >= 5} == {d: plain[d] for d in plain if plain[d] >= 5}
    picked = sampling.select(rows, sample, 0, need)
    assert {d: len({r.group_key for r in picked if r.domain == d}) for d in need} == raised


def test_the_floor_never_asks_more_groups_than_a_domain_has() -> None:
    rows = _rows([("sports", 3, 15), ("nobel", 50, 15)])
    assert sampling.planned_groups(rows, sampling.parse_sample("10%"), {"sports": 5, "nobel": 5}) == {
        "sports": 3, "nobel": 5,
    }


def test_a_per_domain_sample_below_min_samples_is_refused_with_the_smallest_that_works() -> None:
    rows = _rows(SPEC)
    problems = sampling.too_small(rows, sampling.parse_sample("3g"), {"sports": 5, "conference_venue": 8})
    assert len(problems) == 1
    assert "conference_venue: 8" in problems[0] and "sports: 5" in problems[0]
    assert "--defan-sample=8g" in problems[0]
    assert sampling.too_small(rows, sampling.parse_sample("8g"), {"sports": 5, "conference_venue": 8}) == []
    # A count or a share is raised instead; a domain that has fewer groups than it needs is the
    # data's shape, not the sample's fault.
    assert sampling.too_small(rows, sampling.parse_sample("100"), {"sports": 5}) == []
    assert sampling.too_small(_rows([("sports", 3, 15)]), sampling.parse_sample("2g"), {"sports": 5}) == []


@settings(max_examples=40, deadline=None)
@given(small=st.integers(1, 60), extra=st.integers(0, 60), seed=st.integers(0, 10**6),
       kind=st.sampled_from(["g", "count", "%"]))
def test_a_smaller_sample_of_one_seed_is_part_of_a_larger_one(small: int, extra: int, seed: int, kind: str) -> None:
    # A pull request's sample pairs with every prompt of it in the baseline's larger sample.
    rows = _rows(SPEC)

    def sample(n: int) -> sampling.Sample:
        if kind == "g":
            return sampling.Sample(groups=n)
        if kind == "%":
            return sampling.Sample(percent=min(100.0, float(n)))
        return sampling.Sample(count=n * 20)

    a = {r.id for r in sampling.select(rows, sample(small), seed, {"sports": 5})}
    b = {r.id for r in sampling.select(rows, sample(small + extra), seed, {"sports": 5})}
    assert a <= b


def test_whole_groups_in_dataset_order_and_seeded() -> None:
    rows = _rows(SPEC)
    a = sampling.select(rows, sampling.parse_sample("900"), 1)
    assert a == [r for r in rows if r in set(a)]
    groups = {r.group_key for r in a}
    assert all(r in a for r in rows if r.group_key in groups)
    assert a == sampling.select(rows, sampling.parse_sample("900"), 1)
    assert a != sampling.select(rows, sampling.parse_sample("900"), 2)


@pytest.mark.parametrize("text, expected", [
    ("2", sampling.Repeat(2)), (" 20 ", sampling.Repeat(20)), ("3:200", sampling.Repeat(3, 200)),
    ("5 : 1", sampling.Repeat(5, 1)),
])
def test_parse_repeat(text: str, expected: sampling.Repeat) -> None:
    assert sampling.parse_repeat(text) == expected
    assert sampling.parse_repeat(str(expected)) == expected


@pytest.mark.parametrize("text", ["0", "1", "21", "3:0", "3:", ":3", "x", "3:y", "-2", "2.5", "3:10%"])
def test_parse_repeat_refuses_naming_what_is_allowed(text: str) -> None:
    with pytest.raises(sampling.SampleError, match=r"use K \(every selected prompt asked K times\) or K:N .* with K "
                                                    r"from 2 to 20 and N at least 1, e.g. 3 or 3:200"):
        sampling.parse_repeat(text)


def test_repeated_rows_are_every_row_or_a_stratified_sample_of_whole_groups() -> None:
    rows = _rows(SPEC)
    assert sampling.repeated(rows, None) == []
    assert sampling.repeated(rows, sampling.Repeat(3)) == rows
    assert sampling.repeated(rows, sampling.Repeat(3, 10**6)) == rows
    picked = sampling.repeated(rows, sampling.Repeat(3, 300), seed=4)
    assert picked == sampling.select(rows, sampling.Sample(count=300), 4)  # the same sampler, whole groups
    assert {r.domain for r in picked} == {d for d, _, _ in SPEC}
    assert 250 <= len(picked) <= 350
    assert sampling.repeated(rows, sampling.Repeat(3, 300), seed=4) == picked  # every xdist worker the same


@pytest.mark.parametrize("asked, said", [
    # Two prompts: one whole group of each domain (15, 15, 15 and math's 1).
    ("2", "--defan-sample=2: 46 prompts (+44): whole paraphrase groups in proportion to the domains, and at least "
          "one group of each domain (4 raised to one: conference_venue, math, qs_ranking, sports)"),
    ("600", "--defan-sample=600: 611 prompts (+11): whole paraphrase groups in proportion to the domains"),
    ("99999", "--defan-sample=99999: every one of the selection's 4,650 prompts (-95,349)"),
    ("10%", None),  # a share of each domain's groups: taken as asked
])
def test_a_count_that_takes_another_number_of_prompts_is_said_in_the_header(asked: str, said: str | None) -> None:
    from defan_pytest.gates.thresholds import Thresholds
    from defan_pytest.run.selection import Selected, sample
    from defan_pytest.settings import Settings

    rows = _rows(SPEC)
    out = Selected(rows=list(rows))
    found: List[str] = []
    sample(Settings.from_values({"model": "m", "sample": asked}), out, Thresholds.empty(), found)
    assert found == [] and out.header == ([said] if said else [])
    if said and "every one" not in said:
        assert said.split(": ")[1].startswith(f"{len(out.rows)} prompts")
