"""The regression gate: this run against a baseline report, judged scope by scope.

:func:`judge` pairs this run's per-prompt records with a baseline report's rows, has
:mod:`defan_pytest.gates.paired` compute each scope's change of every metric with its interval (a
paired test over paraphrase groups), applies the tolerances and confidence of the thresholds
file (``[regression]``), and returns the plain JSON that goes into the report, the terminal, the
GitHub step summary and the ``defan::regression[<scope>]`` tests::

    {"status": "pass" | "fail" | "skipped", "reason": ..., "baseline": {...}, "confidence": 0.95,
     "judged": K, "per_test_confidence": 1 - 2 * 0.05 / K,
     "pairs": {"paired": ..., "only_baseline": ..., "only_current": ..., "groups": ...},
     "shared": {scope: {"prompts": P, "groups": G, "needed": M, "judged": bool}},
     "scopes": {scope: {metric: {"old", "new", "change", "interval", "tolerance", "groups",
                                 "worse_flips", "better_flips", "significant", "regressed",
                                 "message"}}},
     "flipped": [{"id", "domain", "group", "question", "answer", "metric", "direction",
                  "old_response", "old_claim", "new_response", "new_claim"}, ...],
     "noise": "the model's own verdict flip rate ... (--defan-repeat)" | None}

A scope is judged only when the two runs share at least ``needed`` paraphrase groups in it (the
scope's ``min_samples``, else :data:`~defan_pytest.gates.thresholds.keys.DEFAULT_MIN_SHARED_GROUPS`):
a paired test over two groups says "not worse" of anything.  Its changes are still shown, marked
not judged, and a comparison that can judge no scope is refused before any call
(:func:`unjudgeable`).

Every registered metric the paired test compares (one that declares
:attr:`~defan_pytest.metrics.registry.Metric.paired`) is judged, each with its tolerance
(``max_<name>_rise`` / ``max_<name>_drop``, per domain and model, else its default). The plugin,
``defan gate`` and ``defan compare`` all use it.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from defan_pytest.gates.baseline import failed_levels, levels_note
from defan_pytest.gates.comparison import Comparison
from defan_pytest.gates.level import Verdict
from defan_pytest.gates.paired import compare
from defan_pytest.gates.thresholds import Thresholds
from defan_pytest.gates.thresholds.keys import DEFAULT_MIN_SHARED_GROUPS
from defan_pytest.metrics.registry import METRICS
from defan_pytest.metrics.repeats import noise_sentence
from defan_pytest.safetext import inline, printable
from defan_pytest.verdicts import FLIPPED_WORSE_TEXT

#: The regression gate's reason when it could judge no change (K = 0): its status is then
#: ``skipped`` ("not judged"), never ``pass``.
NOTHING_JUDGED = ("not judged: no change could be judged (no compared metric has a tolerance in a scope "
                  "that shares min_samples paraphrase groups with the baseline)")

__all__ = [
    "NOISE_TEXT", "NOTHING_JUDGED", "POWER", "RULE", "noise_line", "power", "power_lines", "annotation_lines", "format_comparison", "judge", "not_judged_reason", "shared_groups", "thresholds_meta",
    "tolerance_line", "unjudgeable",
]


def shared_groups(old_rows: Sequence[Mapping[str, Any]], prompts: Sequence[tuple[str, str, Any]],
                  thresholds: Thresholds) -> dict[str, dict[str, Any]]:
    """Per scope (each domain of ``prompts``, then ``overall``): the prompts and paraphrase
    groups this run (``prompts``: ``(id, domain, group)``) shares with the baseline's rows,
    the groups the scope needs to be judged and whether it has them."""
    old_ids = {str(r.get("id")) for r in old_rows}
    prompts_of: dict[str, int] = {}
    groups_of: dict[str, set[Any]] = {}
    for pid, domain, group in prompts:
        prompts_of.setdefault(domain, 0)
        groups_of.setdefault(domain, set())
        if str(pid) in old_ids:
            prompts_of[domain] += 1
            groups_of[domain].add(pid if group is None else group)
    out: dict[str, dict[str, Any]] = {}
    for scope in [*prompts_of, "overall"]:
        if scope == "overall":
            n, g = sum(prompts_of.values()), sum(len(v) for v in groups_of.values())
            need = thresholds.for_overall().min_samples
        else:
            n, g = prompts_of[scope], len(groups_of[scope])
            need = thresholds.for_domain(scope).min_samples
        needed = DEFAULT_MIN_SHARED_GROUPS if need is None else int(need)
        out[scope] = {"prompts": n, "groups": g, "needed": needed, "judged": g >= needed}
    return out


def not_judged_reason(scope: str, shared: Mapping[str, Any]) -> str:
    """Why a scope's regression is not judged: too few groups in common with the baseline."""
    g, n, need = shared.get("groups", 0), shared.get("prompts", 0), shared.get("needed", 0)
    return (f"{scope}: not judged: {g} paraphrase group{'' if g == 1 else 's'} ({n} prompts) in common "
            f"with the baseline < {need} (min_samples)")


