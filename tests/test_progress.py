"""The progress line: live on a terminal, plain lines in CI logs."""
from __future__ import annotations

import threading
from typing import Callable, Optional

from defan_pytest.report.progress import ProgressPrinter, Throughput, format_progress


def test_format_progress_has_every_figure() -> None:
    stats = {"total": 1000, "done": 250, "calls": 200, "cache_hits": 50, "retries": 3, "errors": 2}
    line = format_progress(stats, 10.0, eta=30.0)
    assert line == "defan: 250/1,000 prompts (25%), 20.0 req/s, ETA 30s, 50 cached, 3 retries, 2 errors"
    assert "ETA" not in format_progress(stats, 10.0)  # no ETA until it means something
    assert "ETA 1h23m" in format_progress({"total": 10_000, "done": 1, "calls": 1}, 0.5, eta=4980.0)


def feed(pace: Pace, moments: list[tuple[float, int, int]], total: int) -> list[Optional[float]]:
    """The ETA after each (time, prompts done, of them cache hits) of a run of ``total`` prompts."""
    out = []
    for now, done, hits in moments:
        pace.add(now, {"total": total, "done": done, "cache_hits": hits})
        out.append(pace.eta())
    return out


def test_no_eta_from_a_slow_start() -> None:
    """A run whose first answer comes after 43 s of start-up (a model loading), then 8 a second:
    the first ETA used to be 7h10m (600 prompts at 43 s each); now there is none until ten
    answers over five seconds, and then it is the pace since the first answer."""
    ticks = [(0.5 * i, 0, 0) for i in range(1, 87)]  # nothing answered for 43 s
    ticks += [(43.0 + 0.5 * k, 1 + 4 * k, 0) for k in range(0, 20)]  # then 8 answers a second
    etas = feed(Throughput(), ticks, total=600)
    assert all(e is None for e in etas[:86 + 10])  # the start-up, then under 5 s of answers
    first = next(e for e in etas if e is not None)
    remaining = 600 - ticks[etas.index(first)][1]
    assert 0.9 * remaining / 8 <= first <= 1.2 * remaining / 8  # near the truth, not hours
    assert max(e for e in etas if e is not None) < 90


def test_cache_hits_are_no_pace_and_a_finished_run_has_nothing_left() -> None:
    # 900 cache hits at once, then one answer a second: the hits say nothing of the calls' pace.
    etas = feed(Throughput(), [(1.0, 900, 900)] + [(1.0 + k, 900 + k, 900) for k in range(1, 31)], total=1000)
    assert etas[-1] is not None and 60 <= etas[-1] <= 80  # 70 left at one a second
    assert feed(Throughput(), [(1.0, 5, 0)], total=5) == [0.0]


def recorder(lines: list[str]) -> tuple[Callable[[str], None], threading.Event]:
    """A ``write`` keeping the lines, and an event set at the first one."""
    written = threading.Event()

    def write(line: str) -> None:
        lines.append(line)
        written.set()

    return write, written


def test_plain_lines_in_logs_and_a_live_line_on_a_terminal() -> None:
    stats = {"total": 4, "done": 0, "calls": 0}
    plain: list[str] = []
    write, written = recorder(plain)
    printer = ProgressPrinter(write, lambda: dict(stats), live=False, interval=0.05).start()
    assert written.wait(60)  # a line printed while the run goes on
    stats["done"] = 4
    printer.stop()
    assert len(plain) >= 2 and all(l.endswith("\n") and not l.startswith("\r") for l in plain)
    assert plain[-1].startswith("defan: 4/4 prompts (100%)")

    live: list[str] = []
    write, written = recorder(live)
    printer = ProgressPrinter(write, lambda: dict(stats), live=True, tick=0.02).start()
    assert written.wait(60)
    printer.stop()
    assert all(l.startswith("\r") for l in live) and live[-1].endswith("\n")
    assert sum(l.endswith("\n") for l in live) == 1


def test_a_stall_holds_the_eta_and_a_long_one_hides_it() -> None:
    """Two answers a second for 20 s, then none for 90 s (a server stalled): the ETA held at
    the last answer's never climbs second by second, and once the stall outlasts the window the
    ETA is not shown (no pace to read); answers again give it back."""
    ticks = [(0.5 * k, k, 0) for k in range(1, 41)]  # 40 answers in 20 s
    stall = [(20.0 + 0.5 * k, 40, 0) for k in range(1, 181)]  # nothing for 90 s
    etas = feed(Throughput(), ticks + stall, total=240)
    held = etas[len(ticks) - 1]
    assert held is not None and 90 <= held <= 110  # 200 left at two a second
    during = etas[len(ticks):]
    assert all(e is None or e == held for e in during)  # held, never climbing
    assert during[-1] is None  # 90 s without an answer: no pace to speak of
    again = feed(Throughput(), ticks + stall + [(110.0 + 0.5 * k, 40 + k, 0) for k in range(1, 31)], total=240)
    assert again[-1] is not None
