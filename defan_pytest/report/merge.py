"""Merging the reports of the shards of one run (``--defan-shard=I/N``) back into one run.

:func:`combine` checks that a set of shard reports is one whole run (same model, data set,
selection, scorer and ``--defan-decide``; every shard from 1 to N exactly once; no prompt in two
of them; no unsharded report among them; each shard holding as many prompts as its metadata says
it ran, and its own share of the selection) and gives the run's rows, metadata and usage, from which
``defan merge`` computes the figures and verdicts an unsharded run gives.  Every problem is
found at once and named by file.  (Which rows a shard runs is :mod:`defan_pytest.dataset.shards`.)
Nothing here imports pytest.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from defan_pytest.dataset.shards import Shard, ShardError, assign, domain_key, natural_key, parse_shard
from defan_pytest.metrics.repeats import add_up
from defan_pytest.records import Calls, Merged, Report, ReportMeta, ScoredRecord

__all__ = ["Combined", "combine"]

#: A shard's report: (file name, report, which shard it is).
_Shard = Tuple[str, Report, Shard]


@dataclass(frozen=True)
class Combined:
    """The run that a complete set of shard reports makes: its rows (in the order the unsharded
    run lists them: domains in the report's order, groups in natural order, each group's rows as
    its shard listed them), its metadata, the files in shard order, the number of shards, how the
    level gate decided (``--defan-decide``) and the usage added up (``None``: no shard has one)."""

    rows: Tuple[ScoredRecord, ...]
    meta: ReportMeta
    files: Tuple[str, ...]
    count: int
    decide: str
    usage: Optional[Dict[str, Any]]


def _sum_into(total: Dict[str, Any], part: Mapping[str, Any]) -> None:
    """Add numeric leaves of ``part`` into ``total`` (nested dicts added key by key)."""
    for key, value in part.items():
        if isinstance(value, bool) or value is None:
            total.setdefault(key, value)
        elif isinstance(value, (int, float)):
            prev = total.get(key)
            total[key] = (prev if isinstance(prev, (int, float)) and not isinstance(prev, bool) else 0) + value
        elif isinstance(value, Mapping):
            sub = total.setdefault(key, {})
            if isinstance(sub, dict):
                _sum_into(sub, value)
        else:
            total.setdefault(key, value)


def _shards_of(reports: Sequence[Tuple[str, Report]]) -> List[_Shard]:
    """Each report with the shard it says it is; :class:`ShardError` when one is not a shard."""
    problems: List[str] = []
    sharded: List[_Shard] = []
    unsharded: List[str] = []
    for name, report in reports:
        text = report.meta.selection.shard
        if text is None:
            unsharded.append(name)
            continue
        try:
            sharded.append((name, report, parse_shard(str(text))))
        except ShardError as exc:
            problems.append(f"{name}: meta.selection.shard {exc}")
    if unsharded:
        verb = " is" if len(unsharded) == 1 else " are"
        if sharded:
            problems.append(
                "a mix of sharded and unsharded reports: " + ", ".join(unsharded) + verb
                + " not a shard (no --defan-shard), " + ", ".join(f"{n} is shard {s}" for n, _r, s in sharded)
            )
        else:
            problems.append(
                ", ".join(unsharded) + verb
                + " not a shard (run without --defan-shard): only the reports of --defan-shard=I/N runs are merged"
            )
    if problems:
        raise ShardError(problems=problems)
    return sharded


def _split_problems(sharded: Sequence[_Shard]) -> List[str]:
    """One split (the same N everywhere), every shard of it exactly once."""
    counts = sorted({s.count for _n, _r, s in sharded})
    if len(counts) > 1:
        return ["shards of different splits: " + ", ".join(f"{n} is shard {s}" for n, _r, s in sharded)]
    problems: List[str] = []
    count = counts[0]
    seen: Dict[int, str] = {}
    for name, _r, s in sharded:
        if s.index in seen:
            problems.append(f"shard {s} given twice: {seen[s.index]} and {name}")
        else:
            seen[s.index] = name
    missing = [i for i in range(1, count + 1) if i not in seen]
    if missing:
        given = ", ".join(f"{seen[i]} is {i}/{count}" for i in sorted(seen))
        problems.append(
            f"missing shard{'s' if len(missing) > 1 else ''} "
            + ", ".join(f"{i}/{count}" for i in missing) + f" (given: {given})"
        )
    return problems


def _identity(meta: ReportMeta) -> Dict[str, Tuple[Any, str]]:
    """What must be the same in every shard of one run: (value compared, how it is said)."""
    data, sel, scorer = meta.dataset, meta.selection, meta.scorer
    scorer_text = f"rules {scorer.rules}, " + (
        f"spaCy {scorer.pipeline} {scorer.version or ''}".rstrip() if scorer.ner else "no spaCy"
    )
    return {
        "model": (meta.model, meta.model.describe() if meta.model is not None else "no model"),
        "data set": ((data.identity, data.sha256), data.describe()),
        "selection": (
            (tuple(sel.domains), sel.sample, sel.seed),
            f"domains {','.join(sel.domains) or '-'}, sample {sel.sample or 'all'}, seed {sel.seed}",
        ),
        "scorer": (scorer.key, scorer_text),
    }


def _decide(report: Report) -> str:
    return str((report.thresholds or {}).get("decide") or "point")


def _run_problems(sharded: Sequence[_Shard]) -> List[str]:
    """The shards are of one run: the same identity and decision, no prompt in two of them."""
    problems: List[str] = []
    first_name, first, _s = sharded[0]
    ident = _identity(first.meta)
    for name, report, _s in sharded[1:]:
        other = _identity(report.meta)
        for what, (value, text) in ident.items():
            if other[what][0] != value:
                problems.append(
                    f"shards of different runs: {first_name} and {name} differ in {what} ({text}; {other[what][1]})"
                )
    if len({_decide(r) for _n, r, _s in sharded}) > 1:
        problems.append(
            "shards of different runs: --defan-decide differs ("
            + ", ".join(f"{n}: {_decide(r)}" for n, r, _s in sharded) + ")"
        )
    owner: Dict[str, str] = {}
    for name, report, _s in sharded:
        for row in report.rows:
            if row.id in owner and owner[row.id] != name:
                problems.append(f"prompt {row.id} is in two shards: {owner[row.id]} and {name}")
                break
            owner[row.id] = name
    return problems


def _count_problems(sharded: Sequence[_Shard]) -> List[str]:
    """Each shard holds what its metadata says it ran: as many rows as ``ran``, no more than it
    ``selected``, and all it selected unless it says it was ``narrowed``."""
    problems: List[str] = []
    for name, report, s in sharded:
        sel, held = report.meta.selection, len(report.rows)
        if held != sel.ran:
            problems.append(f"{name} (shard {s}): holds {held:,} prompts, its metadata says it ran {sel.ran:,}")
        elif sel.ran > sel.selected:
            problems.append(f"{name} (shard {s}): ran {sel.ran:,} prompts of the {sel.selected:,} it selected")
        elif sel.ran < sel.selected and not sel.narrowed and not _stopped_early(report, sel.ran):
            problems.append(
                f"{name} (shard {s}): ran {sel.ran:,} of the {sel.selected:,} prompts it selected, yet does not say "
                "it ran part of them (narrowed)"
            )
    return problems


def _stopped_early(report: Report, ran: int) -> bool:
    """Whether a shard of ``--defan-sequential`` asked the ``ran`` prompts it holds and stopped:
    its verdict was settled without the others (not a narrowed shard)."""
    block = report.meta.extra.get("sequential")
    return isinstance(block, Mapping) and block.get("asked") == ran


def _sequential(metas: Sequence[ReportMeta]) -> Dict[str, Any]:
    """The shards' ``sequential`` blocks as the whole run's: what they asked of how many, what
    that saved, the scopes still open in any; nothing when no shard stopped early."""
    blocks = [m.extra.get("sequential") for m in metas]
    found = [b for b in blocks if isinstance(b, Mapping)]
    if not found:
        return {}
    saved: Dict[str, Any] = {}
    for b in found:
        _sum_into(saved, {k: v for k, v in (b.get("saved") or {}).items() if isinstance(v, (int, float))})
    return {"sequential": {
        "asked": sum(int(b.get("asked") or 0) for b in found), "total": sum(int(b.get("total") or 0) for b in found),
        "batches": max(int(b.get("batches") or 0) for b in found), "settled": all(bool(b.get("settled")) for b in found),
        "stopped": "settled" if all(b.get("settled") for b in found) else "sample exhausted",
        "open": sorted({str(o) for b in found for o in (b.get("open") or ())}), "saved": saved,
    }}


def _share_problems(sharded: Sequence[_Shard]) -> List[str]:
    """Each shard holds its own share of the run's selection (:func:`defan_pytest.dataset.shards.assign`
    of every shard's rows), and the shares add up to the selection.  Told only when no shard
    ran part of its selection: a narrowed shard's rows are not its whole share."""
    if any(r.meta.selection.narrowed or (r.meta.selection.ran < r.meta.selection.selected
                                         and _stopped_early(r, r.meta.selection.ran)) for _n, r, _s in sharded):
        return []  # (a shard of --defan-sequential holds the prefix of its share it asked)
    problems: List[str] = []
    rows = [row for _n, report, _s in sharded for row in report.rows]
    owner = assign(rows, sharded[0][2].count)
    for name, report, s in sharded:
        strays = [row.id for row in report.rows if owner[row.group] != s.index - 1]
        if strays:
            problems.append(
                f"{name} (shard {s}): {len(strays):,} of its prompts are not in its share of the run's selection "
                f"(first: {strays[0]}); a shard is missing prompts, or holds another's"
            )
    return problems


