"""The regression gate's test against no change (defan_pytest.stats.flips) and the fixes of issue
33 at their cause: the overall interval through the figures' own path, RC paired over the same
paraphrases, defan compare's exit when nothing was judged (tests/test_cli.py)."""
from __future__ import annotations

import math
from fractions import Fraction
from itertools import product

import numpy as np
from statistics import NormalDist

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from defan_pytest.gates.paired import compare
from defan_pytest.metrics.summary import summarize
from defan_pytest.stats.flips import GroupChange, PowerPart, against_noise, catchable_rise, combine


def _exact(values: list[Fraction], net: Fraction) -> float:
    """P(sum of +-|v| >= net) by listing every sign pattern."""
    hits = sum(1 for signs in product((1, -1), repeat=len(values))
               if sum(s * abs(v) for s, v in zip(signs, values)) >= net)
    return hits / 2 ** len(values)


def test_mcnemar_exact_for_answers_asked_once() -> None:
    # The pull-request case: 90 worse / 15 better flips, six whole groups and one.
    groups = [GroupChange((1,) * 15)] * 6 + [GroupChange((-1,) * 15)] + [GroupChange((0,) * 15)] * 193
    test = against_noise(groups)
    assert test is not None and test.method == "sign test" and test.noise == "answers"
    assert test.p_value == pytest.approx(sum(math.comb(105, k) for k in range(90, 106)) / 2 ** 105)
    assert (test.net, test.pairs) == (75.0, 3000)
    # The same flips with the paraphrase group the unit: 6 of 7 groups one way, p = 8/128.
    by_question = against_noise(groups, "question")
    assert by_question is not None and by_question.method == "sign-flip" and by_question.p_value == pytest.approx(8 / 128)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.sampled_from([-1, -Fraction(2, 3), -Fraction(1, 3), 0, Fraction(1, 3), Fraction(2, 3), 1]),
                         min_size=1, max_size=3), min_size=1, max_size=5))
def test_the_sign_flip_tail_is_exact(groups: list[list[Fraction]]) -> None:
    # Over groups (noise shared by a question): the tail is the share of sign patterns of the
    # groups' net changes at least as large as the one seen.
    changes = [GroupChange(tuple(Fraction(d) for d in g)) for g in groups]
    test = against_noise(changes, "question")
    assert test is not None
    nets = [sum((Fraction(d) for d in g), Fraction(0)) for g in groups]
    assert test.p_value == pytest.approx(_exact([n for n in nets if n != 0], sum(nets, Fraction(0))))


def test_a_measured_noise_is_never_taken_below_the_flips_own() -> None:
    # Repeats that happened to agree measure no noise; the test then takes the flips' own squares
    # (each flip one answer's worth), so one flip is no proof. A measured noise above them is used
    # with its degrees of freedom (Student's t).
    measured = [GroupChange((1, 0, 0), 0.0, 2.0), GroupChange((0, 0, 0), 0.0, 2.0)]
    test = against_noise(measured)
    assert test is not None and test.noise == "repeats" and test.method == "normal"
    assert test.p_value == pytest.approx(1 - NormalDist().cdf(1.0))
    wide = against_noise([GroupChange((1, 1, 0), 4.0, 2.0)])
    assert wide is not None and wide.method == "t" and wide.variance == 4.0
    assert wide.p_value > 1 - NormalDist().cdf(1.0)  # t on 2 df has the heavier tail
    better = against_noise([GroupChange((-1,), 0.0)])
    assert better is not None and better.p_value > 0.5
    with pytest.raises(ValueError, match="noise must be one of"):
        against_noise(measured, "prompt")
    assert against_noise([]) is None


def test_the_mean_of_domains_combines_their_tests() -> None:
    one = against_noise([GroupChange((1,) * 10)])
    two = against_noise([GroupChange((0,) * 10)])
    assert one is not None and two is not None
    assert combine([(1.0, one)]) is one
    both = combine([(0.5 / 10, one), (0.5 / 10, two)])
    assert both is not None and both.method == "normal" and both.net == pytest.approx(0.5)
    assert both.p_value == pytest.approx(1 - 0.5 * (1 + math.erf((0.5 / math.sqrt(10 * 0.05 ** 2)) / math.sqrt(2))))


def test_the_smallest_catchable_rise_falls_with_the_sample_and_rises_with_noise() -> None:
    level = 0.05 / 26
    small = catchable_rise([PowerPart(1 / 420, 420, 0.0, 0.3)], level, 0.02)
    large = catchable_rise([PowerPart(1 / 9795, 9795, 0.0, 0.3)], level, 0.02)
    noisy = catchable_rise([PowerPart(1 / 420, 420, 0.1, 0.3)], level, 0.02)
    assert small is not None and large is not None and noisy is not None
    assert 0.02 < large < small < noisy
    # A handful of answers cannot show anything at this level.
    assert catchable_rise([PowerPart(1 / 5, 5, 0.0, 0.3)], level, 0.02) is None


def _records(domain: str, groups: int, wrong: np.ndarray, errors: np.ndarray | None = None) -> list[dict]:
    out = []
    for g in range(groups):
        for i in range(wrong.shape[1]):
            err = bool(errors[g, i]) if errors is not None else False
            out.append({"id": f"{domain}-q{g:04d}-p{i:02d}", "domain": domain, "group": f"{domain}-q{g:04d}",
                        "type": "numeric", "claim": None if err else ("2" if wrong[g, i] else "1"),
                        "aligned": None if err else True, "correct": None if err else not bool(wrong[g, i]),
                        "error": "TimeoutError" if err else None})
    return out


def test_the_overall_interval_the_report_shows_covers_at_one_to_three_groups_a_domain() -> None:
    # Issue 33: the figure lost its per-group units on its way to the mean of domains, which
    # then read the domains' clipped intervals (coverage 0.25-0.89 at one group a domain). Through
    # summarize, the figures' own path (the plugin's, defan gate's), 8 domains of 15 answers.
    rng = np.random.default_rng(33)
    mus = (0.05, 0.1, 0.2, 0.3, 0.5, 0.6, 0.8, 0.95)
    for groups in (1, 2, 3):
        hits = 0
        for _ in range(120):
            records = []
            for d, mu in enumerate(mus):
                rates = rng.beta(mu * (1 / 0.3 - 1), (1 - mu) * (1 / 0.3 - 1), size=groups)
                records += _records(f"d{d}", groups, rng.random((groups, 15)) < rates[:, None])
            lo, hi = summarize(records)["overall"]["mean"]["fch_ci"]
            hits += lo <= sum(mus) / len(mus) <= hi
        assert hits / 120 >= 0.94, (groups, hits)


def test_rc_pairs_the_paraphrases_answered_in_both_runs() -> None:
    # Issue 33: the same answers with call errors in the baseline only. Each run's own answered
    # paraphrases made the baseline look more consistent (fewer answers agree more easily): an
    # RC change of -0.023 for the same model. Over the paraphrases answered in both: none.
    rng = np.random.default_rng(5)
    wrong = rng.random((60, 15)) < 0.3
    old = _records("nobel", 60, wrong, rng.random((60, 15)) < 0.10)
    new = _records("nobel", 60, wrong)
    rc = compare(old, new).scopes["nobel"]["rc"]
    assert rc.change == 0.0 and not rc.regressed
