"""The built-in metrics, as ``SCORING.md`` ("Per domain") defines them, and how two runs of each
are compared.

- **FCH** = responses not correct / responses scored;
- **PMH** = responses not aligned / responses scored;
- **RC** = consistent paraphrase groups / groups with at least two scored responses, a group's
  consistency decided over its scored (answered) paraphrases (``None`` for a domain without
  such groups, e.g. ``math``, whose groups are singletons);
- **error rate** = errored responses / responses asked;
- **cost** (dollars the run spent on its calls: answers from the cache cost nothing) and
  **latency p95** (seconds, the 95th percentile of the calls the model answered in this run):
  amounts, judged where ``thresholds.toml`` sets ``max_cost``, ``max_latency_p95`` or, in
  ``[regression]``, ``max_latency_p95_rise`` (``max_cost_rise``), as promptfoo's assertions.

An errored response (``error`` set: the model call failed) is never a hallucination: it is left
out of the FCH and PMH numerators *and* denominators and only counts towards the error rate;
RC leaves it out the same way: a group's consistency is that of its answered paraphrases (one
errored call does not drop the group; fewer than two answered ones do). A scored response whose ``correct`` (``aligned``) is ``None`` counts as not correct (not
aligned): "no claim is never correct", and an unknown alignment must not flatter a model.
What a response counts for is the verdict vocabulary's (:func:`defan_pytest.verdicts.outcome_of`),
so the figures, the regression gate's pairs and every verdict shown agree.

In the regression gate (:mod:`defan_pytest.gates.paired`) FCH and PMH pair the prompts scored in
both runs, the error rate every prompt asked in both, and RC the groups that count for RC in
both runs over the paraphrases answered in both (one pair a group). FCH, PMH and RC regress beyond 0.02 unless ``thresholds.toml``
says otherwise; the error rate is only judged where a tolerance is set (an outage is the level
gate's business).

:func:`register_built_ins` registers them, in the order FCH, PMH, RC, error rate, when
:mod:`defan_pytest.metrics` is imported.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from defan_pytest.calls.usage import percentile
from defan_pytest.metrics.groups import Figure, Group, PairedGroup, PairedValue, Share, errored, per_response, rounds
from defan_pytest.metrics.registry import ASKED, REGISTRY, Metric
from defan_pytest.metrics.summary import CONFIDENCE, cluster_rate, group_consistency
from defan_pytest.scoring.equivalence import group_consistent
from defan_pytest.stats.intervals import clopper_pearson
from defan_pytest.verdicts import outcome_of

__all__ = [
    "BUILT_INS",
    "COST",
    "LATENCY_P95",
    "DEFAULT_TOLERANCE",
    "ERROR_RATE",
    "FCH",
    "PMH",
    "RC",
    "consistency",
    "hallucinated",
    "misaligned",
    "register_built_ins",
]

#: The regression gate's tolerance of FCH, PMH and RC when ``thresholds.toml`` sets none.
DEFAULT_TOLERANCE = 0.02


def hallucinated(record: Mapping[str, Any]) -> bool:
    """FCH's event of a scored record: not correct (no claim, or an unknown verdict, included)."""
    return outcome_of(record).wrong


def misaligned(record: Mapping[str, Any]) -> bool:
    """PMH's event of a scored record: not aligned (an unknown alignment included)."""
    return outcome_of(record).misaligned


def consistency(answer_type: str, records: Sequence[Mapping[str, Any]], reduce: str = "mean") -> Share | None:
    """RC's event of one run's records of a group: whether the claims of its answered (scored)
    responses agree (1 or 0; round by round with ``--defan-repeat``, the share of rounds that
    agree or, ``reduce="all"``, whether all do), ``None`` when the group does not count for RC
    (fewer than two answered: an errored response is never scored, so it is left out rather
    than dropping the group)."""
    return group_consistency(answer_type, records, reduce)


def _fch(groups: Sequence[Group]) -> Figure:
    return cluster_rate([(g.not_correct, g.scored) for g in groups], events_key="fch_count")


def _pmh(groups: Sequence[Group]) -> Figure:
    return cluster_rate([(g.not_aligned, g.scored) for g in groups], events_key="pmh_count")


def _rc(groups: Sequence[Group]) -> Figure:
    # RC is already a per-group figure, and groups are independent: the count of consistent
    # groups is exactly binomial, so the exact (Clopper-Pearson) interval keeps its coverage at
    # every size, where Wilson's dips to 0.84-0.92 at 5-10 groups for some rates. (With
    # --defan-repeat a group's consistency is the share of its rounds that agree: the interval
    # is then the same at the summed shares, a little wide.)
    rc_groups = [g for g in groups if g.counts_for_rc and g.consistent is not None]
    if not rc_groups:
        return Figure(None, None)
    consistent = sum(g.consistent or 0 for g in rc_groups)
    rate = consistent / len(rc_groups)
    # One unit a group (consistent, 1): what the overall mean's stratified variance counts.
    units = tuple((g.consistent or 0, 1) for g in rc_groups)
    return Figure(float(rate), clopper_pearson(float(consistent), len(rc_groups), CONFIDENCE), units=units)


