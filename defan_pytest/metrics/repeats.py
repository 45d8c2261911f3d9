"""How much a model disagrees with itself (``--defan-repeat``): the same prompt asked K times.

A local server at temperature 0 is not reproducible (batching at another concurrency changes the
arithmetic: llama.cpp gave the same answer to 47 of 111 prompts in two runs), so a regression
gate against such a model flips on noise unless the noise is measured.  :func:`agreement` takes
each repeated prompt's K answers, scored like any (:func:`defan_pytest.verdicts.outcome_of`), and
counts, per domain and overall (pooled over the prompts):

* ``identical``: prompts whose K answers are the same text (whitespace runs made one space, the
  ends stripped);
* ``verdicts_agree``: prompts whose K verdicts agree (FCH's correct and PMH's aligned);
* ``flip_rate``: the chance that two asks of a prompt differ in FCH's verdict, over every pair
  of asks of every prompt (``flipped_pairs`` / ``pairs``; a prompt with ``c`` of its K answers
  wrong has ``c (K - c)`` such pairs of ``K (K - 1) / 2``).

A prompt with an errored ask (the budget, a failure) is left out and counted as ``incomplete``.
:func:`add_up` adds up the figures of the shards of one run (``defan merge``);
:func:`noise_sentence` is what the regression gate says with it; :func:`summary_lines` the
terminal's lines.  Plain Python: the figures travel as JSON.

>>> a = {"response": "Paris", "correct": True, "aligned": True, "claim": "paris"}
>>> b = {"response": "Lyon", "correct": False, "aligned": True, "claim": "lyon"}
>>> fig = agreement([("world", [a, dict(a), b])], times=3)["overall"]
>>> fig["prompts"], fig["identical"], fig["verdicts_agree"], fig["flipped_pairs"], fig["pairs"]
(1, 0, 0, 2, 3)
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Dict, List, Optional, Tuple

from defan_pytest.verdicts import outcome_of

__all__ = ["add_up", "agreement", "noise_sentence", "normalise", "reduce_of", "summary_lines"]

#: One repeated prompt: its domain and its K asks' records (the run's own first).
Asks = Tuple[str, Sequence[Mapping[str, Any]]]


def normalise(text: Any) -> str:
    """An answer as :func:`agreement` compares it: whitespace runs one space, the ends stripped."""
    return " ".join(str(text or "").split())


def _scope(prompts: Sequence[Sequence[Mapping[str, Any]]], times: int, incomplete: int) -> Dict[str, Any]:
    """The figures of one scope's complete prompts (each with its ``times`` asks)."""
    identical = agree = flipped = 0
    for asks in prompts:
        identical += len({normalise(a.get("response")) for a in asks}) == 1
        verdicts = [(outcome_of(a).wrong, outcome_of(a).misaligned) for a in asks]
        agree += len(set(verdicts)) == 1
        wrong = sum(1 for w, _ in verdicts if w)
        flipped += wrong * (len(asks) - wrong)
    n = len(prompts)
    return _shares({"prompts": n, "incomplete": incomplete, "identical": identical, "verdicts_agree": agree,
                    "flipped_pairs": flipped, "pairs": n * times * (times - 1) // 2})


def agreement(prompts: Iterable[Asks], times: int, temperature: Optional[float] = None) -> Dict[str, Any]:
    """The agreement of each prompt's ``times`` asks (see the module docstring), as the
    report's ``meta.repeat``: ``{"times", "temperature", "prompts", "domains": {d: figures},
    "overall": figures}``; ``temperature``: the model's, when its parameters say it."""
    complete: Dict[str, List[Sequence[Mapping[str, Any]]]] = {}
    incomplete: Dict[str, int] = {}
    for domain, asks in prompts:
        complete.setdefault(domain, [])
        incomplete.setdefault(domain, 0)
        if len(asks) == times and not any(a.get("error") for a in asks):
            complete[domain].append(asks)
        else:
            incomplete[domain] += 1
    everything = [asks for d in complete for asks in complete[d]]
    return {
        "times": times, "temperature": temperature,
        "domains": {d: _scope(complete[d], times, incomplete[d]) for d in complete},
        "overall": _scope(everything, times, sum(incomplete.values())),
    }


_COUNTS = ("prompts", "incomplete", "identical", "verdicts_agree", "flipped_pairs", "pairs")


def _shares(counts: Mapping[str, int]) -> Dict[str, Any]:
    n, pairs = counts["prompts"], counts["pairs"]
    return {
        "prompts": n, "incomplete": counts["incomplete"],
        "identical": counts["identical"], "identical_share": counts["identical"] / n if n else None,
        "verdicts_agree": counts["verdicts_agree"], "verdicts_agree_share": counts["verdicts_agree"] / n if n else None,
        "flipped_pairs": counts["flipped_pairs"], "pairs": pairs,
        "flip_rate": counts["flipped_pairs"] / pairs if pairs else None,
    }


def add_up(parts: Sequence[Optional[Mapping[str, Any]]]) -> Optional[Dict[str, Any]]:
    """The figures of one run from those of its shards (each shard's prompts its own): the
    counts added up, scope by scope, the shares and rates of the sums; ``None`` when no shard
    measured any, or when the shards asked a different number of times."""
    given = [p for p in parts if p]
    if not given or len({p.get("times") for p in given}) != 1:
        return None
    temps = {p.get("temperature") for p in given}

    def add(figs: Sequence[Mapping[str, Any]]) -> Dict[str, Any]:
        return _shares({k: sum(int(f.get(k) or 0) for f in figs) for k in _COUNTS})

    domains: Dict[str, List[Mapping[str, Any]]] = {}
    for p in given:
        for d, fig in (p.get("domains") or {}).items():
            domains.setdefault(d, []).append(fig)
    out = {
        "times": given[0]["times"], "temperature": temps.pop() if len(temps) == 1 else None,
        "domains": {d: add(figs) for d, figs in domains.items()},
        "overall": add([p.get("overall") or {} for p in given]),
    }
    if any(p.get("reduce") for p in given):
        out["reduce"] = reduce_of(given[0])
    return out


def reduce_of(figures: Optional[Mapping[str, Any]]) -> str:
    """How a run's repeated answers made its verdicts (``meta.repeat.reduce``): ``"mean"``
    (also for a run that asked each prompt once, or a report written before the setting) or
    ``"all"``."""
    reduce = (figures or {}).get("reduce")
    return "all" if reduce == "all" else "mean"


def noise_sentence(figures: Optional[Mapping[str, Any]], scope: str = "overall") -> Optional[str]:
    """What the regression gate says of the model's own noise in ``scope`` (a domain's figure
    where it has one, else the whole run's), when a run measured it: ``the model's own verdict
    flip rate at temperature 0 is 4.5% (3 repeats of 111 prompts): changes below ~that are
    noise``; ``None`` when nothing was measured."""
    if not figures:
        return None
    fig = (figures.get("domains") or {}).get(scope) if scope != "overall" else None
    if not fig or not fig.get("prompts"):
        fig = figures.get("overall") or {}
    rate = fig.get("flip_rate")
    if not isinstance(rate, (int, float)):
        return None
    t = figures.get("temperature")
    at = f" at temperature {t:g}" if isinstance(t, (int, float)) and not isinstance(t, bool) else ""
    return (f"the model's own verdict flip rate{at} is {rate:.1%} ({figures.get('times')} repeats of "
            f"{fig.get('prompts')} prompts): changes below ~that are noise")


def _share(n: Any, total: Any) -> str:
    return f"{n} of {total} ({n / total:.0%})" if total else f"{n} of {total}"


def _line(fig: Mapping[str, Any]) -> str:
    rate = fig.get("flip_rate")
    flip = f"{rate:.1%}" if isinstance(rate, (int, float)) else "-"
    return (f"answers identical {_share(fig['identical'], fig['prompts'])}, verdicts agree "
            f"{_share(fig['verdicts_agree'], fig['prompts'])}, FCH verdict flip rate {flip} "
            f"({fig['flipped_pairs']} of {fig['pairs']} pairs)")


def summary_lines(figures: Mapping[str, Any], by_domain: bool = False) -> List[str]:
    """The terminal's lines: one of the whole run (and the prompts left out), then, with
    ``by_domain`` or when any verdict flipped, one a domain."""
    overall = figures.get("overall") or {}
    head = f"defan repeat: {figures.get('times')} asks of {overall.get('prompts', 0)} prompts: {_line(overall)}"
    lines = [head]
    if overall.get("incomplete"):
        lines.append(f"  ({overall['incomplete']} repeated prompts left out: an ask of theirs has no answer)")
    domains = figures.get("domains") or {}
    if len(domains) > 1 and (by_domain or overall.get("flipped_pairs")):
        width = max(len(str(d)) for d in domains)
        lines.extend(f"  {str(d):<{width}}  {_line(fig)}" for d, fig in domains.items() if fig.get("prompts"))
    return lines