def unjudgeable(shared: Mapping[str, Mapping[str, Any]], where: str = "--defan-baseline") -> list[str]:
    """The problem of a comparison that can judge no scope (before any call), else ``[]``."""
    if any(v.get("judged") for v in shared.values()):
        return []
    overall = shared.get("overall") or {}
    return [
        f"{where}: this run shares {overall.get('prompts', 0)} prompts in {overall.get('groups', 0)} paraphrase "
        f"groups with the baseline; the regression gate needs at least {overall.get('needed', 0)} "
        "(min_samples) in a domain or overall, so it could judge nothing: ask the baseline's prompts "
        "(the same --defan-domain and --defan-seed, a --defan-sample no larger than the baseline's)"
    ]


def _fmt(x: Any) -> str:
    return "-" if not isinstance(x, (int, float)) or isinstance(x, bool) else f"{x:.3f}"


def _percent(confidence: float) -> str:
    """``95%``, ``99.4%``: a confidence as people write it."""
    text = f"{100 * confidence:.2f}".rstrip("0").rstrip(".")
    return f"{text}%"


#: The regression gate's rule, in one sentence (the verdicts, the docs and the thresholds file
#: say it in these words).
RULE = ("a figure regresses when it got worse by more than its tolerance and its flips are more often "
        "for the worse than the model's own noise explains (one-sided, at the gate's corrected level)")


def _p(p: Any) -> str:
    """A p-value as people read it: ``p=0.031``, ``p=0.0004``, ``p<0.0001``."""
    if not isinstance(p, (int, float)):
        return "p=-"
    if p < 1e-4:
        return "p<0.0001"
    return f"p={p:.2g}" if p < 0.01 else f"p={p:.3f}".rstrip("0").rstrip(".")


def _level(x: Any) -> str:
    return f"{x:.2g}" if isinstance(x, (int, float)) else "-"


def _flips(x: Any) -> str:
    return f"{x:g}" if isinstance(x, (int, float)) else "0"


def _message(scope: str, metric: str, c: Mapping[str, Any], confidence: float) -> str:
    found = METRICS.get(metric) if metric in METRICS else None
    label = found.label if found is not None else metric
    unit = found.unit if found is not None else ""

    def fig(x: Any) -> str:
        return found.format(float(x)) if unit and found is not None and isinstance(x, (int, float)) else _fmt(x)

    change = float(c.get("change") or 0.0)
    moved = (f"{'+' if change >= 0 else '-'}{found.format(abs(change))}" if unit and found is not None
             else f"{change:+.3f}")
    iv = c.get("interval")
    interval = f"; {_percent(confidence)} CI {iv[0]:+.3f} to {iv[1]:+.3f}" if iv else ""
    if unit:
        counts = (f"{c.get('pairs', 0)} prompts: {_flips(c.get('worse_flips'))} higher / {_flips(c.get('better_flips'))} "
                  "lower in the tail")
    else:
        counts = (f"flips {_flips(c.get('worse_flips'))} worse / {_flips(c.get('better_flips'))} better in "
                  f"{c.get('groups', 0)} groups")
    test = f"{_p(c.get('p_value'))} against noise, needs < {_level(c.get('level'))}"
    tol = c.get("tolerance")
    shown_tol = (found.format(float(tol)) if unit and found is not None else f"{tol:g}") if tol is not None else ""
    worse, significant = bool(c.get("worse")), bool(c.get("significant_worse"))
    past = tol is not None and worse and abs(change) > tol
    if tol is None:
        tail = "not judged (no tolerance)"
    elif c.get("regressed"):
        tail = f"regressed: worse than the model's own noise and past the tolerance {shown_tol}"
    elif past:
        tail = f"past the tolerance {shown_tol}, but within the model's own noise"
    elif significant:
        tail = f"worse than the model's own noise, but within the tolerance {shown_tol}"
    else:
        tail = f"within the tolerance {shown_tol} and the model's own noise" if worse else "not worse"
    return f"{scope}: {label} {fig(c.get('old'))} -> {fig(c.get('new'))} ({moved}; {counts}, {test}{interval}): {tail}"


