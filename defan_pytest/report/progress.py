"""Progress of the model calls: a live line on a terminal, a plain line every few seconds in CI
logs.  Cache hits are counted apart from calls."""
from __future__ import annotations

import threading
import time
from typing import Any, Callable, Dict, Mapping, Optional


def format_progress(stats: Mapping[str, Any], elapsed: float) -> str:
    """``done/total``, requests per second, ETA, cache hits, retries and errors in one line."""
    total = int(stats.get("total") or 0)
    done = int(stats.get("done") or 0)
    calls = int(stats.get("calls") or 0)
    rate = calls / elapsed if elapsed > 0 else 0.0
    remaining = max(0, total - done)
    per_done = elapsed / done if done else None
    eta = "?" if per_done is None else _duration(remaining * per_done)
    pct = 100.0 * done / total if total else 100.0
    return (
        f"defan: {done:,}/{total:,} prompts ({pct:.0f}%), {rate:.1f} req/s, ETA {eta}, "
        f"{int(stats.get('cache_hits') or 0):,} cached, {int(stats.get('retries') or 0):,} retries, "
        f"{int(stats.get('errors') or 0):,} errors"
    )


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


class ProgressPrinter:
    """Prints :func:`format_progress` of ``source()`` until stopped.

    On a terminal (``live``) the line is rewritten in place every ``tick`` seconds; otherwise a
    new line is printed every ``interval`` seconds, so CI logs stay readable.
    """

    def __init__(
        self,
        write: Callable[[str], None],
        source: Callable[[], Optional[Dict[str, Any]]],
        live: bool,
        interval: float = 10.0,
        tick: float = 0.5,
    ) -> None:
        self.write = write
        self.source = source
        self.live = live
        self.interval = interval
        self.tick = tick
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._started = time.monotonic()
        self._width = 0

    def start(self) -> "ProgressPrinter":
        self._started = time.monotonic()
        self._thread = threading.Thread(target=self._loop, name="defan-progress", daemon=True)
        self._thread.start()
        return self

    def _emit(self, final: bool = False) -> None:
        stats = self.source()
        if not stats:
            return
        line = format_progress(stats, time.monotonic() - self._started)
        if self.live:
            pad = max(0, self._width - len(line))
            self._width = len(line)
            self.write("\r" + line + " " * pad + ("\n" if final else ""))
        else:
            self.write(line + "\n")

    def _loop(self) -> None:
        wait = self.tick if self.live else self.interval
        while not self._stop.wait(wait):
            try:
                self._emit()
            except Exception:  # progress must never break a run
                return

    def stop(self) -> None:
        """Stop and print the final line."""
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join(timeout=5)
        self._thread = None
        try:
            self._emit(final=True)
        except Exception:
            pass
