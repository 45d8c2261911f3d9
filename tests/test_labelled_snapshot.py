"""Every labelled row pinned (issue 37, point 4).

``tests/data/labelled_snapshot.jsonl`` holds the scorer's (claim, aligned, correct) on every row
of every labelled set, and lists one by one the rows where it disagrees with the label: any
change of a verdict, and any new or vanished disagreement, fails here and names the rows.  A
change is made on purpose by rewriting the snapshot (``python tests/labelled.py [PUBLIC_DIR]``),
and the commit says which rows moved and why.

``tests/data/public_claims_digest.json`` pins the verdicts on the 70,793 synthetic responses of
``bench/synthetic.py`` (one per row of the public split) by digest, per domain and per block of
rows; only that test needs the split.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from defan_pytest.scoring.ner import installed_pipelines

import labelled


def _pinned() -> dict[tuple[str, int], dict]:
    rows = labelled.raw_rows(labelled.SNAPSHOT)
    return {(e["set"], e["line"]): e for e in rows}


def _moved(nlp: str | None) -> list[str]:
    pinned = _pinned()
    moved = []
    for name in labelled.all_sets():
        rows = labelled.load(name)
        for i, (r, v) in enumerate(zip(rows, labelled.verdicts(rows, nlp)), 1):
            e = pinned.get((name, i))
            if e is None:
                moved.append(f"{name}:{i}: not pinned")
                continue
            if nlp and "ner" in e:
                want, known = tuple(e["ner"]), e["ner_disagrees"]
            else:
                want, known = (e["claim"], e["aligned"], e["correct"]), e.get("disagrees", [])
            off = labelled.disagreements(r, v)
            if v != want or off != known:
                moved.append(f"{name}:{i} {r['response'][:60]!r}: pinned {want} disagreeing on "
                             f"{known}, now {v} disagreeing on {off}")
        if (name, len(rows) + 1) in pinned:
            moved.append(f"{name}: pinned rows beyond its {len(rows)}")
    return moved


def test_every_labelled_row_keeps_its_pinned_verdict() -> None:
    """Rules only: no row's claim, alignment or correctness changes, and the disagreements with
    the labels are exactly the listed ones."""
    moved = _moved(None)
    assert not moved, "\n".join(moved)


@pytest.mark.skipif(not installed_pipelines(), reason="no spaCy pipeline installed")
def test_every_labelled_row_keeps_its_pinned_verdict_with_ner() -> None:
    """With NER: the same, rows whose verdict NER changes pinned with their own."""
    moved = _moved("auto")
    assert not moved, "\n".join(moved)


def test_the_snapshot_lists_every_disagreement_one_by_one() -> None:
    """Each labelled set's listed disagreements stay within 1% of its rows on aligned and on
    correct: the snapshot cannot pin a set that fell below the floor."""
    by_set: dict[str, list[dict]] = {}
    for e in _pinned().values():
        by_set.setdefault(e["set"], []).append(e)
    assert sorted(by_set) == sorted(labelled.all_sets())
    for name, entries in by_set.items():
        for field in ("aligned", "correct"):
            off = sum(field in e.get("disagrees", []) for e in entries)
            assert off / len(entries) <= 0.01, (name, field, off, len(entries))


def test_the_labelled_public_rows_are_the_split_s(public_dir: Path) -> None:
    """``labelled_public.jsonl`` holds exactly the public rows the sets answer, as the split has
    them (question, gold, type and domain)."""
    by_id = labelled.public_rows(public_dir)
    fixture = labelled.fixture_rows()
    used = {r["id"] for name in labelled.all_sets() for r in labelled.raw_rows(name) if "id" in r}
    assert set(fixture) == used
    for i, r in fixture.items():
        p = by_id[i]
        assert (r["domain"], r["question"], r["answer"], r["type"]) == (p.domain, p.question, p.answer, p.type), i
    questions = {p.question.strip() for p in by_id.values()}
    inline = [f"{name}:{n}" for name in labelled.all_sets()
              for n, r in enumerate(labelled.raw_rows(name), 1) if "id" not in r and r["question"].strip() in questions]
    assert not inline, f"DefAn questions stored inline (store their ids): {inline}"


def test_the_claims_on_the_synthetic_public_responses_are_pinned(public_dir: Path) -> None:
    """The rules-only verdicts on bench/synthetic.py's response to each of the 70,793 public
    rows: a change names its domains and blocks of rows."""
    pinned = json.loads((labelled.DATA / labelled.CLAIMS_DIGEST).read_text(encoding="utf-8"))
    now = labelled.public_digests(public_dir)
    moved = [f"{d} {block}" for d in pinned for block, h in pinned[d].items()
             if block != "all" and now.get(d, {}).get(block) != h]
    assert not moved and now == pinned, moved