#: How each source of the model's own noise is said (the comparison's header line).
NOISE_TEXT = {
    "answers": "each answer its own draw, read from the flips (--defan-repeat measures it)",
    "questions": "a question's paraphrases together ([regression] noise = \"question\"), read from the flips",
    "repeats": "measured by --defan-repeat",
}


def noise_line(comparison: Mapping[str, Any]) -> str | None:
    """What the comparison took as the model's own noise, and the gate's rule, in one line."""
    sources = sorted({str(c.get("noise")) for mets in (comparison.get("scopes") or {}).values()
                      for c in mets.values() if c.get("noise")})
    if not sources:
        return None
    said = "; ".join(NOISE_TEXT.get(s, inline(s)) for s in sources)
    return f"the model's own noise: {said}; {RULE}"


def judge(
    baseline: Mapping[str, Any],
    records: Sequence[Mapping[str, Any]],
    thresholds: Thresholds,
    *,
    baseline_path: str = "",
    skipped: str | None = None,
    forced: Sequence[str] | None = None,
    noise: Mapping[str, Any] | None = None,
    reduce: str = "mean",
) -> dict[str, Any]:
    """Compare ``records`` (this run's per-prompt records) with ``baseline`` (a loaded report)
    under ``thresholds`` (tolerances, confidence, the overall figure, what the model's noise is
    made of).  ``skipped``: why the gate is not judged (a narrowed selection); the comparison is
    still computed and shown, and the status is ``skipped``; ``noise``: the model's agreement
    with itself (``--defan-repeat``); ``reduce``: how a prompt's asks make its value."""
    confidence = float(thresholds.regression_confidence())
    old_rows = list(baseline.get("rows") or ())

    def run(level: float) -> Comparison:
        return compare(old_rows, records, confidence=level, tolerances=thresholds.tolerance,
                       overall=thresholds.overall_figure, reduce=reduce, noise=thresholds.regression_noise())

    # The configured confidence is the whole gate's, and each question is one-sided (did this
    # scope's metric get worse by more than its tolerance?): with K scope-metric changes judged,
    # each is tested one-sided at (1 - confidence) / K (Bonferroni), i.e. with the two-sided
    # interval at 1 - 2 (1 - confidence) / K whose worse-side bound is that one-sided bound, so
    # a model compared with itself (or with a run within every tolerance) fails the gate at
    # most 1 - confidence of the time, however many domains and metrics it has.
    shared = shared_groups(
        old_rows, [(str(r.get("id")), str(r.get("domain")), r.get("group")) for r in records], thresholds,
    )
    first = run(confidence)
    judged = sum(
        1 for scope, changes in first.scopes.items() for c in changes.values()
        if c.tolerance is not None and shared.get(scope, {}).get("judged")
    )
    # (confidence >= 0.5 keeps this >= 0; a two-sided 0 is the point estimate, one-sided 50%.)
    per_test = max(1.0 - 2.0 * (1.0 - confidence) / max(1, judged), 1e-9)
    data = run(per_test).to_json()
    scopes = {
        scope: {metric: _with_message(scope, metric, c, per_test, shared.get(scope), noise) for metric, c in mets.items()}
        for scope, mets in data["scopes"].items()
    }
    regressed = any(c.get("regressed") for mets in scopes.values() for c in mets.values())
    if skipped is None and not any(v["judged"] for v in shared.values()):
        skipped = unjudgeable(shared, "the baseline")[0]
    if skipped is None and judged == 0:
        # Nothing judged is no pass: every change lacked a tolerance or enough shared groups.
        skipped = NOTHING_JUDGED
    return {
        "status": "skipped" if skipped else ("fail" if regressed else "pass"),
        "reason": skipped,
        "shared": shared,
        "baseline": _baseline_info(baseline, baseline_path, forced),
        "confidence": confidence,
        "judged": judged,
        "per_test_confidence": per_test,
        "pairs": dict(data.get("pairs") or {}),
        "scopes": scopes,
        "flipped": _flipped(data.get("flipped") or (), old_rows, records),
        "noise": noise_sentence(noise),
    }


