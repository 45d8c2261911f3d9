"""The hand-labelled response sets of ``tests/data/validation*.jsonl``, joined to the DefAn
public split.

No DefAn text is stored in them: a row that answers a question of the public split holds that
row's id (``"id": "qs_ranking-q0321-p00"``) with the response and its labels, and the question,
gold, type and domain are read from the split when the tests run (so those tests need it, as
they need it for the gazetteer).  A row whose question we wrote ourselves (not DefAn's) keeps
``domain``, ``question``, ``answer`` and ``type`` inline.

Each row also has ``response``, ``expected_aligned``, ``expected_correct``, ``expected_claim``
(canonical, or ``null``) and ``note``; optionally ``form`` (the form of the response set:
``plain``, ``table``, ``json``, ``de``, ``long-reasoning``, ...), ``ambiguous`` and ``table6``.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Dict, List, Optional

if TYPE_CHECKING:
    from defan_pytest.dataset import Row

DATA = Path(__file__).parent / "data"
#: The labelled sets, each checked for agreement with the scorer (tests/test_scoring.py).
SETS = ("validation.jsonl", "validation_holdout.jsonl", "validation_forms.jsonl")
#: The fresh blind set of issue 21 (small models' raw output, other languages and scripts, number
#: words, self-corrections, new turns), labelled from SCORING.md by an annotator who never saw the
#: scorer.  Its first run (before any fix) agreed 81.4% on aligned and 77.9% on correct (rules
#: only; the same with NER); tuned against since: 99.1% / 97.9% (the rows left: country other
#: names, a collective name, three misreadings; docs/SCORING-CHOICES.md, "Agreement").
FRESH = "validation_fresh.jsonl"
#: The second blind set (issue 21, point 5: fifteen languages none of the others has, chat-template
#: leftovers, non-Latin digits, ranks and dates in words, math in other languages), labelled from
#: SCORING.md by an annotator who never saw the scorer.  First run, on the scorer before any of
#: issue 21's fixes (3c16918): 68.4% aligned, 62.4% correct (rules only; 68.4% / 63.2% with NER).
#: Never tuned against: its figure measures how the scorer generalises.
BLIND = "validation_blind.jsonl"
#: The third blind set (issue 21, point 5: 210 rows in twenty more languages -- Catalan, Korean,
#: Welsh, Tagalog, Estonian, Tamil, Icelandic, Georgian, Amharic, Armenian, ... --, number words,
#: no-prize statements, chat-template leftovers), labelled from SCORING.md only.  First run, on
#: the scorer before any fix of this round (8eed448): 92.9% aligned, 91.4% correct (rules only);
#: now 99.0% / 99.0% (the rows left are contract choices: docs/SCORING-CHOICES.md, "Agreement").
BLIND2 = "validation_blind2.jsonl"
#: The agreement (aligned, correct) each of those sets must keep: today's, minus a row or two,
#: so that a change that loses ground on styles nobody tuned for fails.
FLOORS = {FRESH: (0.99, 0.99), BLIND: (0.99, 0.99), BLIND2: (0.99, 0.99)}
#: The fields a row of the public split supplies.
JOINED = ("domain", "question", "answer", "type")


def raw_rows(name: str) -> List[dict]:
    """The rows of one set as stored (public rows by id only)."""
    text = (DATA / name).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def public_rows(public_dir: Path) -> Dict[str, "Row"]:
    """Row id -> row of the public split in ``public_dir``."""
    from defan_pytest.dataset import load_public

    return {r.id: r for r in load_public(data_dir=public_dir)}


def load(name: str, public_dir: Optional[Path]) -> List[dict]:
    """The rows of one set, each with its ``domain``, ``question``, ``answer`` and ``type``
    (read from the public split for the rows stored by id).  ``public_dir`` may be ``None``
    only for a set without such rows."""
    rows = raw_rows(name)
    by_id = None
    for r in rows:
        if "id" not in r:
            continue
        if by_id is None:
            if public_dir is None:
                raise ValueError(f"{name} refers to rows of the DefAn public split: pass its folder")
            by_id = public_rows(public_dir)
        p = by_id[r["id"]]
        r.update(domain=p.domain, question=p.question, answer=p.answer, type=p.type)
    return rows
