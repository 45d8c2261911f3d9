"""What the calls of a run cost: tokens, latency, prices, the estimate before a run, the budget.

Pure functions and one small accounting class (:class:`Budget`, used by the call pool); nothing
here calls a model or imports pytest or litellm.  Prices are USD per token internally and per
million tokens where people read or write them (``[models.<name>] price_in``/``price_out``).

>>> p = Price(0.15e-6, 0.60e-6, "[models.mini]")
>>> round(p.cost(1_000_000, 500_000), 4)
0.45
>>> percentile([0.05, 0.06, 0.07, 0.5], 50)
0.065
>>> format_usd(0.000123), format_usd(0.5), format_usd(1234.5)
('$0.000123', '$0.5000', '$1,234.50')
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

__all__ = [
    "BUDGET_ERROR",
    "Budget",
    "Estimate",
    "Price",
    "estimate",
    "estimate_prompt_tokens",
    "find_price",
    "format_estimate",
    "format_summary",
    "format_usd",
    "model_table",
    "percentile",
    "summarize",
    "typical_completion",
]

#: Completion tokens a DefAn answer is assumed to take before any has come back (a sentence
#: or a short paragraph; capped by the model's ``max_tokens``).
DEFAULT_COMPLETION_TOKENS = 100
#: Characters per token of English prompts (OpenAI's rule of thumb).
CHARS_PER_TOKEN = 4.0
#: Tokens a chat request adds around its messages (roles, separators, the reply's priming).
REQUEST_OVERHEAD = 3
MESSAGE_OVERHEAD = 4
#: The kind of error an unsent prompt gets (``error_kind`` groups by it).
BUDGET_ERROR = "BudgetExceeded"


@dataclass(frozen=True)
class Price:
    """USD per prompt token and per completion token, and where the figures come from."""

    input: float
    output: float
    source: str

    def cost(self, prompt_tokens: float, completion_tokens: float) -> float:
        return prompt_tokens * self.input + completion_tokens * self.output

    def describe(self) -> str:
        """``$0.15 in, $0.60 out per million tokens (litellm's price table)``."""
        return (f"{format_usd(self.input * 1e6)} in, {format_usd(self.output * 1e6)} out per million tokens "
                f"({self.source})")

    def to_json(self) -> Dict[str, Any]:
        return {"price_in": self.input * 1e6, "price_out": self.output * 1e6, "source": self.source}


def model_table(name: str) -> str:
    """How a model's table is written in ``thresholds.toml``: ``[models.mini]``, or
    ``[models."openai/gpt-4o-mini"]`` for a name TOML needs quoted."""
    import json
    import re

    return f"[models.{name}]" if re.fullmatch(r"[A-Za-z0-9_-]+", name) else f"[models.{json.dumps(name)}]"


def price_table() -> Mapping[str, Any]:
    """litellm's price map: the live one when litellm is already imported (it may hold prices
    the user fetched), else the table bundled with it, read without importing it."""
    litellm = sys.modules.get("litellm")
    table = getattr(litellm, "model_cost", None) if litellm is not None else None
    if isinstance(table, Mapping) and table:
        return table
    from defan_pytest.calls.models import litellm_table

    return litellm_table()


def find_price(model: str, price_in: Optional[float] = None, price_out: Optional[float] = None,
               table: Optional[Mapping[str, Any]] = None, where: str = "[models]") -> Optional[Price]:
    """The price of ``model``: ``price_in``/``price_out`` (USD per million tokens; one given
    alone leaves the other at 0) win; else litellm's price map (``table``), under the model
    string or its name without the provider prefix; else ``None``.

    >>> find_price("openai/gpt-4o-mini", table={"gpt-4o-mini": {"input_cost_per_token": 1.5e-07,
    ...     "output_cost_per_token": 6e-07}}).describe()
    "$0.1500 in, $0.6000 out per million tokens (litellm's price table)"
    >>> find_price("openai/my-local-model", table={}) is None
    True
    """
    if price_in is not None or price_out is not None:
        return Price((price_in or 0.0) / 1e6, (price_out or 0.0) / 1e6, where)
    if table is None:
        table = price_table()
    names = [model]
    if "/" in model:
        names.append(model.split("/", 1)[1])
    for name in names:
        entry = table.get(name)
        if isinstance(entry, Mapping):
            pin, pout = entry.get("input_cost_per_token"), entry.get("output_cost_per_token")
            if isinstance(pin, (int, float)) and isinstance(pout, (int, float)):
                return Price(float(pin), float(pout), "litellm's price table")
    return None


def estimate_prompt_tokens(text: str, system_prompt: Optional[str] = None) -> int:
    """Tokens a prompt will take, from its length (about 4 characters a token in English)."""
    chars = len(text) + (len(system_prompt) if system_prompt else 0)
    messages = 2 if system_prompt else 1
    return int(math.ceil(chars / CHARS_PER_TOKEN)) + REQUEST_OVERHEAD + MESSAGE_OVERHEAD * messages


def typical_completion(max_tokens: Any = None) -> int:
    """Completion tokens to expect of one answer: :data:`DEFAULT_COMPLETION_TOKENS`, or the
    model's ``max_tokens`` when that is smaller."""
    if isinstance(max_tokens, int) and not isinstance(max_tokens, bool) and max_tokens > 0:
        return min(DEFAULT_COMPLETION_TOKENS, max_tokens)
    return DEFAULT_COMPLETION_TOKENS


@dataclass(frozen=True)
class Estimate:
    """What a run is about to send, before it sends anything."""

    prompts: int
    cached: int
    to_send: int
    prompt_tokens: int
    completion_tokens: int
    price: Optional[Price]
    path: str = ""
    model: str = ""

    @property
    def cost(self) -> Optional[float]:
        return None if self.price is None else self.price.cost(self.prompt_tokens, self.completion_tokens)

    def to_json(self) -> Dict[str, Any]:
        return {
            "prompts": self.prompts, "cached": self.cached, "to_send": self.to_send,
            "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
            "cost": self.cost, "price": self.price.to_json() if self.price else None,
        }


def estimate(to_send: Sequence[str], cached: int, *, system_prompt: Optional[str] = None,
             completion_tokens: int = DEFAULT_COMPLETION_TOKENS, price: Optional[Price] = None,
             path: str = "", model: str = "") -> Estimate:
    """The estimate for sending the prompts ``to_send`` (``cached``: the others, answered from
    the cache and not paid again).

    >>> e = estimate(["x" * 40] * 10, 5, price=Price(1e-6, 2e-6, "t"))
    >>> (e.to_send, e.prompt_tokens, e.completion_tokens, round(e.cost, 6))
    (10, 170, 1000, 0.00217)
    """
    prompt_tokens = sum(estimate_prompt_tokens(t, system_prompt) for t in to_send)
    return Estimate(len(to_send) + cached, cached, len(to_send), prompt_tokens, completion_tokens * len(to_send),
                    price, path, model)


_PATHS = {"openai": "the OpenAI protocol", "litellm": "litellm", "callable": "the registered callable"}


def describe_path(path: str) -> str:
    """``the OpenAI protocol``, ``litellm`` or ``the registered callable``."""
    return _PATHS.get(path, path)


def format_estimate(e: Estimate, model_table: str = "[models.<name>]") -> str:
    """One line before the first call: what will be sent, its tokens and cost."""
    head = f"defan estimate: {e.to_send:,} prompts to send ({e.cached:,} from the cache)"
    if e.path:
        head += f" via {describe_path(e.path)}"
    if e.path == "callable":
        return head  # tokens nobody counts, at no known price
    if e.to_send == 0:
        return head + ": nothing to pay"
    tokens = f"~{e.prompt_tokens:,} prompt + ~{e.completion_tokens:,} completion tokens"
    if e.price is None:
        return (f"{head}: {tokens}, cost unknown (no price for {e.model or 'the model'}: set price_in and "
                f"price_out, USD per million tokens, in {model_table})")
    return f"{head}: {tokens}, ~{format_usd(e.cost or 0.0)} at {e.price.describe()}"


def percentile(values: Sequence[float], q: float) -> Optional[float]:
    """The ``q``-th percentile (0-100) of ``values``, interpolated between the nearest ranks;
    ``None`` for no values."""
    data = sorted(values)
    if not data:
        return None
    pos = (len(data) - 1) * q / 100.0
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)


