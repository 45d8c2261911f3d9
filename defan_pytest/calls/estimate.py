"""What a run is about to send and cost, before it sends anything: tokens estimated from the
prompts' length (:func:`estimate_prompt_tokens`), a typical completion, the price
(:func:`estimate`), and the line printed before the first call (:func:`format_estimate`).
Pure functions; nothing here calls a model.

>>> estimate_prompt_tokens("x" * 40)
17
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional, Sequence

from defan_pytest.calls.prices import Price, format_usd

__all__ = [
    "DEFAULT_COMPLETION_TOKENS",
    "Estimate",
    "completion_cap",
    "describe_path",
    "estimate",
    "estimate_prompt_tokens",
    "format_estimate",
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


def estimate_prompt_tokens(text: str, system_prompt: Optional[str] = None) -> int:
    """Tokens a prompt will take, from its length (about 4 characters a token in English)."""
    chars = len(text) + (len(system_prompt) if system_prompt else 0)
    messages = 2 if system_prompt else 1
    return int(math.ceil(chars / CHARS_PER_TOKEN)) + REQUEST_OVERHEAD + MESSAGE_OVERHEAD * messages


def completion_cap(params: Mapping[str, Any]) -> Optional[int]:
    """The most completion tokens the model's parameters let one answer take
    (``max_completion_tokens``, else ``max_tokens``), or ``None`` when they set no cap.

    >>> completion_cap({"max_tokens": 1000}), completion_cap({"max_tokens": "many"})
    (1000, None)
    """
    for name in ("max_completion_tokens", "max_tokens"):
        value = params.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def typical_completion(max_tokens: Any = None) -> int:
    """Completion tokens to expect of one answer: :data:`DEFAULT_COMPLETION_TOKENS`, or the
    model's ``max_tokens`` when that is smaller."""
    if isinstance(max_tokens, int) and not isinstance(max_tokens, bool) and max_tokens > 0:
        return min(DEFAULT_COMPLETION_TOKENS, max_tokens)
    return DEFAULT_COMPLETION_TOKENS


@dataclass(frozen=True)
class Estimate:
    """What a run is about to send, before it sends anything: of its ``prompts``, ``to_send``
    are asked, ``cached`` are answered from the cache and ``duplicates`` repeat another
    prompt's text (asked once, for all of them); ``repeats`` of the ``prompts`` are the extra
    asks of ``--defan-repeat`` (sent, cached or duplicates like any)."""

    prompts: int
    cached: int
    to_send: int
    prompt_tokens: int
    completion_tokens: int
    price: Optional[Price]
    path: str = ""
    model: str = ""
    duplicates: int = 0
    repeats: int = 0

    @property
    def cost(self) -> Optional[float]:
        return None if self.price is None else self.price.cost(self.prompt_tokens, self.completion_tokens)

    def to_json(self) -> Dict[str, Any]:
        return {
            "prompts": self.prompts, "cached": self.cached, "to_send": self.to_send, "duplicates": self.duplicates,
            "repeats": self.repeats,
            "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
            "cost": self.cost, "price": self.price.to_json() if self.price else None,
        }


def estimate(to_send: Sequence[str], cached: int, *, system_prompt: Optional[str] = None,
             completion_tokens: int = DEFAULT_COMPLETION_TOKENS, price: Optional[Price] = None,
             path: str = "", model: str = "", duplicates: int = 0, repeats: int = 0) -> Estimate:
    """The estimate for sending the prompts ``to_send`` (``cached``: the others, answered from
    the cache and not paid again; ``duplicates``: prompts whose text another prompt has, asked
    once for all; ``repeats``: how many of all these are ``--defan-repeat``'s extra asks).

    >>> e = estimate(["x" * 40] * 10, 5, price=Price(1e-6, 2e-6, "t"), duplicates=2)
    >>> (e.prompts, e.to_send, e.prompt_tokens, e.completion_tokens, round(e.cost, 6))
    (17, 10, 170, 1000, 0.00217)
    """
    prompt_tokens = sum(estimate_prompt_tokens(t, system_prompt) for t in to_send)
    return Estimate(len(to_send) + cached + duplicates, cached, len(to_send), prompt_tokens,
                    completion_tokens * len(to_send), price, path, model, duplicates, repeats)


_PATHS = {"openai": "the OpenAI protocol", "litellm": "litellm", "callable": "the registered callable"}


def describe_path(path: str) -> str:
    """``the OpenAI protocol``, ``litellm`` or ``the registered callable``."""
    return _PATHS.get(path, path)


def format_estimate(e: Estimate, model_table: str = "[models.<name>]") -> str:
    """One line before the first call: what will be sent (with the prompts that will not be,
    so that the numbers add up to the run's prompts), its tokens and cost."""
    others = f"{e.cached:,} from the cache"
    if e.duplicates:
        others += f", {e.duplicates:,} repeating another prompt's text, asked once; {e.prompts:,} in all"
    if e.repeats:
        others += f"; {e.repeats:,} of the {e.prompts:,} are the extra asks of --defan-repeat"
    head = f"defan estimate: {e.to_send:,} prompts to send ({others})"
    if e.path:
        head += f" via {describe_path(e.path)}"
    if e.path == "callable":
        return head  # tokens nobody counts, at no known price
    if e.to_send == 0:
        return head + ": nothing to pay"
    tokens = f"~{e.prompt_tokens:,} prompt + ~{e.completion_tokens:,} completion tokens"
    if e.price is not None and e.price.local:  # said here, once: the summary says no cost at all
        return f"{head}: {tokens}; {e.price.source}: no cost"
    if e.price is None:
        return (f"{head}: {tokens}, cost unknown (no price for {e.model or 'the model'}: set price_in and "
                f"price_out, USD per million tokens, in {model_table})")
    return f"{head}: {tokens}, ~{format_usd(e.cost or 0.0)} at {e.price.describe()}"
