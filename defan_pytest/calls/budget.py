"""The pool's spending account (``--defan-budget``): :class:`Budget` books each request's
estimated cost before it is sent and settles it with what the provider counted.  Pure
accounting, used by the call pool; nothing here calls a model.
"""
from __future__ import annotations

import json
from typing import Any, Callable, NamedTuple, Optional, Protocol, Tuple, TypeVar

from defan_pytest.calls.estimate import DEFAULT_COMPLETION_TOKENS, estimate_prompt_tokens
from defan_pytest.calls.prices import Price, format_usd
from defan_pytest.calls.protocol import BadAnswer, EmptyAnswer

__all__ = [
    "BUDGET_ERROR", "CHARGED", "STOPPED_ERROR", "Budget", "Figures", "Ledger", "Shared", "billed", "charged_in",
    "charged_note", "not_sent",
]

#: The kind of error an unsent prompt gets (``error_kind`` groups by it).
BUDGET_ERROR = "BudgetExceeded"
#: The error of a prompt another process of the run had claimed and never sent (the run stopped).
STOPPED_ERROR = "NotSent: the run stopped before it was sent"

#: What the error of a prompt says of its answers that could not be read, charged to the budget.
CHARGED = "charged to --defan-budget at its estimate"

T = TypeVar("T")


def charged_note(n: int) -> str:
    """``1 answer that could not be read charged to --defan-budget at its estimate``."""
    return f"{n} {'answer' if n == 1 else 'answers'} that could not be read {CHARGED}"


def charged_in(error: Any) -> int:
    """How many answers of a prompt that was sent and failed its error says were charged
    (:func:`charged_note`).

    >>> charged_in("InternalServerError: malformed (2 answers that could not be read " + CHARGED + ")")
    2
    """
    if not isinstance(error, str) or CHARGED not in error or not_sent(error):
        return 0
    head = error.rsplit(CHARGED, 1)[0].rsplit("(", 1)[-1].split(" ", 1)[0]
    return int(head) if head.isdigit() else 1


def not_sent(error: Any) -> Optional[str]:
    """Why a prompt with this call error was never sent: ``"budget"`` (``--defan-budget``),
    ``"stopped"`` (the run stopped first), or ``None`` (it was sent, and failed)."""
    if not isinstance(error, str):
        return None
    if error.startswith(BUDGET_ERROR):
        return "budget"
    if error.startswith(STOPPED_ERROR.split(":", 1)[0]):
        return "stopped"
    return None


