"""Sharding a run across CI jobs, and merging the shards' reports back into one run.

``--defan-shard=I/N`` runs the I-th of N disjoint shares of the selected prompts (after
``--defan-domain`` and ``--defan-sample``), made of whole paraphrase groups (RC needs every
answer of a group in one report).  The share is a pure function of the selected rows: each
domain's group keys are put in natural order (``nobel-q0002`` before ``nobel-q0010``) and dealt
round-robin to the shards, each domain starting where the previous one stopped (domains in the
report's order).  So every shard gets the same number of groups give or take one, in every
domain and in all, the same selection always gives the same shards, and every xdist worker of a
shard computes the same share.

>>> rows = [{"domain": d, "group": f"{d}-q{g:04d}"} for d in ("nobel", "math") for g in range(3)]
>>> {k: v for k, v in sorted(assign(rows, 2).items())}
{'math-q0000': 1, 'math-q0001': 0, 'math-q0002': 1, 'nobel-q0000': 0, 'nobel-q0001': 1, 'nobel-q0002': 0}
>>> str(parse_shard("2/4")), parse_shard("2/4").index
('2/4', 2)

A shard's report says ``meta.selection.shard = "I/N"``, and its own level gate and regression
gate are skipped (it ran part of the selection).  :func:`combine` checks that a set of shard
reports is one whole run (same model, data set, selection and scorer; every shard from 1 to N
exactly once; no unsharded report among them) and gives the run's rows and metadata, from which
``defan merge`` computes the figures and verdicts an unsharded run gives.  Nothing here imports
pytest.
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Dict, List, Tuple

from defan_pytest.errors import DefanError

__all__ = ["Shard", "ShardError", "assign", "combine", "natural_key", "parse_shard", "select"]

_SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


class ShardError(DefanError):
    """A malformed ``--defan-shard``, or shard reports that are not one whole run."""


@dataclass(frozen=True)
class Shard:
    """The ``index``-th (1-based) of ``count`` shards."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str) -> Shard:
    """``"I/N"`` with ``1 <= I <= N``; raises :class:`ShardError` otherwise."""
    m = _SHARD.match(str(text))
    if not m:
        raise ShardError(f"{text!r} is not a shard; use I/N, e.g. 2/4 for the second of four shards")
    index, count = int(m.group(1)), int(m.group(2))
    if count < 1:
        raise ShardError(f"{text!r}: a run has at least 1 shard")
    if not 1 <= index <= count:
        raise ShardError(f"{text!r}: the shard number must be between 1 and {count}")
    return Shard(index, count)


def natural_key(text: str) -> Tuple[Tuple[int, Any], ...]:
    """Sort key reading runs of digits as numbers: ``q0002`` < ``q0010``, ``line9`` < ``line10``."""
    return tuple((0, int(t)) if t.isdigit() else (1, t) for t in re.split(r"(\d+)", str(text)) if t)


def _domain_key(name: str) -> Tuple[int, int, str]:
    from defan_pytest.metrics.summary import DOMAIN_ORDER

    return (0, DOMAIN_ORDER.index(name), "") if name in DOMAIN_ORDER else (1, 0, name)


def _domain_group(row: Any) -> Tuple[str, str]:
    """(domain, group key) of a dataset row (``Row``) or a record/report row (a mapping)."""
    if isinstance(row, Mapping):
        return str(row["domain"]), str(row["group"])
    return str(row.domain), str(row.group_key)


def assign(rows: Sequence[Any], count: int) -> Dict[str, int]:
    """Group key -> 0-based shard of every group of ``rows`` (see the module docstring)."""
    by_domain: Dict[str, Dict[str, None]] = {}
    for row in rows:
        domain, group = _domain_group(row)
        by_domain.setdefault(domain, {})[group] = None
    out: Dict[str, int] = {}
    dealt = 0
    for domain in sorted(by_domain, key=_domain_key):
        for key in sorted(by_domain[domain], key=natural_key):
            out[key] = dealt % count
            dealt += 1
    return out


def select(rows: Sequence[Any], shard: Shard) -> List[Any]:
    """The rows of ``shard``, in their order in ``rows``."""
    owner = assign(rows, shard.count)
    return [r for r in rows if owner[_domain_group(r)[1]] == shard.index - 1]


# -- merging ----------------------------------------------------------------------------------


def _model_text(model: Any) -> str:
    if not isinstance(model, Mapping):
        return "no model"
    parts = [str(model.get("name"))]
    if model.get("model") and model.get("model") != model.get("name"):
        parts.append(str(model.get("model")))
    if model.get("version") is not None:
        parts.append(f"version {model.get('version')}")
    if model.get("source"):
        parts.append(f"source {model.get('source')}")
    return " ".join(parts)


def _identity(meta: Mapping[str, Any]) -> Dict[str, Tuple[Any, str]]:
    """What must be the same in every shard of one run: (value compared, how it is said)."""
    data = meta.get("dataset") or {}
    sel = meta.get("selection") or {}
    scorer = meta.get("scorer") or {}
    model = meta.get("model")
    scorer_key = tuple(scorer.get(k) for k in ("rules", "ner", "pipeline", "version"))
    scorer_text = f"rules {scorer.get('rules')}, " + (
        f"spaCy {scorer.get('pipeline')} {scorer.get('version') or ''}".rstrip() if scorer.get("ner") else "no spaCy"
    )
    return {
        "model": (model, _model_text(model)),
        "data set": ((data.get("identity"), data.get("sha256")), f"{data.get('source')} {data.get('identity')}"),
        "selection": (
            (tuple(sel.get("domains") or ()), sel.get("sample"), sel.get("seed")),
            f"domains {','.join(sel.get('domains') or ()) or '-'}, sample {sel.get('sample') or 'all'}, "
            f"seed {sel.get('seed')}",
        ),
        "scorer": (scorer_key, scorer_text),
    }