def format_usd(x: float) -> str:
    """Dollars with the digits that matter: ``$0.000123``, ``$0.5000``, ``$1,234.50``."""
    if x == 0:
        return "$0"
    if abs(x) < 1e-6:
        return f"${x:.2e}"
    if abs(x) < 0.01:  # three significant digits, in decimals
        digits = -int(math.floor(math.log10(abs(x)))) + 2
        return "$" + f"{x:.{digits}f}".rstrip("0")
    if abs(x) < 100:
        return f"${x:.4f}"
    return f"${x:,.2f}"


def _is_budget_error(error: Any) -> bool:
    return isinstance(error, str) and error.startswith(BUDGET_ERROR)


def _int(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _tokens(rs: Sequence[Mapping[str, Any]]) -> Dict[str, Any]:
    known = [r for r in rs if _int(r.get("prompt_tokens")) is not None or _int(r.get("completion_tokens")) is not None]
    p = sum(_int(r.get("prompt_tokens")) or 0 for r in known)
    c = sum(_int(r.get("completion_tokens")) or 0 for r in known)
    return {"prompt": p, "completion": c, "total": p + c, "answers": len(rs), "unknown": len(rs) - len(known)}


def _block(recs: Sequence[Mapping[str, Any]], price: Optional[Price]) -> Dict[str, Any]:
    """Tokens, latency and cost of some records (the run's, or one domain's)."""
    fresh = [r for r in recs if not r.get("error") and (r.get("answered_by") or "model") != "cache"]
    cached = [r for r in recs if not r.get("error") and r.get("answered_by") == "cache"]
    paid, kept = _tokens(fresh), _tokens(cached)
    latencies = [float(r["latency"]) for r in fresh if isinstance(r.get("latency"), (int, float))]
    out: Dict[str, Any] = {
        "prompts": len(recs),
        "answered": len(fresh),
        "cached": len(cached),
        "errors": sum(1 for r in recs if r.get("error")),
        "tokens": paid,
        "cached_tokens": kept,
        "latency": {
            "n": len(latencies),
            "p50": _round(percentile(latencies, 50)),
            "p95": _round(percentile(latencies, 95)),
            "mean": _round(sum(latencies) / len(latencies)) if latencies else None,
        },
        "cost": None,
    }
    if price is not None:
        out["cost"] = {
            "spent": round(price.cost(paid["prompt"], paid["completion"]), 8),
            "cached": round(price.cost(kept["prompt"], kept["completion"]), 8),
            # Answers whose tokens were not reported (a provider that says nothing, answers
            # cached by an earlier version) are not in these figures.
            "complete": paid["unknown"] == 0,
        }
    return out


def summarize(records: Iterable[Mapping[str, Any]], *, price: Optional[Price] = None, path: str = "",
              budget: Optional[float] = None) -> Dict[str, Any]:
    """The usage block of a run's report (plain JSON), from its records (``prompt_tokens``,
    ``completion_tokens``, ``latency``, ``answered_by``, ``error``, ``domain``).

    Answers the model gave in this run are paid: their tokens and cost are ``tokens`` and
    ``cost.spent``; answers from the cache keep the usage stored with them and are counted
    apart (``cached_tokens``, ``cost.cached``).  Latency percentiles are over this run's calls.
    ``domains`` holds the same figures per domain; ``price`` the price used, ``budget`` the
    limit, what was spent and how many prompts were not sent (``complete``: none).
    """
    recs = list(records)
    out: Dict[str, Any] = {"call_path": path or None, **_block(recs, price)}
    out["price"] = price.to_json() if price is not None else None
    spent = out["cost"]["spent"] if out["cost"] is not None else None
    unsent = sum(1 for r in recs if _is_budget_error(r.get("error")))
    out["budget"] = None if budget is None else {"limit": budget, "spent": spent, "unsent": unsent,
                                                 "complete": unsent == 0}
    by_domain: Dict[str, List[Mapping[str, Any]]] = {}
    for r in recs:
        by_domain.setdefault(str(r.get("domain")), []).append(r)
    out["domains"] = {d: _block(rs, price) for d, rs in sorted(by_domain.items()) if d != "None"}
    return out


def _round(x: Optional[float]) -> Optional[float]:
    return None if x is None else round(x, 6)


def format_summary(u: Mapping[str, Any]) -> List[str]:
    """The usage lines of the terminal summary (empty when there is nothing to say)."""
    lines: List[str] = []
    path = u.get("call_path") or ""
    t, lat = u.get("tokens") or {}, u.get("latency") or {}
    parts: List[str] = []
    answered = int(u.get("answered") or 0)
    if answered:
        if t.get("unknown", 0) < answered:
            parts.append(f"{t.get('prompt', 0):,} prompt + {t.get('completion', 0):,} completion tokens in "
                         f"{answered:,} answers")
        else:
            parts.append(f"{answered:,} answers, tokens not reported")
        if lat.get("p50") is not None:
            parts.append(f"latency p50 {lat['p50'] * 1000:,.0f} ms, p95 {lat['p95'] * 1000:,.0f} ms")
    cost = u.get("cost")
    if cost is not None:
        text = f"cost {format_usd(cost['spent'])}"
        if not cost.get("complete", True):
            text += " (some answers' tokens unknown)"
        if u.get("cached"):
            text += f"; {u['cached']:,} cached answers saved {format_usd(cost['cached'])}"
        parts.append(text)
    elif answered and path != "callable":
        parts.append("cost unknown (no price)")
    if parts:
        via = f" via {describe_path(path)}" if path else ""
        lines.append(f"usage{via}: " + "; ".join(parts))
    lines.extend(_domain_table(u.get("domains") or {}))
    budget = u.get("budget")
    if budget is not None:
        spent = budget.get("spent")
        spent_text = format_usd(spent) if spent is not None else "unknown"
        if budget.get("unsent"):
            lines.append(
                f"budget {format_usd(budget['limit'])} reached ({spent_text} spent): {budget['unsent']:,} prompts not "
                "sent, the run is incomplete; every answer is kept in the cache: a larger --defan-budget asks the rest"
            )
        else:
            lines.append(f"budget {format_usd(budget['limit'])}: {spent_text} spent")
    return lines


def _domain_table(domains: Mapping[str, Mapping[str, Any]]) -> List[str]:
    """Per domain: answers asked of the model, their tokens, latency p50/p95 and cost (within
    80 columns); nothing when no domain had an answer from the model."""
    rows = [(d, b) for d, b in domains.items() if b.get("answered")]
    if not rows:
        return []
    table = [["domain", "answered", "tokens", "p50 ms", "p95 ms", "cost"]]
    for d, b in rows:
        t, lat, cost = b.get("tokens") or {}, b.get("latency") or {}, b.get("cost")
        known = int(b.get("answered") or 0) - int(t.get("unknown", 0))
        tokens = f"{int(t.get('prompt', 0)) + int(t.get('completion', 0)):,}" if known > 0 else "-"

        def ms(v: Any) -> str:
            return "-" if v is None else f"{float(v) * 1000:,.0f}"

        table.append([d[:20], f"{int(b['answered']):,}", tokens, ms(lat.get("p50")), ms(lat.get("p95")),
                      format_usd(cost["spent"]) if cost else "-"])
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    return ["  " + "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()
            for r in table]


class Budget:
    """The pool's spending account (``--defan-budget``): a prompt is sent only while what was
    spent, plus the estimated cost of the requests in flight, plus its own estimate stays
    within ``limit``.  When only this process's requests in flight stand in the way, the prompt
    waits for them (what they really cost decides); when the spending alone leaves no room, it
    is refused, and so is every prompt after it (the run stops asking).

    Estimates start from the prompt's length and :data:`DEFAULT_COMPLETION_TOKENS` and follow
    what the provider reports (the mean completion, the ratio of counted to estimated prompt
    tokens), so that spending ends within about one concurrency window of the limit.

    ``ledger``: where the processes of one run (xdist workers) share their spending, so that
    together they stay within the one limit: ``others()`` returns what the other processes
    spent and have in flight, ``publish(spent, inflight)`` tells them this one's
    (:meth:`defan_pytest.cache.store.ResponseCache.others_spending` and ``publish_spending``).

    >>> b = Budget(0.01, Price(1e-6, 1e-5, "t"), completion_tokens=100)
    >>> verdict, booked = b.decide("x" * 400)   # 107 + 100 tokens: $0.001107
    >>> verdict, round(booked, 6)
    ('send', 0.001107)
    >>> b.settle(booked, 110, 90)               # what the provider counted: $0.00101
    >>> round(b.spent, 6), b.refused
    (0.00101, 0)
    """

    SEND, WAIT, REFUSE = "send", "wait", "refuse"

    def __init__(self, limit: float, price: Price, *, completion_tokens: int = DEFAULT_COMPLETION_TOKENS,
                 system_prompt: Optional[str] = None, ledger: Any = None) -> None:
        self.limit = float(limit)
        self.ledger = ledger
        self.price = price
        self.system_prompt = system_prompt
        self.spent = 0.0
        self.inflight = 0.0
        self.stopped = False
        self.refused = 0  # prompts not sent
        self._booked = 0  # requests in flight
        self._completion = float(completion_tokens)
        self._seen = 0
        self._completion_sum = 0
        self._ratio_num = 0.0
        self._ratio_den = 0.0

    def estimate(self, prompt: str) -> float:
        """The estimated cost of sending ``prompt``, from what has come back so far."""
        est = estimate_prompt_tokens(prompt, self.system_prompt)
        ratio = self._ratio_num / self._ratio_den if self._ratio_den else 1.0
        completion = self._completion_sum / self._seen if self._seen else self._completion
        return self.price.cost(est * ratio, completion)

    def decide(self, prompt: str) -> Tuple[str, float]:
        """``("send", booked)``: send ``prompt``, its estimated cost is booked; ``("wait", 0)``:
        the requests in flight must come back first; ``("refuse", 0)``: never (the run stops)."""
        if self.stopped:
            self.refused += 1
            return self.REFUSE, 0.0
        cost = self.estimate(prompt)
        other_spent, other_inflight = self.ledger.others() if self.ledger is not None else (0.0, 0.0)
        # What other processes have in flight counts as spent: a prompt waits only for this
        # process's own requests, whose settlements wake it (another process may die with
        # requests booked, and would keep a waiter waiting for ever).
        committed = self.spent + other_spent + other_inflight
        if committed + cost > self.limit:
            if not self._seen and committed < self.limit:
                # Nothing has come back here yet: the estimate is a guess (a typical
                # completion), and one request tells what answers cost -- send one, wait for it.
                return (self.WAIT, 0.0) if self._booked else (self.SEND, self._book(cost))
            if self._booked:
                return self.WAIT, 0.0  # what comes back may lower the estimate
            self.stopped = True
            self.refused += 1
            return self.REFUSE, 0.0
        if committed + self.inflight + cost > self.limit:
            return self.WAIT, 0.0  # only this process's requests in flight stand in the way
        return self.SEND, self._book(cost)

    def _book(self, cost: float) -> float:
        self._booked += 1
        self.inflight += cost
        self._publish()
        return cost

    def _unbook(self, booked: float) -> None:
        self._booked = max(0, self._booked - 1)
        # Exactly 0 with nothing in flight: float residues would read as a request in flight.
        self.inflight = max(0.0, self.inflight - booked) if self._booked else 0.0

    def _publish(self) -> None:
        if self.ledger is not None:
            self.ledger.publish(self.spent, self.inflight)

    def settle(self, booked: float, prompt_tokens: Optional[int], completion_tokens: Optional[int],
               prompt: Optional[str] = None) -> None:
        """A request came back: its booking is replaced by what the provider counted (or kept,
        when it counted nothing)."""
        self._unbook(booked)
        if prompt_tokens is None and completion_tokens is None:
            self.spent += booked
            self._publish()
            return
        self.spent += self.price.cost(prompt_tokens or 0, completion_tokens or 0)
        self._publish()
        if completion_tokens is not None:
            self._seen += 1
            self._completion_sum += completion_tokens
        if prompt_tokens is not None and prompt is not None:
            self._ratio_num += prompt_tokens
            self._ratio_den += estimate_prompt_tokens(prompt, self.system_prompt)

    def cancel(self, booked: float) -> None:
        """A request failed for good: its booking is released (a failed request is not billed)."""
        self._unbook(booked)
        self._publish()

    def message(self) -> str:
        """The error of a prompt not sent."""
        spent = self.spent + (self.ledger.others()[0] if self.ledger is not None else 0.0)
        return (
            f"{BUDGET_ERROR}: not sent: --defan-budget {format_usd(self.limit)} would be passed ({format_usd(spent)} "
            "spent); every answer is kept in the cache: run again with a larger budget to ask the rest"
        )
