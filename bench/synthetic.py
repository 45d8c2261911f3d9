"""Synthetic responses for benchmarks: gold values in varied written forms, sentences, wrong
values, refusals and reasoning blocks, chosen deterministically from the row id."""
from __future__ import annotations

import hashlib
import re
from typing import List

from defan_pytest.scoring.text.numbers.parse import parse_number
from defan_pytest.scoring.types import parse_gold

_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December"]


def _h(key: str) -> int:
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "big")


def _value_forms(type_: str, answer: str) -> List[str]:
    gold = parse_gold(type_, answer)
    if gold.empty:
        return ["None", "No prize was awarded that year"]
    alt = gold.alternatives[0]
    if type_ == "numeric":
        v = parse_number(alt)
        if v is None:
            return [alt]
        forms = [alt, f"{v:,}" if v == v.to_integral_value() else str(v)]
        return forms
    if type_ == "rank":
        r = gold.values[0] if gold.values else alt
        return [str(r), f"{r}th" if isinstance(r, int) else str(r), f"#{r}"]
    if type_ == "date":
        y, m, d = gold.values[0]
        if m is None or d is None:
            return [str(y)]
        return [f"{m:02d}/{d:02d}/{y}", f"{_MONTHS[m - 1]} {d}, {y}", f"{d} {_MONTHS[m - 1]} {y}", f"{y}-{m:02d}-{d:02d}"]
    return [alt]


def _wrong(type_: str, answer: str, key: str) -> str:
    if type_ in ("numeric", "rank"):
        n = re.sub(r"[^\d]", "", answer) or "7"
        return str(int(n) + 1 + _h(key) % 97)
    if type_ == "date":
        return "March 3, 1950"
    return ["John Smith", "Albert Einstein", "Paris, France", "Marie Curie"][_h(key) % 4]


def respond(row_id: str, question: str, answer: str, type_: str) -> str:
    """A response to one row, one of twelve styles picked by the row id."""
    forms = _value_forms(type_, answer)
    value = forms[_h(row_id) % len(forms)]
    wrong = _wrong(type_, answer, row_id)
    style = _h(row_id + "/style") % 12
    if style in (0, 1, 2):
        return value
    if style == 3:
        return wrong
    if style == 4:
        return f"The answer is {value}."
    if style == 5:
        return f"According to my knowledge, it was {value}."
    if style == 6:
        return f"**{value}**"
    if style == 7:
        return f"<think>The question asks: {question[:60]}. Let me recall.</think>\n{value}"
    if style == 8:
        return f"I believe it was {wrong}, but I'm not certain."
    if style == 9:
        return "I'm sorry, I don't have access to that information."
    if style == 10:
        return f"Answer: {value}"
    return f"Based on the records, {value} is correct for this question.\n\nLet me know if you need more."
