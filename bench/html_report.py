"""The HTML report at the size of the full public split: its size, and its time to first render
in headless Chromium.

    python bench/html_report.py [--rows 70793] [--chromium /usr/bin/chromium] [--keep DIR]

Builds a report of ``--rows`` prompts in the public split's shape (eight domains, paraphrase
groups of 15, ``math`` in groups of one), with the real questions and golds when the public split
is found (``DEFAN_DATA_DIR``, ``../shared/defan-public``, the user cache) and invented ones
otherwise, synthetic responses and verdicts (no scoring: the page is what is measured), the
figures and a gate; then renders it twice, alone and against a baseline report (the "baseline"
columns and flips double the embedded text), and opens each in headless Chromium through
Playwright.  Prints, for each: the size of the file, the time to render it in Python, and in
Chromium the wall time from navigation to the first page of the table drawn (``window.__defan``
set), the page's own ``performance.now()`` at that moment, and the time of a full-text search
over every row and of a filter change.  Baseline, measured in the same run: the same page with
56 rows, so that the ratios show what the size costs.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional

if TYPE_CHECKING:
    from defan_pytest.records import Report

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

DOMAINS = ("sports", "census", "nobel", "entertainment", "world_org", "qs_ranking", "conference_venue", "math")


def _h(key: str) -> int:
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "big")


def _public_rows() -> Optional[List[Any]]:
    try:
        from defan_pytest.dataset import load_public, resolve_public_dir

        env = os.environ.get("DEFAN_DATA_DIR", "").strip()
        shared = HERE.parents[1] / "shared" / "defan-public"
        folder = resolve_public_dir(data_dir=env or (shared if shared.is_dir() else None))
        return list(load_public(None, data_dir=folder))
    except Exception:
        return None


def _synthetic_rows(n: int) -> List[Dict[str, Any]]:
    out: List[Dict[str, Any]] = []
    per = n // len(DOMAINS)
    for k, d in enumerate(DOMAINS):
        size = 1 if d == "math" else 15
        count = per if k < len(DOMAINS) - 1 else n - per * (len(DOMAINS) - 1)
        for i in range(count):
            g, p = divmod(i, size)
            out.append({
                "domain": d, "group": g, "para": p, "type": "numeric" if d in ("census", "math") else "name",
                "question": f"In the {1900 + g % 120} edition of the {d.replace('_', ' ')} record, which entrant "
                            f"(variant {p}) held the top place, as listed in the official register #{g}?",
                "answer": f"Entrant {g * 7 % 1000}",
            })
    return out


def build(n: int, shift: int = 0) -> Report:
    """A v1 report of ``n`` prompts with synthetic responses and verdicts (``shift`` changes them)."""
    from defan_pytest.gates import level as gate, regression as regression_gate, thresholds
    from defan_pytest.metrics import summary as metrics
    from defan_pytest.records import ReportMeta, ScoredRecord
    from defan_pytest.report import builder

    rows_in = _public_rows()
    source = "the public split's questions"
    if rows_in is None or len(rows_in) < n:
        rows_in, source = _synthetic_rows(n), "invented questions"
    rows: List[Dict[str, Any]] = []
    for r in rows_in[:n]:
        get = (lambda k: r[k]) if isinstance(r, dict) else (lambda k: getattr(r, k))
        domain, group, para = get("domain"), int(get("group")), int(get("para"))
        rid = f"{domain}-q{group:04d}-p{para:02d}"
        h = _h(f"{rid}/{shift}")
        err = "RateLimitError: 429 Too Many Requests" if h % 200 == 0 else None
        correct, aligned = h % 10 < 7, (h // 10) % 10 < 9
        gold = str(get("answer"))
        claim = gold.split(";")[0].strip() if correct else f"Someone {h % 97}"
        response = None if err else (
            f"{claim}." if h % 3 == 0 else
            f"Based on the records I have, the answer is {claim}. This is according to the sources available "
            f"up to my knowledge cut-off, and it may have changed since then."
        )
        rows.append({
            "id": rid, "domain": domain, "group": f"{domain}-q{group:04d}", "type": get("type"),
            "question": get("question"), "answer": gold, "response": response,
            "claim": None if err else claim, "aligned": None if err else aligned,
            "correct": None if err else correct, "error": err,
        })
    summary = metrics.summarize(rows)
    limits = thresholds.parse_thresholds(
        {"defaults": {"max_fch": 0.35, "max_pmh": 0.2, "min_rc": 0.1, "min_samples": 30}}, source="thresholds.toml"
    )
    verdicts = gate.check(summary, limits)
    meta = {
        "defan_pytest": "bench", "producer": "pytest", "created": "2030-01-01T00:00:00Z",
        "model": {"name": "bench-model", "kind": "callable", "version": "1", "source": "0" * 16},
        "dataset": {"source": "public", "identity": "bench", "commit": None},
        "scorer": {"rules": "bench", "ner": False, "pipeline": None, "version": None},
        "selection": {"domains": sorted({r["domain"] for r in rows}), "sample": None, "seed": 0,
                      "selected": len(rows), "ran": len(rows), "narrowed": False, "shard": None},
        "calls": {"prompts": len(rows)}, "durations": {"total": None}, "bench_source": source,
    }
    return builder.build_report(
        [ScoredRecord.from_json(r) for r in rows], summary, ReportMeta.from_json(meta),
        thresholds=regression_gate.thresholds_meta(limits, summary, "point"), verdicts=verdicts,
        gate_status=builder.gate_status(verdicts),
    )


def measure(page: Any, path: Path) -> Dict[str, float]:
    began = time.perf_counter()
    page.goto(path.as_uri())
    # (Not wait_for_function: the page's policy forbids the string evaluation it polls with.)
    page.wait_for_selector("body[data-ready='1']", state="attached", timeout=120_000)
    wall = time.perf_counter() - began
    in_page = float(page.evaluate("window.__defan.renderMs"))
    search = float(page.evaluate(
        """() => { const s = document.getElementById('f-search'); const t = performance.now();
        s.value = 'official'; s.dispatchEvent(new Event('input'));
        return new Promise(r => setTimeout(() => r(performance.now() - t - 150), 150)); }"""
    ))
    flt = float(page.evaluate(
        """() => { const s = document.getElementById('f-verdict'); const t = performance.now();
        s.value = 'fch'; s.dispatchEvent(new Event('change')); return performance.now() - t; }"""
    ))
    return {"wall": wall, "in_page": in_page / 1000, "search": max(0.0, search) / 1000, "filter": flt / 1000}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=70_793)
    ap.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    ap.add_argument("--keep", type=Path, default=None, help="keep the HTML files in this folder")
    args = ap.parse_args()
    from defan_pytest.report import html as html_report

    folder = args.keep or Path(tempfile.mkdtemp(prefix="defan-html-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    report = build(args.rows)
    base = build(args.rows, shift=1)
    print(f"{args.rows:,} prompts ({report.meta.extra['bench_source']}); reports built in {time.perf_counter() - t:.1f} s; "
          f"JSON report {len(json.dumps(report.to_json(), ensure_ascii=False, indent=1)) / 1e6:.1f} MB")
    cases = {"small (56 rows)": (build(56), None), "full": (report, None), "full, with a baseline": (report, base)}
    files: Dict[str, Path] = {}
    for name, (rep, b) in cases.items():
        t = time.perf_counter()
        text = html_report.render(rep, baseline=b, baseline_path="baseline.json" if b else None)
        seconds = time.perf_counter() - t
        path = folder / (name.split(" ")[0].strip(",") + ("-baseline" if b else "") + ".html")
        path.write_text(text, encoding="utf-8")
        files[name] = path
        print(f"{name:24} {path.stat().st_size / 1e6:7.2f} MB   rendered in Python in {seconds:5.2f} s")
    if not Path(args.chromium).exists():
        print(f"no Chromium at {args.chromium}: no browser timings")
        return 0
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=args.chromium, args=["--no-sandbox"])
        results = {}
        for name, path in files.items():
            best: Dict[str, float] = {}
            for _ in range(3):
                page = browser.new_page(viewport={"width": 1400, "height": 900})
                got = measure(page, path)
                page.close()
                best = {k: min(v, best.get(k, v)) for k, v in got.items()}
            results[name] = best
        browser.close()
    small = results["small (56 rows)"]["wall"]
    print("Chromium (best of 3): navigation to the first table page drawn; the page's own clock; "
          "a full-text search; a verdict filter")
    for name, r in results.items():
        print(f"{name:24} {r['wall']:6.2f} s (x{r['wall'] / small:4.1f})   in page {r['in_page']:5.2f} s   "
              f"search {r['search']:5.2f} s   filter {r['filter']:5.2f} s")
    if args.keep is None:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