def _rc_pairs(group: PairedGroup) -> list[PairedValue]:
    # The group is the one pair, when it counts for RC in both runs, over the same paraphrases:
    # those answered in both (a paraphrase that errored in either run is left out of both, as
    # FCH and PMH leave it out: fewer answers agree more easily, so comparing each run's own
    # answered ones made a baseline with call errors look more consistent). RC's event is
    # "consistent", so higher is better; with --defan-repeat, round by round.
    both = group.scored_pairs
    old = [o for o, _ in both]
    new = [n for _, n in both]
    was = consistency(group.type, old, group.reduce)
    now = consistency(group.type, new, group.reduce)
    if was is None or now is None:
        return []
    return [PairedValue(was, now, _rounds_agree(group.type, old), _rounds_agree(group.type, new))]


def _rounds_agree(answer_type: str, records: Sequence[Mapping[str, Any]]) -> tuple[int | None, ...]:
    """Each repeat round's consistency (1, 0, or ``None`` for a round of fewer than two
    answers), when the group was asked more than once."""
    asked = rounds(records)
    if len(asked) < 2:
        return ()
    out: list[int | None] = []
    for answers in asked:
        claims = [a.get("claim") for a in answers if not errored(a)]
        out.append(int(bool(group_consistent(answer_type, claims))) if len(claims) > 1 else None)
    return tuple(out)


def _cost_of(record: Mapping[str, Any]) -> float | None:
    cost = record.get("cost")
    return float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) else None


def _latency_of(record: Mapping[str, Any]) -> float | None:
    # A call the model answered in this run: a cached answer's latency is an earlier run's.
    if errored(record) or record.get("answered_by") == "cache" or record.get("via") in ("cache", "peer"):
        return None
    latency = record.get("latency")
    return float(latency) if isinstance(latency, (int, float)) and not isinstance(latency, bool) else None


def _p95(values: Sequence[float]) -> float:
    return float(percentile(values, 95) or 0.0)


def _amount(metric_amount: Any, aggregate: Any) -> Any:
    def compute(groups: Sequence[Group]) -> Figure:
        values = [v for g in groups for r in g.records if (v := metric_amount(r)) is not None]
        return Figure(aggregate(values) if values else None)

    return compute


def _error_rate(groups: Sequence[Group]) -> Figure:
    # Over all responses asked, clustered too: a provider outage takes out a run of calls.
    return cluster_rate([(g.errored_asks, g.size) for g in groups])


FCH = Metric("fch", "FCH", False, _fch, publishes=("fch_count",),
             paired=per_response(hallucinated), default_tolerance=DEFAULT_TOLERANCE)
PMH = Metric("pmh", "PMH", False, _pmh, publishes=("pmh_count",),
             paired=per_response(misaligned), default_tolerance=DEFAULT_TOLERANCE)
RC = Metric("rc", "RC", True, _rc, count_key="rc_groups", count_label="groups",
            missing="no paraphrase groups", paired=_rc_pairs, default_tolerance=DEFAULT_TOLERANCE)
# The error rate is errors / responses asked, so both its n and its min_samples rule count the
# responses asked. No interval in the tables: it would push the gate table past ~110 columns,
# and the verdict message and the report carry it.
ERROR_RATE = Metric("error_rate", "error rate", False, _error_rate, count_key="n", denominator=ASKED,
                    show_interval=False, missing="no responses", column="err",
                    paired=per_response(errored, asked=True))

COST = Metric("cost", "cost", False, _amount(_cost_of, sum), count_key="n", denominator=ASKED, show_interval=False,
              missing="no price is known for the model", column="cost", unit="$", amount=_cost_of, aggregate=sum)
LATENCY_P95 = Metric("latency_p95", "latency p95", False, _amount(_latency_of, _p95), count_key="n",
                     denominator=ASKED, show_interval=False, column="p95",
                     missing="no call was answered by the model in this run (cached answers have no latency of theirs)",
                     unit="s", amount=_latency_of, aggregate=_p95, tail=0.95)

#: The built-in metrics, in the report's order.
BUILT_INS: tuple[Metric, ...] = (FCH, PMH, RC, ERROR_RATE, COST, LATENCY_P95)


def register_built_ins() -> None:
    """Register :data:`BUILT_INS` first, and mark them built in (they cannot be removed: the
    report format promises their keys)."""
    for metric in BUILT_INS:
        REGISTRY.register(metric)
    REGISTRY.seal_built_ins()
