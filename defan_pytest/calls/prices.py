"""What a model's tokens cost: :class:`Price` (USD per prompt and per completion token, and
where the figures come from), found in the model's ``[models.<name>]`` table or litellm's price
table (:func:`find_price`), and dollars written with the digits that matter (:func:`format_usd`).
Prices are USD per token internally and per million tokens where people read or write them
(``price_in``/``price_out``).  Nothing here imports litellm.

>>> p = Price(0.15e-6, 0.60e-6, "[models.mini]")
>>> round(p.cost(1_000_000, 500_000), 4)
0.45
>>> format_usd(0.000123), format_usd(0.5), format_usd(1234.5)
('$0.000123', '$0.5000', '$1,234.50')
"""
from __future__ import annotations

import json
import math
import re
import sys
from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional

from defan_pytest.calls.models import litellm_table

__all__ = ["Price", "find_price", "format_usd", "local_price", "model_table", "price_table"]


@dataclass(frozen=True)
class Price:
    """USD per prompt token and per completion token, and where the figures come from."""

    input: float
    output: float
    source: str
    #: The model runs on the user's own server (:func:`local_price`): nothing to pay, and
    #: nothing to say about it but once.
    local: bool = False

    def cost(self, prompt_tokens: float, completion_tokens: float) -> float:
        return prompt_tokens * self.input + completion_tokens * self.output

    def describe(self) -> str:
        """``$0.15 in, $0.60 out per million tokens (litellm's price table)``."""
        return (f"{format_usd(self.input * 1e6)} in, {format_usd(self.output * 1e6)} out per million tokens "
                f"({self.source})")

    def to_json(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"price_in": self.input * 1e6, "price_out": self.output * 1e6, "source": self.source}
        if self.local:
            out["local"] = True
        return out


def local_price(host: str) -> Price:
    """The price of a model on the user's own server at ``host`` (a loopback or private
    address, :func:`defan_pytest.calls.local.local_server`): 0.

    >>> local_price("127.0.0.1:8080").to_json()
    {'price_in': 0.0, 'price_out': 0.0, 'source': 'local server 127.0.0.1:8080', 'local': True}
    """
    return Price(0.0, 0.0, f"local server {host}", local=True)


def model_table(name: str) -> str:
    """How a model's table is written in ``thresholds.toml``: ``[models.mini]``, or
    ``[models."openai/gpt-4o-mini"]`` for a name TOML needs quoted."""
    return f"[models.{name}]" if re.fullmatch(r"[A-Za-z0-9_-]+", name) else f"[models.{json.dumps(name)}]"


def price_table() -> Mapping[str, Any]:
    """litellm's price map: the live one when litellm is already imported (it may hold prices
    the user fetched), else the table bundled with it, read without importing it."""
    litellm = sys.modules.get("litellm")
    table = getattr(litellm, "model_cost", None) if litellm is not None else None
    if isinstance(table, Mapping) and table:
        return table
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
