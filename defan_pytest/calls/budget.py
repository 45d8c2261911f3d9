"""The pool's spending account (``--defan-budget``): :class:`Budget` books each request's
estimated cost before it is sent and settles it with what the provider counted.  Pure
accounting, used by the call pool; nothing here calls a model.
"""
from __future__ import annotations

from typing import Any, Optional, Tuple

from defan_pytest.calls.estimate import DEFAULT_COMPLETION_TOKENS, estimate_prompt_tokens
from defan_pytest.calls.prices import Price, format_usd

__all__ = ["BUDGET_ERROR", "Budget"]

#: The kind of error an unsent prompt gets (``error_kind`` groups by it).
BUDGET_ERROR = "BudgetExceeded"


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
