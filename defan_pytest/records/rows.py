"""What makes a saved report's rows other than one prompt each (:func:`row_problems`): an id given
twice, a domain or group that is not its id's."""
from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Dict, List, Optional, Tuple

__all__ = ["row_problems"]


# The two forms of a prompt id (after "<domain>-"): a data set's row, ``q<group>-p<paraphrase>``
# (defan_pytest.dataset.Row.id, group key ``<domain>-q<group>``; also a line of ``defan score``'s
# responses file that gives the plugin's id), and a line of ``defan score``'s responses file
# without one, ``line<N>`` (group: the id itself, or ``<domain>-group-<label>``).
_ROW_ID = re.compile(r"(q[0-9]{4,})-p[0-9]{2,}\Z")
_LINE_ID = re.compile(r"line[1-9][0-9]*\Z")


def _id_problem(row: Mapping[str, Any]) -> Optional[str]:
    """Why ``row``'s domain or group is not the one its id names (``None``: they are)."""
    rid, domain, group = row["id"], row["domain"], row["group"]
    if not rid.startswith(f"{domain}-"):
        return f"id {rid!r} is not an id of its domain {domain!r}"
    rest = rid[len(domain) + 1:]
    m = _ROW_ID.match(rest)
    if m is not None:
        expected = f"{domain}-{m.group(1)}"
        return None if group == expected else f"id {rid!r} is of group {expected!r}, the row says {group!r}"
    if _LINE_ID.match(rest):
        if group == rid or group.startswith(f"{domain}-group-"):
            return None
        return f"id {rid!r} is of group {rid!r} or {domain + '-group-'!r}<label>, the row says {group!r}"
    return f"id {rid!r} is not a prompt id ({domain}-q<group>-p<paraphrase>, or {domain}-line<N>)"


def row_problems(
    rows: Sequence[Mapping[str, Any]],
    domains: Optional[Collection[str]] = None,
    one_type_per_group: bool = False,
    limit: int = 10,
) -> List[str]:
    """What makes saved report rows (their JSON, ``id``, ``domain``, ``group`` and ``type``
    strings) other than one prompt each: an id given twice, a domain or group that is not the
    one its id names, a domain not among ``domains`` (when given), and with
    ``one_type_per_group`` (the public split: one answer type a paraphrase group) a group of two
    types.  At most ``limit`` problems, each ``rows/<i>: what``.

    >>> row_problems([{"id": "nobel-q0001-p00", "domain": "nobel", "group": "nobel-q0001", "type": "name"},
    ...               {"id": "nobel-q0001-p00", "domain": "math", "group": "nobel-q0001", "type": "date"}],
    ...              one_type_per_group=True)  # doctest: +NORMALIZE_WHITESPACE
    ["rows/1: id 'nobel-q0001-p00' is given twice (first: rows/0)",
     "rows/1: id 'nobel-q0001-p00' is not an id of its domain 'math'"]
    """
    problems: List[str] = []
    first: Dict[str, int] = {}
    types: Dict[str, Tuple[str, int]] = {}
    for i, row in enumerate(rows):
        found = []
        rid = row["id"]
        if rid in first:
            found.append(f"id {rid!r} is given twice (first: rows/{first[rid]})")
        else:
            first[rid] = i
        if domains is not None and row["domain"] not in domains:
            found.append(f"domain {row['domain']!r} is not a domain of the data set")
        wrong = _id_problem(row)
        if wrong is not None:
            found.append(wrong)
        elif one_type_per_group:
            type0, i0 = types.setdefault(row["group"], (row["type"], i))
            if row["type"] != type0:
                found.append(f"type {row['type']!r} differs from {type0!r} of its group (rows/{i0})")
        problems.extend(f"rows/{i}: {text[:300]}" for text in found)
        if len(problems) >= limit:
            return problems[:limit] + ["... (more problems not shown)"]
    return problems
