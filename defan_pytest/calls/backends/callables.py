"""The backend of a user's own function (``@defan_pytest.model``): awaited when it is async, run
in a daemon thread (:class:`DaemonThreads`) when it is not.

A registered function may call any client (the openai SDK, httpx, its own pipeline), so its
failures are judged by what they say about themselves
(:meth:`~defan_pytest.calls.backends.base.BaseBackend.classify`): a ``ValueError`` of the
user's code is that prompt's error, a rate limit of the client it calls is retried.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import queue
import threading
from typing import Any, Callable, Optional, Set, Tuple

from defan_pytest.calls.backends.base import BaseBackend
from defan_pytest.calls.models import CallableModel, registered
from defan_pytest.calls.protocol import Caller, Reply, answer_reply

__all__ = ["CALLABLE", "CallableBackend", "CallableCaller", "DaemonThreads"]


class DaemonThreads:
    """Runs a sync callable's calls in daemon threads, reusing idle ones.

    Not a ``ThreadPoolExecutor``: Python joins its threads at exit, so one call that never
    returned kept the process alive for ever after the run had ended.  Here a call abandoned at
    its timeout keeps its thread (a daemon, which dies with the process), and a new thread takes
    the next call, so stuck calls never starve the others; :meth:`stuck` counts them.
    """

    def __init__(self, name: str = "defan-call") -> None:
        self.name = name
        self._jobs: "queue.SimpleQueue[Optional[Tuple[concurrent.futures.Future, Callable[..., Any], tuple]]]" = (
            queue.SimpleQueue()
        )
        self._idle = threading.Semaphore(0)
        self._lock = threading.Lock()
        self._threads = 0
        self._abandoned: Set[concurrent.futures.Future] = set()
        self._ids = itertools.count(1)

    def submit(self, fn: Callable[..., Any], *args: Any) -> "concurrent.futures.Future[Any]":
        """Run ``fn(*args)`` in an idle thread, or a new one."""
        fut: "concurrent.futures.Future[Any]" = concurrent.futures.Future()
        self._jobs.put((fut, fn, args))
        if not self._idle.acquire(blocking=False):
            with self._lock:
                self._threads += 1
            threading.Thread(target=self._work, name=f"{self.name}-{next(self._ids)}", daemon=True).start()
        return fut

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                with self._lock:
                    self._threads -= 1
                return
            fut, fn, args = job
            del job
            if fut.set_running_or_notify_cancel():
                try:
                    result = fn(*args)
                except BaseException as exc:  # noqa: BLE001 - handed to the waiting call
                    fut.set_exception(exc)
                else:
                    fut.set_result(result)
                    del result
            del fut, fn, args
            self._idle.release()

    def abandon(self, fut: "concurrent.futures.Future[Any]") -> None:
        """The call of ``fut`` timed out but its thread runs on: count it until it returns."""
        with self._lock:
            self._abandoned.add(fut)

        def forget(f: "concurrent.futures.Future[Any]") -> None:
            with self._lock:
                self._abandoned.discard(f)

        fut.add_done_callback(forget)

    def stuck(self) -> int:
        with self._lock:
            return len(self._abandoned)

    def close(self) -> None:
        """Let the idle threads end (a stuck one ends with the process)."""
        with self._lock:
            n = self._threads
        for _ in range(n):
            self._jobs.put(None)


class CallableBackend(BaseBackend):
    """A function registered with ``@defan_pytest.model``, whatever ``--defan-call-path`` says."""

    name = "callable"

    def knows(self, name: str) -> bool:
        return name in registered()

    def serves(self, model: Any, call_path: str, timeout: float) -> Tuple[bool, str]:
        if isinstance(model, CallableModel):
            return True, "a registered callable"
        return False, "not a registered callable"

    def caller(self, model: Any, timeout: float) -> Caller:
        return CallableCaller(model)


#: The backend of registered functions.
CALLABLE = CallableBackend()


class CallableCaller(Caller):
    """A user's function, awaited if async, else run in a daemon thread."""

    backend = CALLABLE

    def __init__(self, model: CallableModel) -> None:
        self.model = model
        self.name = model.name
        # The source digest: editing the function without changing its version= must not
        # reuse the answers of the old code.
        self.identity = {"kind": "callable", "name": model.name, "version": model.version, "source": model.source}
        self._threads = None if model.is_async else DaemonThreads(f"defan-call-{model.name}")

    async def __call__(self, prompt: str) -> Reply:
        if self._threads is None:
            out = await self.model.fn(prompt)
        else:
            fut = self._threads.submit(self.model.fn, prompt)
            try:
                out = await asyncio.wrap_future(fut)
            except asyncio.CancelledError:
                if not fut.done():
                    self._threads.abandon(fut)
                raise
        return answer_reply(out, self.name)

    def stuck(self) -> int:
        return 0 if self._threads is None else self._threads.stuck()

    def close(self) -> None:
        if self._threads is not None:
            self._threads.close()
