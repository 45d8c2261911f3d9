"""Issue 34 (1): scoring costs time and memory linear in an answer's length, for every type,
and the scorer's memos are bounded in bytes.

Measured by counting, never by the clock: the work is the calls the scorer makes (Python and C)
plus the characters of every new text handed to one of its own functions (a text passed on again
counts once: reading a window of it is no new work; a text rebuilt per match, as the long span of
a city answer was, counts each time); the memory is tracemalloc's peak.  Each is divided by the
answer's length and compared with the same figure of a one-line answer.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import tracemalloc
from pathlib import Path
from typing import Any, Dict, Tuple

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from defan_pytest.scoring.scorer import Scorer
from defan_pytest.scoring.text import memo

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = str(ROOT / "defan_pytest")

#: One prompt of each built-in type: (question, gold, a unit of the long answer, domain).
PROMPTS: Dict[str, Tuple[str, str, str, str]] = {
    "city": ("Where did CVPR take place in 2024? Give me the exact location only.", "Seattle, Washington",
             "Seattle ", "conference_venue"),
    "name": ("Who won the Nobel Prize in Physics in 1921?", "Albert Einstein", "Albert Einstein ", "nobel"),
    "numeric": ("What was the population of Dhaka in the 2011 census?", "8906039", "8906039 ", "census"),
    "date": ("When was the United Nations founded?", "24 October 1945", "24 October 1945 ", "world_org"),
    "rank": ("What was Kobe University's QS rank in 2022?", "386", "386th ", "qs_ranking"),
}
#: How many times a one-line answer's cost per character a long answer's may be.
WORK_FACTOR = 4
MEMORY_FACTOR = 4


def _score(scorer: Scorer, type_: str, response: str) -> Any:
    question, gold, _, domain = PROMPTS[type_]
    return scorer.score(question, gold, type_, response, domain=domain)


def _work(scorer: Scorer, type_: str, response: str) -> int:
    """The calls and the new texts' characters of scoring ``response`` (see the module)."""
    seen: Dict[int, str] = {}  # (kept alive: an id is not reused while counted)
    count = [0]

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "c_call":
            count[0] += 1
        elif event == "call":
            count[0] += 1
            code = frame.f_code
            if code.co_filename.startswith(PACKAGE):
                local = frame.f_locals
                for name in code.co_varnames[: code.co_argcount]:
                    v = local.get(name)
                    if isinstance(v, str) and id(v) not in seen:
                        seen[id(v)] = v
                        count[0] += len(v)

    sys.setprofile(profile)
    try:
        _score(scorer, type_, response)
    finally:
        sys.setprofile(None)
    return count[0]


def _peak(scorer: Scorer, type_: str, response: str) -> int:
    tracemalloc.start()
    try:
        _score(scorer, type_, response)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _one_line(type_: str, salt: int) -> str:
    # A fresh text each time: a memo must not make the baseline free.
    return f"I think it is {PROMPTS[type_][2].strip()}, as far as I know ({salt})."


def _long(type_: str, n: int) -> str:
    unit = PROMPTS[type_][2]
    return (unit * (n // len(unit) + 1))[:n]


@pytest.fixture(scope="module")
def scorer() -> Scorer:
    s = Scorer(nlp=None)
    for i, t in enumerate(PROMPTS):  # every lazy table loaded before any count
        _score(s, t, _one_line(t, i))
        _score(s, t, _long(t, 3000))
    return s


@pytest.mark.slow
@settings(max_examples=6, deadline=None, derandomize=True)
@given(type_=st.sampled_from(sorted(PROMPTS)), exponent=st.integers(min_value=10, max_value=17))
@example(type_="city", exponent=17)
@example(type_="name", exponent=16)
def test_work_per_character_is_bounded_by_a_one_line_answers(scorer: Scorer, type_: str, exponent: int) -> None:
    """Work per character within a constant of a one-line answer's, 1 KiB to 128 KiB (profiled:
    the counting itself is slow; the memory test below goes to 1 MiB)."""
    line = _one_line(type_, exponent)
    base = _work(scorer, type_, line) / len(line)
    n = 1 << exponent
    per_char = _work(scorer, type_, _long(type_, n)) / n
    assert per_char <= WORK_FACTOR * base, (type_, n, per_char, base)


@pytest.mark.slow
@settings(max_examples=6, deadline=None, derandomize=True)
@given(type_=st.sampled_from(sorted(PROMPTS)), exponent=st.integers(min_value=10, max_value=20))
@example(type_="city", exponent=20)
def test_memory_per_character_is_bounded_by_a_one_line_answers(scorer: Scorer, type_: str, exponent: int) -> None:
    """tracemalloc's peak per character within a constant of a one-line answer's, 1 KiB to 1 MiB."""
    line = _one_line(type_, exponent + 100)
    base = _peak(scorer, type_, line) / len(line)
    n = 1 << exponent
    per_char = _peak(scorer, type_, _long(type_, n)) / n
    assert per_char <= MEMORY_FACTOR * base, (type_, n, per_char, base)


def test_the_long_city_answer_of_the_issue_scores_under_a_memory_limit(tmp_path: Path) -> None:
    """``"Seattle " * 15000`` for a conference-venue prompt, in a process limited to 1 GiB of
    address space (``ulimit -v``): it took 6 GB and died of MemoryError."""
    script = tmp_path / "city.py"
    script.write_text(textwrap.dedent("""
        import defan_pytest
        s = defan_pytest.score(question="Where did CVPR take place in 2024? Give me the exact location only.",
                               response="Seattle " * 15000, gold="Seattle, Washington", type="city",
                               domain="conference_venue", nlp=None)
        print(s.verdict, s.claim)
    """))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(["bash", "-c", f'ulimit -v {1 << 20}; exec "{sys.executable}" "{script}"'],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["misaligned", "Seattle"]


def test_a_memo_is_bounded_in_bytes() -> None:
    calls = []

    @memo.short_text_memo(maxsize=1 << 20, max_bytes=64 * 1024)
    def echo(text: str) -> str:
        calls.append(text)
        return text

    for i in range(5000):
        echo(f"{i:04d}" + "x" * 1000)
    assert echo.cache_bytes() <= 64 * 1024 + 2 * (memo.ENTRY_BYTES + 1004)
    assert echo("0000" + "x" * 1000) and len(calls) == 5001  # the oldest are gone
    echo("short")
    echo("short")
    assert calls.count("short") == 1  # a kept text is not computed again
    echo("y" * (memo.MAX_KEY_CHARS + 1))
    echo("y" * (memo.MAX_KEY_CHARS + 1))
    assert calls.count("y" * (memo.MAX_KEY_CHARS + 1)) == 2  # a long text is never kept


def test_the_name_memo_keeps_no_long_text() -> None:
    from defan_pytest.scoring.text.names import name_tokens

    name_tokens.cache_clear()
    for i in range(50):
        name_tokens(f"Seattle {i} " + "Seattle " * 5000)
    assert name_tokens.cache_bytes() == 0