def _rows_in_run_order(sharded: Sequence[_Shard]) -> Tuple[ScoredRecord, ...]:
    positioned = [
        ((domain_key(row.domain), natural_key(row.group), k, pos), row)
        for k, (_name, report, _s) in enumerate(sharded)
        for pos, row in enumerate(report.rows)
    ]
    positioned.sort(key=lambda t: t[0])
    return tuple(row for _key, row in positioned)


def _merged_meta(sharded: Sequence[_Shard]) -> ReportMeta:
    """The first shard's metadata with the whole run's counts: selected and ran summed, calls
    and durations (machine time) summed, ``longest_shard`` (the wall time of a parallel matrix),
    the agreement of ``--defan-repeat`` added up, and what was merged."""
    metas = [r.meta for _n, r, _s in sharded]
    selection = dataclasses.replace(
        metas[0].selection, selected=sum(m.selection.selected for m in metas), ran=sum(m.selection.ran for m in metas),
        narrowed=any(m.selection.narrowed for m in metas), shard=None,
    )
    calls: Dict[str, Any] = {}
    durations: Dict[str, Any] = {}
    for m in metas:
        _sum_into(calls, m.calls.to_json())
        _sum_into(durations, {k: v for k, v in m.durations.items() if isinstance(v, (int, float))})
    summed: Dict[str, Optional[float]] = {k: round(float(v), 3) for k, v in durations.items()}
    totals = [m.durations.get("total") for m in metas]
    summed["longest_shard"] = max((float(t) for t in totals if isinstance(t, (int, float))), default=None)
    merged = Merged(shards=sharded[0][2].count, files=tuple(n for n, _r, _s in sharded),
                    created=tuple(m.created for m in metas))
    return dataclasses.replace(
        metas[0], selection=selection, calls=Calls.from_json(calls), durations=summed, merged=merged,
        repeat=add_up([m.repeat for m in metas]),
        extra={**{k: v for k, v in metas[0].extra.items() if k != "sequential"}, **_sequential(metas)},
    )


