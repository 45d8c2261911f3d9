"""The progress line: live on a terminal, plain lines in CI logs."""
from __future__ import annotations

import threading
from typing import Callable

from defan_pytest.report.progress import ProgressPrinter, format_progress


def test_format_progress_has_every_figure() -> None:
    line = format_progress({"total": 1000, "done": 250, "calls": 200, "cache_hits": 50, "retries": 3, "errors": 2}, 10.0)
    assert line == "defan: 250/1,000 prompts (25%), 20.0 req/s, ETA 30s, 50 cached, 3 retries, 2 errors"
    assert "ETA ?" in format_progress({"total": 5, "done": 0}, 1.0)
    assert "ETA 1h23m" in format_progress({"total": 10_000, "done": 1, "calls": 1}, 0.5)


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
