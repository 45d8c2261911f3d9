"""Scoring speed on the full DefAn public split, against the naive method.

    python bench/score_speed.py [--data FOLDER] [--slice 2000]

Our path: :meth:`Scorer.score_many` over every public row (70,793) with synthetic responses
(gold values in varied written forms, sentences, wrong values, refusals, reasoning blocks),
single process, with the installed spaCy pipeline used only where rules leave a name open.

Baseline, measured in the same run: the naive method -- the spaCy pipeline as shipped
(``spacy.load(name)``, every component) run on every response, batched with ``nlp.pipe`` (the
fast way to run it), plus rapidfuzz matching of every entity and of the whole text against the
gold -- on a slice of ``--slice`` rows taken evenly across the whole split.
Prints responses/s of both, the ratio, and the peak memory of the process.
"""
from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from synthetic import respond  # noqa: E402

from defan_pytest.dataset import load_public  # noqa: E402
from defan_pytest.scoring.scorer import Scorer, ScoreInput  # noqa: E402


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def naive_scores(nlp, items) -> list:
    """spaCy NER on every response plus fuzzy matching: what a quick evaluator would write."""
    from rapidfuzz import fuzz

    out = []
    texts = [it.response or "" for it in items]
    for it, doc in zip(items, nlp.pipe(texts, batch_size=256)):
        gold = it.answer.strip()
        cands = [e.text for e in doc.ents] + [doc.text]
        out.append(any(fuzz.partial_ratio(c, gold) >= 90 for c in cands if c))
    return out


def _index_source() -> str:
    """Whether the place index was read from the user cache or built (and then kept)."""
    from defan_pytest.scoring.text import places

    path = places._cache_path()
    return "read from the cache" if path is not None and BEFORE.get("index") else "built (now kept in the cache)"


BEFORE: dict = {}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=None,
                    help="folder of the public split (default: found as users find it: DEFAN_DATA_DIR, the cache, the pinned download)")
    ap.add_argument("--slice", type=int, default=2000)
    ap.add_argument("--nlp", default="auto", help="spaCy pipeline for our path (default: auto)")
    args = ap.parse_args()
    if args.data is None:
        sys.path.insert(0, str(HERE.parent))
        from defan_pytest.dataset import DatasetError, resolve_public_dir

        try:
            args.data = str(resolve_public_dir())
        except DatasetError as exc:
            print(f"bench/score_speed.py: {exc}", file=sys.stderr)
            return 2

    rows = load_public(data_dir=args.data)
    items = [
        ScoreInput(r.question, r.answer, r.type, respond(r.id, r.question, r.answer, r.type), None, r.domain)
        for r in rows
    ]
    answers: dict = {}
    for r in rows:
        answers.setdefault(r.domain, []).append(r.answer)
    rss_loaded = _peak_rss_mb()

    # The set-up, once a process, timed apart: the pipeline's load and first pipe call, lazy
    # imports, and the place index (built, or read from the user cache where an earlier run
    # left it): one row of each domain and answer type warms every part of the scorer.
    from defan_pytest.scoring.text import places

    index = places._cache_path()
    BEFORE["index"] = index is not None and index.exists()
    t0 = time.perf_counter()
    scorer = Scorer(nlp=args.nlp, answers=answers)
    kinds = {}
    for it in items:
        kinds.setdefault((it.domain, it.type), it)
    scorer.score_many(list(kinds.values()) + items[:50])
    setup = time.perf_counter() - t0
    t0 = time.perf_counter()
    scores = scorer.score_many(items)
    ours = time.perf_counter() - t0
    rss_after = _peak_rss_mb()

    rules = Scorer(nlp=None, answers=answers)
    t0 = time.perf_counter()
    rules.score_many(items)
    ours_rules = time.perf_counter() - t0

    if scorer.ner is None:
        print("no spaCy pipeline installed: the naive baseline needs one", file=sys.stderr)
        return 2
    step = max(1, len(items) // args.slice)
    sample = items[::step][: args.slice]
    # The naive evaluator loads the pipeline as spaCy ships it (every component), as
    # `spacy.load(name)` does; our path loads only what NER needs.
    import spacy

    naive_nlp = spacy.load(scorer.pipeline)
    naive_scores(naive_nlp, sample[:50])  # warm-up
    t0 = time.perf_counter()
    naive_scores(naive_nlp, sample)
    naive = time.perf_counter() - t0

    n = len(items)
    ours_rate = n / ours
    naive_rate = len(sample) / naive
    print(f"rows scored                    {n:,} (public split, {len(answers)} domains)")
    print(f"ours, pipeline={scorer.pipeline}: {ours:6.2f} s  {ours_rate:9,.0f} responses/s")
    print(f"ours, rules only               {ours_rules:6.2f} s  {n / ours_rules:9,.0f} responses/s")
    print(f"naive (NER+fuzzy, {len(sample):,} rows)   {naive:6.2f} s  {naive_rate:9,.0f} responses/s")
    print(f"ratio ours/naive               {ours_rate / naive_rate:6.1f}x   (target >= 10x)")
    print(f"full split in                  {ours:6.2f} s   (target < 5 s with the pipeline)")
    print(f"set-up, once a process         {setup:6.2f} s   (the pipeline, the place index {_index_source()})")
    print(f"peak RSS                       {rss_after:6.0f} MiB  (after loading rows: {rss_loaded:.0f} MiB)")
    correct = sum(1 for s in scores if s.correct) / n
    aligned = sum(1 for s in scores if s.aligned) / n
    print(f"synthetic mix                  correct {correct:.3f}  aligned {aligned:.3f}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    raise SystemExit(main())