def _usage(reports: Sequence[Report]) -> Optional[Dict[str, Any]]:
    """The shards' ``usage`` added up (numbers summed key by key), or None when none has one."""
    parts = [r.usage for r in reports if r.usage is not None]
    if not parts:
        return None
    total: Dict[str, Any] = {}
    for part in parts:
        _sum_into(total, part)
    return total


def combine(reports: Sequence[Tuple[str, Report]]) -> Combined:
    """Check that ``reports`` (``(file name, loaded report)``) are the shards of one run, all of
    them once, and combine them.  Raises :class:`~defan_pytest.dataset.shards.ShardError`
    listing every problem, naming the files."""
    if not reports:
        raise ShardError("no report to merge")
    sharded = _shards_of(reports)
    problems = _split_problems(sharded) + _run_problems(sharded)
    if not problems:
        # Each shard against itself and its share, once the set is known to be one whole split.
        problems = _count_problems(sharded) or _share_problems(sharded)
    if problems:
        raise ShardError(problems=problems)
    sharded.sort(key=lambda t: t[2].index)
    meta, usage = _merged_meta(sharded), _usage([r for _n, r in reports])  # usage in the order given
    where = _not_finite({"meta.calls": meta.calls.to_json(), "meta.durations": meta.durations, "usage": usage or {}})
    if where is not None:
        raise ShardError(f"the shards' {where} add up to more than a number can hold; nothing was merged")
    return Combined(
        rows=_rows_in_run_order(sharded), meta=meta, files=tuple(n for n, _r, _s in sharded),
        count=sharded[0][2].count, decide=_decide(sharded[0][1]), usage=usage,
    )


def _not_finite(value: Any, where: str = "") -> Optional[str]:
    """The dotted place of the first sum that overflowed to infinity in ``value``, or ``None``."""
    if isinstance(value, float) and not math.isfinite(value):
        return where
    if isinstance(value, Mapping):
        for key, item in value.items():
            found = _not_finite(item, f"{where}.{key}" if where else str(key))
            if found is not None:
                return found
    return None
