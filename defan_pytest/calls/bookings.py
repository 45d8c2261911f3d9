"""The budget's bookings of the requests of the call pool's :class:`~defan_pytest.calls.asker.Asker`
(``--defan-budget``): a prompt is sent only while the spending plus the requests in flight stays
within the budget; a request waits while only requests in flight stand in the way.
"""
from __future__ import annotations

import asyncio
import threading
from typing import TYPE_CHECKING, Callable, List, Optional, Tuple

from defan_pytest.calls.budget import billed

if TYPE_CHECKING:
    from defan_pytest.calls.budget import Budget

__all__ = ["Bookings"]


class Bookings:
    """The bookings part of the asker: ``budget`` (``None``: no budget), ``stop`` and
    ``halted`` as the asker has them."""

    budget: "Optional[Budget]"
    stop: threading.Event
    halted: Callable[[], bool]
    _budget_waiters: "List[asyncio.Future[None]]"

    async def _rebook(self, text: str, booked: Optional[float], notes: List[str]) -> Tuple[bool, Optional[float]]:
        """Whether ``text`` may be asked again, and its booking: the open one, or (the last
        attempt was charged) a new one, refused when the budget would be passed."""
        if booked is not None:
            return True, booked
        verdict, booked = await self._book(text)
        if verdict == "send":
            return True, booked
        notes.append("not asked again: " + ("--defan-budget would be passed" if verdict == "refuse" else "the run stopped"))
        return False, None

    async def _book(self, text: str) -> Tuple[str, float]:
        """The budget's verdict on sending ``text`` (``send`` with the booked cost, ``refuse``),
        waiting while only the requests in flight stand in the way; ``stopped`` if the run
        stopped meanwhile."""
        assert self.budget is not None
        while True:
            if self.stop.is_set() or self.halted():
                return "stopped", 0.0
            verdict, booked = self.budget.decide(text)
            if verdict != "wait":
                return verdict, booked
            # No await between the decision and the wait: a settlement cannot slip between.
            # (The budget waits only for this pool's own requests: their settlements wake it.)
            waiter = asyncio.get_running_loop().create_future()
            self._budget_waiters.append(waiter)
            await waiter

    def _unbook(self, booked: Optional[float]) -> None:
        """A booked request failed for good, or was never sent: release its booking (``None``:
        it was settled already)."""
        if self.budget is not None and booked is not None:
            self.budget.cancel(booked)
            self._budget_changed()

    def _charge(self, booked: Optional[float], exc: BaseException) -> Optional[float]:
        """A failed request the provider may have billed (an answer that could not be read:
        :func:`~defan_pytest.calls.budget.billed`) is charged at its booking; returns the
        booking still open (``None``: settled)."""
        if self.budget is None or booked is None or not billed(exc):
            return booked
        self.budget.charge(booked)
        self._budget_changed()
        return None

    def _budget_changed(self) -> None:
        """A booking was settled or cancelled: the prompts waiting for room look again."""
        waiters, self._budget_waiters = self._budget_waiters, []
        for w in waiters:
            if not w.done():
                w.set_result(None)

