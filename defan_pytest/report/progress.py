"""Progress of the model calls: a live line on a terminal, a plain line every few seconds in CI
logs.  Cache hits are counted apart from calls."""
from __future__ import annotations

import threading
import time
from collections import deque
from typing import Any, Callable, Deque, Dict, Mapping, Optional, Tuple


#: An ETA is shown once the calls' recent pace rests on at least this many answers ...
ETA_MIN_ANSWERS = 10
#: ... over at least this many seconds of calls (the first answers of a run come after its
#: start-up, a model loading, a pool warming up: a pace read from them says hours).
ETA_MIN_SECONDS = 5.0
#: The pace is the answers of the last this many seconds (a run's pace changes: a slow first
#: domain, a rate limit).
ETA_WINDOW = 60.0


def format_progress(stats: Mapping[str, Any], elapsed: float, eta: Optional[float] = None) -> str:
    """``done/total``, requests per second, the ETA (``eta`` seconds, shown only when given:
    see :class:`Throughput`), cache hits, retries and errors in one line."""
    total = int(stats.get("total") or 0)
    done = int(stats.get("done") or 0)
    calls = int(stats.get("calls") or 0)
    rate = calls / elapsed if elapsed > 0 else 0.0
    pct = 100.0 * done / total if total else 100.0
    when = "" if eta is None else f", ETA {_duration(eta)}"
    return (
        f"defan: {done:,}/{total:,} prompts ({pct:.0f}%), {rate:.1f} req/s{when}, "
        f"{int(stats.get('cache_hits') or 0):,} cached, {int(stats.get('retries') or 0):,} retries, "
        f"{int(stats.get('errors') or 0):,} errors"
    )


class Throughput:
    """The calls' recent pace, and the ETA it gives once it means something.

    :meth:`add` takes the time (monotonic seconds) and the figures of a moment of the run; the
    answers counted are the prompts done less the cache hits (a hit takes no time, and a
    resumed run's first thousand hits say nothing of its calls).  :meth:`eta` is the seconds
    left at the pace of the last :data:`ETA_WINDOW` seconds up to the last answer (a stall holds
    it, never climbs it), or ``None`` until that pace rests on :data:`ETA_MIN_ANSWERS` answers
    over :data:`ETA_MIN_SECONDS` (0 once every prompt is done).
    """

    def __init__(self) -> None:
        self._samples: Deque[Tuple[float, int]] = deque()
        self._remaining = 0
        self._now = 0.0

    def add(self, now: float, stats: Mapping[str, Any]) -> None:
        """One moment of the run."""
        done = int(stats.get("done") or 0)
        answered = done - int(stats.get("cache_hits") or 0)
        self._remaining = max(0, int(stats.get("total") or 0) - done)
        self._now = now
        if len(self._samples) == 1 and answered == self._samples[0][1]:
            # Nothing answered since the first moment: the clock starts at the last such moment,
            # the time before the first answer being start-up, not pace.
            self._samples[0] = (now, answered)
        elif not self._samples or answered != self._samples[-1][1]:
            # A moment is kept only when answers came: the pace is read up to the last answer, so
            # that a stall neither climbs the ETA second by second nor passes for pace; a stall
            # longer than the window leaves too few answers in it, and the ETA is not shown.
            self._samples.append((now, answered))
        while len(self._samples) > 2 and now - self._samples[1][0] >= ETA_WINDOW:
            self._samples.popleft()

    def eta(self) -> Optional[float]:
        """Seconds left, or ``None`` while the pace is not yet known."""
        if self._remaining == 0:
            return 0.0
        if len(self._samples) < 2:
            return None
        (t0, a0), (t1, a1) = self._samples[0], self._samples[-1]
        if a1 - a0 < ETA_MIN_ANSWERS or t1 - t0 < ETA_MIN_SECONDS or self._now - t1 > ETA_WINDOW:
            return None
        return self._remaining * (t1 - t0) / (a1 - a0)


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
        self._pace = Throughput()

    def start(self) -> "ProgressPrinter":
        self._started = time.monotonic()
        self._thread = threading.Thread(target=self._loop, name="defan-progress", daemon=True)
        self._thread.start()
        return self

    def _emit(self, final: bool = False) -> None:
        stats = self.source()
        if not stats:
            return
        now = time.monotonic()
        self._pace.add(now, stats)
        line = format_progress(stats, now - self._started, self._pace.eta())
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