def _baseline_info(baseline: Mapping[str, Any], path: str, forced: Sequence[str] | None) -> dict[str, Any]:
    """The report's ``baseline`` block: which report, of which model and version."""
    meta = baseline.get("meta") or {}
    return {
        "path": path,
        "created": meta.get("created"),
        "model": (meta.get("model") or {}).get("name"),
        "defan_pytest": meta.get("defan_pytest"),
        "forced": list(forced or ()),
        "failed_levels": failed_levels(baseline),
    }


def _with_message(scope: str, metric: str, c: Mapping[str, Any], confidence: float,
                  shared: Mapping[str, Any] | None, noise: Mapping[str, Any] | None = None) -> dict[str, Any]:
    change = _change_of(c)
    said = noise_sentence(noise, scope) if metric == "fch" else None
    tail = f"; {said}" if said else ""
    if shared is not None and not shared.get("judged"):
        # Too few groups in common: shown, never a regression (nor a pass).
        label = METRICS[metric].label if metric in METRICS else metric
        change.update(regressed=False, judged=False)
        change["message"] = (f"{scope}: {label} {_fmt(change.get('old'))} -> {_fmt(change.get('new'))}: "
                             + not_judged_reason(scope, shared).split(": ", 1)[1] + tail)
        return change
    change["judged"] = True
    change["message"] = _message(scope, metric, change, confidence) + tail
    return change