def billed(exc: BaseException) -> bool:
    """Whether a failed request may have been billed all the same: the provider answered (a
    2xx status) but the answer could not be used -- a body that is not JSON, no content, not
    text.  A request refused with an error status, or that never reached the provider, is
    not billed; neither is a timeout (counted as not billed: the provider's side is unknown)."""
    if isinstance(exc, (EmptyAnswer, BadAnswer)):
        return True
    seen: Any = exc
    for _ in range(8):  # the chain of causes (litellm wraps the decoding error in a "500")
        if seen is None:
            break
        status = getattr(seen, "status_code", None)
        if isinstance(status, int) and 200 <= status < 300:
            return True
        if isinstance(seen, json.JSONDecodeError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


class Shared(NamedTuple):
    """What the other processes of the run (xdist workers) show of their spending."""

    spent: float = 0.0  # USD their answers cost
    inflight: float = 0.0  # USD booked for their requests in flight
    requests: int = 0  # how many requests they have in flight
    largest: Optional[int] = None  # the largest completion any of them saw (tokens)


#: Spending figures as a ledger holds them: spent, in flight (USD), requests in flight, the
#: largest completion seen (the fields of :class:`Shared`).
Figures = Tuple[float, float, int, Optional[int]]


class Ledger(Protocol):
    """Where the processes of one run share their spending (the cache's
    :class:`defan_pytest.cache.coordination.SpendingLedger`)."""

    def exchange(self, decide: Callable[[Figures], Tuple[T, bool]], mine: Callable[[], Figures]) -> T:
        """In one transaction: read the others' figures, ``decide`` on them (``(result,
        changed)``), and publish ``mine()`` when they changed; returns the result."""
        ...

    def publish(self, spent: float, inflight: float, requests: int, largest: Optional[int]) -> None:
        """Publish this process's spending, booking, requests in flight and largest completion."""
        ...

    def others(self) -> Figures:
        """What the other processes show."""
        ...


class Budget:
    """The pool's spending account (``--defan-budget``): a prompt is sent only while what was
    spent, plus what the requests in flight may cost, plus its own estimate stays within
    ``limit``.  When only this process's requests in flight stand in the way, the prompt waits
    for them (what they really cost decides); when the spending alone leaves no room, it is
    refused, and so is every prompt after it (the run stops asking).

    A request is booked at its prompt (from its length, scaled by what the provider counted so
    far) and a completion of ``max_tokens`` when the model caps it, else of the largest
    completion seen so far (by any process of the run).  Before any answer has come back the
    completion is a guess (``completion_tokens``), so a process sends one request and waits for
    it before it fills its window: the spending can pass the limit only by what the requests in
    flight cost beyond their booking.  The requests in flight (this process's and the others')
    are valued again at every decision, at no less than the current estimate each.  An answer
    the provider sent but that could not be read (no usage) is charged at its booking.

    ``ledger``: where the processes of one run (xdist workers) share their spending
    (:class:`Ledger`), so that together they stay within the one limit; a decision reads the
    others' figures and books in one transaction.  ``cache``: the ``--defan-cache`` mode, for
    what the message of an unsent prompt says about a resumed run.

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
                 max_tokens: Optional[int] = None, system_prompt: Optional[str] = None, ledger: Optional[Ledger] = None,
                 cache: str = "use") -> None:
        self.limit = float(limit)
        self.ledger = ledger
        self.price = price
        self.system_prompt = system_prompt
        capped = isinstance(max_tokens, int) and not isinstance(max_tokens, bool) and max_tokens > 0
        self.cap = max_tokens if capped else None
        self.cache = cache
        self.spent = 0.0
        self.inflight = 0.0  # USD booked for this process's requests in flight
        self.stopped = False
        self.refused = 0  # prompts not sent
        self.charged = 0  # answers that could not be read, charged at their booking
        self._booked = 0  # requests in flight
        self._guess = int(completion_tokens)
        self._largest: Optional[int] = None  # the largest completion this process saw
        self._shared_largest: Optional[int] = None  # ... and the run's, as last read
        self._ratio_num = 0.0
        self._ratio_den = 0.0
        self._refusal: Tuple[float, float, float, str] = (0.0, 0.0, 0.0, "")

    # -- estimates -------------------------------------------------------------------------

    def _known(self) -> Optional[int]:
        """The largest completion seen by any process of the run, if one came back."""
        seen = [n for n in (self._largest, self._shared_largest) if n is not None]
        return max(seen) if seen else None

    def completion(self) -> Tuple[int, str]:
        """Completion tokens a request is booked at, and where the figure comes from."""
        known = self._known()
        if self.cap is not None:
            if known is not None and known > self.cap:  # a provider that ignores max_tokens
                return known, "the largest answer so far, above max_tokens"
            return self.cap, f"max_tokens={self.cap}"
        if known is not None:
            return known, "the largest answer so far"
        return self._guess, "a typical answer: none has come back yet"

    def _prompt_tokens(self, prompt: str) -> float:
        ratio = self._ratio_num / self._ratio_den if self._ratio_den else 1.0
        return estimate_prompt_tokens(prompt, self.system_prompt) * ratio

    def estimate(self, prompt: str) -> float:
        """The cost ``prompt``'s request is booked at, from what has come back so far."""
        return self.price.cost(self._prompt_tokens(prompt), self.completion()[0])

    # -- deciding --------------------------------------------------------------------------

    def decide(self, prompt: str) -> Tuple[str, float]:
        """``("send", booked)``: send ``prompt``, its estimated cost is booked; ``("wait", 0)``:
        the requests in flight must come back first; ``("refuse", 0)``: never (the run stops)."""
        if self.stopped:
            self.refused += 1
            return self.REFUSE, 0.0
        if self.ledger is None:
            return self._decide(prompt, Shared())[0]
        return self.ledger.exchange(lambda others: self._decide(prompt, Shared(*others)), self._mine)

    def _decide(self, prompt: str, others: Shared) -> Tuple[Tuple[str, float], bool]:
        """The decision on ``prompt`` given the other processes' figures, and whether this
        process's published figures changed."""
        if others.largest is not None:
            self._shared_largest = others.largest
        cost = self.estimate(prompt)
        known = self.cap is not None or self._known() is not None
        # Requests in flight are worth at least what one costs now (a larger answer seen since
        # they were booked raises them all).  What other processes have in flight counts as
        # spent: a prompt waits only for this process's own requests, whose settlements wake
        # it (another process may die with requests booked, and would keep a waiter for ever).
        committed = self.spent + others.spent + max(others.inflight, others.requests * cost)
        mine = max(self.inflight, self._booked * cost)
        if committed + cost > self.limit:
            if not known and not self._booked and committed < self.limit:
                # Nothing has come back yet: the estimate is a guess, and one request tells
                # what answers cost -- send one, and wait for it.
                return (self.SEND, self._book(cost)), True
            if self._booked:
                return (self.WAIT, 0.0), False  # what comes back may lower the estimate
            self.stopped = True
            self.refused += 1
            self._refusal = (self.spent + others.spent, max(others.inflight, others.requests * cost), cost,
                             self.completion()[1])
            return (self.REFUSE, 0.0), False
        if self._booked and (not known or committed + mine + cost > self.limit):
            # This process's requests in flight stand in the way -- or no answer has come back
            # yet, and its size is unknown: one request at a time until one has.
            return (self.WAIT, 0.0), False
        return (self.SEND, self._book(cost)), True

    def _book(self, cost: float) -> float:
        self._booked += 1
        self.inflight += cost
        return cost

    def _unbook(self, booked: float) -> None:
        self._booked = max(0, self._booked - 1)
        # Exactly 0 with nothing in flight: float residues would read as a request in flight.
        self.inflight = max(0.0, self.inflight - booked) if self._booked else 0.0

    def _mine(self) -> Figures:
        return self.spent, self.inflight, self._booked, self._largest

    def _publish(self) -> None:
        if self.ledger is not None:
            self.ledger.publish(*self._mine())

    # -- settling --------------------------------------------------------------------------

    def settle(self, booked: float, prompt_tokens: Optional[int], completion_tokens: Optional[int],
               prompt: Optional[str] = None) -> None:
        """A request came back: its booking is replaced by what the provider counted (a count
        it did not give is taken at the booking's estimate; nothing counted keeps the booking)."""
        completion_booked = self.completion()[0]
        self._unbook(booked)
        if prompt_tokens is None and completion_tokens is None:
            self.spent += booked
            self._publish()
            return
        if prompt_tokens is None:
            prompt_cost = max(0.0, booked - self.price.cost(0, completion_booked))
        else:
            prompt_cost = self.price.cost(prompt_tokens, 0)
        completion = completion_tokens if completion_tokens is not None else completion_booked
        self.spent += prompt_cost + self.price.cost(0, completion)
        if completion_tokens is not None:
            self._largest = max(self._largest or 0, completion_tokens)
        if prompt_tokens is not None and prompt is not None:
            self._ratio_num += prompt_tokens
            self._ratio_den += estimate_prompt_tokens(prompt, self.system_prompt)
        self._publish()

    def charge(self, booked: float) -> None:
        """A request the provider answered but whose answer could not be read (:func:`billed`):
        it may have been billed, and is charged at its booking."""
        self.charged += 1
        self.settle(booked, None, None)

    def cancel(self, booked: float) -> None:
        """A request failed for good: its booking is released (a failed request is not billed)."""
        self._unbook(booked)
        self._publish()

    # -- the message -----------------------------------------------------------------------

    def message(self) -> str:
        """The error of a prompt not sent: what was spent and booked, and what its request was
        estimated at (and why)."""
        spent, others_inflight, cost, why = self._refusal
        booked = (f", {format_usd(others_inflight)} booked for other processes' requests in flight"
                  if others_inflight > 1e-12 else "")  # not a float residue
        charged = f" with {charged_note(self.charged)}" if self.charged else ""
        if self.cache == "off":
            resume = "--defan-cache=off keeps no answer: a run with a larger budget asks every prompt again"
        elif self.cache == "refresh":
            resume = ("every answer is kept in the cache: run again with a larger budget, without "
                      "--defan-cache=refresh, to ask only the rest")
        else:
            resume = "every answer is kept in the cache: run again with a larger budget to ask the rest"
        return (
            f"{BUDGET_ERROR}: not sent: --defan-budget {format_usd(self.limit)} would be passed ({format_usd(spent)} "
            f"spent{charged}{booked}; the next request ~{format_usd(cost)}, its completion taken as {why}); {resume}"
        )