@dataclass
class Combined:
    """The run that a complete set of shard reports makes: its rows (in the order the unsharded
    run lists them: domains in the report's order, groups in natural order, each group's rows as
    its shard listed them), its metadata, and the files in shard order."""

    rows: List[Dict[str, Any]]
    meta: Dict[str, Any]
    files: List[str]
    count: int
    decide: str


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


def combine(reports: Sequence[Tuple[str, Mapping[str, Any]]]) -> Combined:
    """Check that ``reports`` (``(file name, loaded report)``) are the shards of one run, all of
    them once, and combine them.  Raises :class:`ShardError` listing every problem, naming the
    files."""
    problems: List[str] = []
    if not reports:
        raise ShardError("no report to merge")
    sharded: List[Tuple[str, Mapping[str, Any], Shard]] = []
    unsharded: List[str] = []
    for name, report in reports:
        text = ((report.get("meta") or {}).get("selection") or {}).get("shard")
        if text is None:
            unsharded.append(name)
            continue
        try:
            sharded.append((name, report, parse_shard(str(text))))
        except ShardError as exc:
            problems.append(f"{name}: meta.selection.shard {exc}")
    if unsharded:
        if sharded:
            problems.append(
                "a mix of sharded and unsharded reports: " + ", ".join(unsharded)
                + (" is" if len(unsharded) == 1 else " are") + " not a shard (no --defan-shard), "
                + ", ".join(f"{n} is shard {s}" for n, _r, s in sharded)
            )
        else:
            problems.append(
                ", ".join(unsharded) + (" is" if len(unsharded) == 1 else " are")
                + " not a shard (run without --defan-shard): only the reports of --defan-shard=I/N runs are merged"
            )
    if problems:
        raise ShardError(problems=problems)

    counts = sorted({s.count for _n, _r, s in sharded})
    if len(counts) > 1:
        problems.append(
            "shards of different splits: " + ", ".join(f"{n} is shard {s}" for n, _r, s in sharded)
        )
    else:
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

    first_name, first, _s = sharded[0]
    ident = _identity(first.get("meta") or {})
    for name, report, _s in sharded[1:]:
        other = _identity(report.get("meta") or {})
        for what, (value, text) in ident.items():
            if other[what][0] != value:
                problems.append(
                    f"shards of different runs: {first_name} and {name} differ in {what} ({text}; {other[what][1]})"
                )
    decides = {str((r.get("thresholds") or {}).get("decide") or "point") for _n, r, _s in sharded}
    if len(decides) > 1:
        problems.append(
            "shards of different runs: --defan-decide differs ("
            + ", ".join(f"{n}: {(r.get('thresholds') or {}).get('decide') or 'point'}" for n, r, _s in sharded) + ")"
        )
    owner: Dict[str, str] = {}
    for name, report, _s in sharded:
        for row in report.get("rows") or ():
            rid = str(row.get("id"))
            if rid in owner and owner[rid] != name:
                problems.append(f"prompt {rid} is in two shards: {owner[rid]} and {name}")
                break
            owner[rid] = name
    if problems:
        raise ShardError(problems=problems)

    sharded.sort(key=lambda t: t[2].index)
    count = sharded[0][2].count
    positioned: List[Tuple[Tuple[Any, ...], Dict[str, Any]]] = []
    for k, (_name, report, _s) in enumerate(sharded):
        for pos, row in enumerate(report.get("rows") or ()):
            key = (_domain_key(str(row["domain"])), natural_key(str(row["group"])), k, pos)
            positioned.append((key, dict(row)))
    positioned.sort(key=lambda t: t[0])
    rows = [r for _k, r in positioned]

    metas = [dict(r.get("meta") or {}) for _n, r, _s in sharded]
    meta = dict(metas[0])
    selection = dict(meta.get("selection") or {})
    selection.update(
        selected=sum(int((m.get("selection") or {}).get("selected") or 0) for m in metas),
        ran=sum(int((m.get("selection") or {}).get("ran") or 0) for m in metas),
        narrowed=any(bool((m.get("selection") or {}).get("narrowed")) for m in metas),
        shard=None,
    )
    meta["selection"] = selection
    calls: Dict[str, Any] = {}
    durations: Dict[str, Any] = {}
    for m in metas:
        _sum_into(calls, m.get("calls") or {})
        _sum_into(durations, {k: v for k, v in (m.get("durations") or {}).items() if isinstance(v, (int, float))})
    meta["calls"] = calls
    # Machine time summed over the shards; "longest_shard": the wall time of a parallel matrix.
    durations = {k: round(float(v), 3) for k, v in durations.items()}
    totals = [(m.get("durations") or {}).get("total") for m in metas]
    durations["longest_shard"] = max((float(t) for t in totals if isinstance(t, (int, float))), default=None)
    meta["durations"] = durations
    meta["merged"] = {
        "shards": count,
        "files": [n for n, _r, _s in sharded],
        "created": [m.get("created") for m in metas],
    }
    return Combined(rows=rows, meta=meta, files=[n for n, _r, _s in sharded], count=count, decide=decides.pop())


def combine_usage(reports: Sequence[Mapping[str, Any]]) -> Dict[str, Any] | None:
    """The shards' ``usage`` added up (numbers summed key by key), or None when none has one."""
    parts = [r.get("usage") for r in reports if isinstance(r.get("usage"), Mapping)]
    if not parts:
        return None
    total: Dict[str, Any] = {}
    for part in parts:
        assert isinstance(part, Mapping)
        _sum_into(total, part)
    return total