def _flipped(flips: Sequence[Mapping[str, Any]], old_rows: Sequence[Mapping[str, Any]],
             records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The flipped prompts with both runs' responses and claims, for the report."""
    by_id_old = {str(r.get("id")): r for r in old_rows}
    by_id_new = {str(r.get("id")): r for r in records}
    out = []
    for f in flips:
        pid = str(f.get("id"))
        old, new = by_id_old.get(pid, {}), by_id_new.get(pid, {})
        out.append({
            "id": pid, "domain": f.get("domain", new.get("domain")), "group": f.get("group", new.get("group")),
            "question": new.get("question", old.get("question")), "answer": new.get("answer", old.get("answer")),
            "metric": f.get("metric", "fch"), "direction": f.get("direction", "worse"),
            "old_response": old.get("response"), "old_claim": old.get("claim"),
            "new_response": new.get("response"), "new_claim": new.get("claim"),
        })
    return out


def _change_of(c: Mapping[str, Any]) -> dict[str, Any]:
    """One scope's metric change in the report's shape (from :mod:`defan_pytest.gates.paired`)."""
    keys = ("old", "new", "change", "interval", "tolerance", "groups", "pairs", "worse_flips", "better_flips",
            "significant", "regressed", "p_value", "level", "noise", "method", "catchable")
    out = {k: c.get(k) for k in keys}
    out["worse"] = bool(c.get("worse", (c.get("change") or 0) != 0))
    out["significant_worse"] = bool(c.get("significant_worse", c.get("significant")))
    if out["interval"] is not None:
        out["interval"] = [round(float(out["interval"][0]), 4), round(float(out["interval"][1]), 4)]
    return out


def format_comparison(comparison: Mapping[str, Any], flipped: int = 20) -> str:
    """The comparison as terminal text: each scope's changes, then the prompts that went from
    right to hallucinated (at most ``flipped`` of them) with both answers.  Every value from the
    reports (the baseline's path, model and date, the scopes, the prompts) is one inert line's
    part (:func:`~defan_pytest.safetext.inline`)."""
    lines = []
    base = comparison.get("baseline") or {}
    pairs = comparison.get("pairs") or {}
    lines.append(
        f"compared with {inline(base.get('path'))} ({inline(base.get('model'))}, {inline(base.get('created'))}): "
        f"{inline(pairs.get('paired', 0))} prompts in common in {inline(pairs.get('groups', 0))} groups"
    )
    note = levels_note(base)
    if note:
        lines.append(f"note: {inline(note)}")
    said = noise_line(comparison)
    if said:
        lines.append(said)
    if comparison.get("status") == "skipped":
        lines.append(f"regression gate skipped: {inline(comparison.get('reason'))}")
    for _scope, mets in (comparison.get("scopes") or {}).items():
        for _metric, c in mets.items():
            lines.append(("REGRESSED " if c.get("regressed") else "  ") + inline(c.get("message")))
    worse = [f for f in comparison.get("flipped") or () if f.get("direction") == "worse"]
    if worse:
        lines.append(f"{FLIPPED_WORSE_TEXT}: {len(worse)} prompts" + (f" (first {flipped})" if len(worse) > flipped else ""))
        for f in worse[:flipped]:
            lines.append(
                f"  {inline(f.get('id'))}: gold {str(f.get('answer', '')).strip()[:30]!r}; "
                f"before {str(f.get('old_response') or '')[:40]!r} -> now {str(f.get('new_response') or '')[:40]!r}"
            )
    return printable("\n".join(lines)) + "\n"


#: The power the smallest catchable change is stated at.
POWER = 0.8

_NOISE_WORDS = {
    "repeats": "with the model's own noise as --defan-repeat measured it",
    "answers": "with the model's own noise read from the flips for the better, each answer its own draw",
    "questions": "with the model's own noise read from the flips for the better, a question's paraphrases together",
    "none": "if the application gives each prompt the same answer every time; --defan-repeat measures its noise",
}


def power(records: Sequence[Mapping[str, Any]], thresholds: Thresholds, reduce: str = "mean",
          comparison: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """The smallest change each judged scope can catch (issue 33): per scope and compared
    metric with a tolerance, the smallest even worsening (FCH, PMH up; RC down) caught with
    :data:`POWER` at the regression gate's one-sided level, from the scope's own pairs and the
    model's noise: a comparison's (``comparison``, :func:`judge`'s), else this run's records
    against themselves, whose noise only repeats can show. ``None`` when nothing is compared."""
    if comparison is not None and comparison.get("scopes"):
        scopes = {
            scope: {m: c.get("catchable") for m, c in mets.items() if c.get("tolerance") is not None}
            for scope, mets in comparison["scopes"].items()
        }
        level = (1.0 - float(comparison.get("per_test_confidence") or 0.95)) / 2.0
        noises = {str(c.get("noise")) for mets in comparison["scopes"].values() for c in mets.values()
                  if c.get("tolerance") is not None}
        basis = "comparison"
    else:
        confidence = float(thresholds.regression_confidence())

        def run(at: float) -> Comparison:
            return compare(records, records, confidence=at, tolerances=thresholds.tolerance,
                           overall=thresholds.overall_figure, reduce=reduce, noise=thresholds.regression_noise())

        judged = sum(1 for mets in run(confidence).scopes.values() for c in mets.values() if c.tolerance is not None)
        if not judged:
            return None
        per_test = max(1.0 - 2.0 * (1.0 - confidence) / judged, 1e-9)
        found = run(per_test)
        scopes = {scope: {m: c.catchable for m, c in mets.items() if c.tolerance is not None}
                  for scope, mets in found.scopes.items()}
        level = (1.0 - per_test) / 2.0
        noises = {"repeats" if c.noise == "repeats" else "none" for mets in found.scopes.values() for c in mets.values()}
        basis = "run"
    noise = "repeats" if noises == {"repeats"} else ("none" if "none" in noises else sorted(noises - {"repeats"})[0])
    return {"power": POWER, "level": level, "basis": basis, "noise": noise,
            "scopes": {s: mets for s, mets in scopes.items() if mets}}


def power_lines(found: Mapping[str, Any] | None, thresholds: Thresholds | None = None) -> list[str]:
    """The smallest catchable changes as the terminal and the step summary say them: a head
    line (the power, the level, the noise), then one line a scope: ``nobel  FCH +3.2  PMH +3.0
    RC -6.1 points``, ``-`` where no change the figure can make is caught that often, and a
    note where the sample is too small for the tolerance (the smallest catchable change more
    than twice it)."""
    scopes = found.get("scopes") if isinstance(found, Mapping) else None
    if not isinstance(scopes, Mapping):  # a report's JSON is read as untrusted
        return []
    scopes = {s: m for s, m in scopes.items() if isinstance(m, Mapping) and m}
    if not scopes:
        return []
    level = found.get("level")  # type: ignore[union-attr]
    at = found.get("power", POWER)  # type: ignore[union-attr]
    noise = found.get("noise")  # type: ignore[union-attr]
    head = (f"smallest change this sample catches ({at if isinstance(at, (int, float)) else POWER:.0%} power, "
            f"one-sided level {_level(level)}, {_NOISE_WORDS.get(str(noise), inline(noise))}):")
    lines = [head]
    width = min(max(len(inline(s)) for s in scopes), 40)
    marked = False
    for scope, mets in scopes.items():
        parts = []
        for metric, value in mets.items():
            label = METRICS[metric].label if metric in METRICS else str(metric)
            higher = METRICS[metric].higher_is_better if metric in METRICS else False
            if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
                tol = thresholds.tolerance(str(scope), str(metric)) if thresholds is not None else None
                star = "*" if tol is not None and value > 2 * tol else ""
                marked = marked or bool(star)
                parts.append(f"{inline(label)} {'-' if higher else '+'}{100 * value:.1f}{star}")
            else:
                parts.append(f"{inline(label)} none")
                marked = True
        lines.append(f"  {inline(scope)[:80]:<{width}}  {'  '.join(parts)[:400]} points")
    if marked:
        lines.append("  (* more than twice its tolerance, none: no change it can make: too small a sample to catch a "
                     "change near the tolerance)")
    return lines


def thresholds_meta(thresholds: Thresholds | None, summary: Mapping[str, Any] | None,
                    decide: str) -> dict[str, Any] | None:
    """The limits and regression tolerances that judged each scope, for the report."""
    if thresholds is None:
        return None
    scopes = [*(summary or {}).get("domains", {}), "overall"]
    limits = {
        scope: (thresholds.for_overall() if scope == "overall" else thresholds.for_domain(scope)).as_dict()
        for scope in scopes
    }
    tolerances = {
        scope: {m: tol for m in METRICS if (tol := thresholds.tolerance(scope, m)) is not None}
        for scope in scopes
    }
    return {
        "source": thresholds.source, "decide": decide, "figure": thresholds.overall_figure, "limits": limits,
        "regression": {"confidence": thresholds.regression_confidence(), "tolerances": tolerances},
    }


def annotation_lines(thresholds: Thresholds | None, verdicts: Sequence[Verdict],
                     comparison: Mapping[str, Any] | None) -> dict[str, int]:
    """1-based lines of the thresholds file for GitHub annotations: ``scope/metric`` of each
    gate verdict, ``regression/scope/metric`` of each regression."""
    out: dict[str, int] = {}
    if thresholds is None:
        return out
    for v in verdicts:
        key = "min_samples" if v.metric == "samples" else (
            METRICS[v.metric].threshold_key if v.metric in METRICS else None
        )
        line = thresholds.line_of(v.scope, key) if key else None
        if line:
            out[f"{v.scope}/{v.metric}"] = line
    for scope, mets in ((comparison or {}).get("scopes") or {}).items():
        for metric in mets:
            line = thresholds.tolerance_line(scope, metric)
            if line:
                out[f"regression/{scope}/{metric}"] = line
    return out


def tolerance_line(thresholds: Any, scope: str, changes: Mapping[str, Any]) -> int:
    """The 0-based line of the thresholds file a regression verdict points at: the tolerance
    of the first metric that regressed (or of the first judged), 0 when it cannot be told."""
    if thresholds is None or not changes:
        return 0
    bad = [m for m, c in changes.items() if c.get("regressed")] or list(changes)
    line = thresholds.tolerance_line(scope, bad[0])
    return int(line) - 1 if line else 0
