"""The prompts of a run: the data set's rows, the stratified sample (every domain with the groups
its gate needs) and this shard's share, checked before any call (part of :mod:`defan_pytest.run.plan`)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from defan_pytest import dataset
from defan_pytest.dataset import sampling, shards
from defan_pytest.errors import problems_of
from defan_pytest.settings import Settings

__all__ = ["Selected", "load", "min_groups", "sample"]


@dataclass
class Selected:
    rows: List[Any] = field(default_factory=list)
    user_domains: List[str] = field(default_factory=list)
    domains: Tuple[str, ...] = ()
    shard: Optional[str] = None
    gate_skipped: Optional[str] = None
    header: List[str] = field(default_factory=list)
    repeated: List[str] = field(default_factory=list)  # ids of the rows --defan-repeat asks again
    order: List[str] = field(default_factory=list)  # the selected groups in the seed's order (--defan-sequential)


def load(s: Settings, found: List[str], notes: List[str]) -> Selected:
    """The data set's rows (all of them: :func:`sample` selects) and the user's own domains."""
    out = Selected()
    loaded: Sequence[Any] = []
    # A bad --defan-dataset or --defan-domain is already a problem: loading the default in its
    # place (the public split, all of it, perhaps downloaded) would be wasted, or wrong.
    if not {"dataset", "domain"} & s.invalid:
        try:
            loaded = dataset.load_dataset(s.dataset, s.domains, root=s.root)
            notes.extend(loaded.notes)
            # A user's own set: its domains may have thresholds too.
            out.user_domains = sorted(d for d in loaded.source_domains if d not in dataset.DOMAINS)
        except dataset.DatasetError as exc:
            found.extend(problems_of(exc))
    out.rows = list(loaded)
    return out


def min_groups(limits: Any, domains: Sequence[str]) -> Dict[str, int]:
    """Each domain's ``min_samples`` (paraphrase groups its gate needs), where one is set."""
    out: Dict[str, int] = {}
    for d in domains:
        need = limits.for_domain(d).min_samples
        if need:
            out[d] = int(need)
    return out


def sample(s: Settings, out: Selected, limits: Any, found: List[str]) -> None:
    """The sample of the loaded rows (each domain with the groups its gate needs), this
    shard's share of it and the prompts ``--defan-repeat`` asks again."""
    loaded = out.rows
    need = min_groups(limits, sorted({r.domain for r in loaded}))
    short = sampling.too_small(loaded, s.sample, need)
    found.extend(short)
    out.rows = sampling.select(loaded, s.sample, s.seed, need) if loaded else []
    if s.sample is not None and loaded and not short:
        out.header.extend(_counted(loaded, s.sample, s.seed))
        out.header.extend(_raised(loaded, out.rows, s.sample, s.seed, need))
    # --defan-shard: this job's share of the selection (whole groups); the report names the
    # whole selection's domains, so that every shard of one run says the same.
    out.domains = tuple(sorted({r.domain for r in out.rows}))
    if s.shard is not None and out.rows:
        out.shard = str(s.shard)
        groups = len({r.group_key for r in out.rows})
        out.rows = shards.select(out.rows, s.shard)
        if not out.rows:
            found.append(
                f"--defan-shard {s.shard}: this shard has no paraphrase group (the selection has {groups}); "
                f"use at most {groups} shards"
            )
        if not s.gate_narrowed:
            out.gate_skipped = (
                f"shard {s.shard} ran part of the selection: its gates are skipped; 'defan merge' judges "
                "the reports of all the shards together (--defan-gate-narrowed judges this shard anyway)"
            )
    # --defan-sequential asks the groups in the seed's order (each domain's a prefix of it).
    kept = {r.group_key for r in out.rows}
    out.order = [g for groups in sampling.group_order(loaded, s.seed).values() for g in groups if g in kept]
    # --defan-repeat: the prompts of this selection asked again (a pure function of the rows
    # and the seed, so every xdist worker asks the same).
    out.repeated = [r.id for r in sampling.repeated(out.rows, s.repeat, s.seed)]


def _counted(rows: Sequence[Any], sample: Any, seed: int) -> List[str]:
    """The note that a count of prompts (``--defan-sample=N``) took another number: whole
    paraphrase groups in proportion to the domains, at least one of each domain (before the
    groups ``min_samples`` adds, which :func:`_raised` says)."""
    if sample.count is None:
        return []
    taken = len(sampling.select(rows, sample, seed))
    if taken == sample.count:
        return []
    if taken == len(rows) and sample.count > taken:
        return [f"--defan-sample={sample}: every one of the selection's {taken:,} prompts ({taken - sample.count:+,})"]
    low = sampling.floored(rows, sample)
    why = "whole paraphrase groups in proportion to the domains"
    if low:
        why += f", and at least one group of each domain ({len(low)} raised to one: {', '.join(low)})"
    return [f"--defan-sample={sample}: {taken:,} prompts ({taken - sample.count:+,}): {why}"]


def _raised(rows: Sequence[Any], selected: Sequence[Any], sample: Any, seed: int,
            need: Mapping[str, int]) -> List[str]:
    """The note that a sample (``selected`` of ``rows``) gave some domains more groups than it
    asked, so that their gate can judge them (``min_samples``)."""
    asked = sampling.planned_groups(rows, sample)
    given = sampling.planned_groups(rows, sample, need)
    raised = [d for d in sorted(given) if given[d] > asked[d]]
    if not raised:
        return []
    # Groups differ in size (15 paraphrases, or 1 in math): count the prompts themselves.
    extra = len(selected) - len(sampling.select(rows, sample, seed))
    listed = ", ".join(f"{d} {asked[d]} -> {given[d]}" for d in raised)
    return [
        f"--defan-sample={sample}: {listed} paraphrase groups, the min_samples their gate needs "
        f"({extra:+,} prompts)"
    ]
