"""The one validator of a user's record, whichever format it was read from: a row of a user's
own set, or a line of a responses file (``defan score``).

A record holds ``question`` (or ``questions``), ``answer`` (a string, or a JSON number kept as
written), ``type``, and optionally ``domain`` and ``group``; a response record adds
``response`` and ``error``.  Text is sanitised here, where it enters.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from defan_pytest.dataset.checks import gold_problem
from defan_pytest.dataset.formats import is_text
from defan_pytest.errors import type_name
from defan_pytest.records.finish import is_finish_reason
from defan_pytest.safetext import has_controls, sanitize

__all__ = ["Record", "validate_record"]


@dataclass(slots=True)
class Record:
    """One validated record before grouping (``response``/``error`` only in a responses file)."""

    where: str
    ref: str
    line: int
    domain: str
    group: str | None
    question: str
    answer: str
    type: str
    response: str | None = None
    error: str | None = None
    #: A responses line's own prompt id (``<domain>-q<group>-p<paraphrase>``, the plugin's), if given.
    id: str | None = None
    #: A responses line's finish reason (``length``: cut by the token limit), if given.
    finish_reason: str | None = None


# A responses line's ``id``: the plugin's prompt id after ``<domain>-`` (dataset.Row.id), so that
# ``defan score``'s report pairs with the plugin's row by row (records.rows checks the same form).
_PROMPT_ID = re.compile(r"(q[0-9]{4,})-p[0-9]{2,}")


def validate_record(
    where: str,
    ref: str,
    line: int,
    record: Any,
    default_domain: str,
    problems: list[str],
    types: Mapping[str, str],
    responses: bool = False,
    notes: list[str] | None = None,
) -> Record | None:
    """Check one record; append its problems and return ``None`` if it has any.

    ``types`` maps a normalised answer type to its canonical string
    (:func:`~defan_pytest.dataset.checks.type_table`, built once per file). With ``responses``
    the record is a line of a responses file and must also carry ``response`` (a string;
    ``null`` or absent only with an ``error``) and may carry ``error`` (a string or ``null``; a
    blank one means no error), ``finish_reason`` (the provider's word, ``stop`` or ``length``,
    or ``null``) and ``id`` (the plugin's prompt id of the line's domain,
    ``<domain>-q<group>-p<paraphrase>``: the line's group is then the id's, and a ``group``
    given beside it must be that group key).

    Text is sanitised here, where it enters: a lone surrogate (which JSON's ``\\ud800`` escape
    can put in a string, and which no UTF-8 output can hold) becomes U+FFFD, and ``notes`` gets
    a line saying where.  A value-typed gold that holds no value of its type (``abc`` for a
    ``numeric`` row) is a problem: it could never be matched, and every response to it would
    count as a hallucination.
    """
    if not isinstance(record, dict):
        keys = "question, answer, type and response" if responses else "question, answer and type"
        problems.append(f"{where}: expected an object with {keys}, found {type_name(record)}")
        return None
    record = _sanitized(record, where, notes)
    own: list[str] = []
    question = _question(record, own)
    answer = _answer(record, own)
    type_ = _type(record, types, own)
    domain = _domain(record, default_domain, own)
    group = _group(record, own)
    response, error = _response_and_error(record, own) if responses else (None, None)
    row_id = finish = None
    if responses:
        row_id, group = _id_and_group(record, domain, group, own)
        finish = _finish_reason(record, own)
    if answer is not None and type_ is not None:
        bad_gold = gold_problem(type_, answer)
        if bad_gold is not None:
            own.append(bad_gold)
    if own:
        problems.extend(f"{where}: {p}" for p in own)
        return None
    assert question is not None and answer is not None and type_ is not None
    return Record(where, ref, line, domain, group, question, answer, type_, response, error, row_id, finish)


def _id_and_group(record: dict[str, Any], domain: str, group: str | None,
                  own: list[str]) -> tuple[str | None, str | None]:
    """A responses line's ``id`` and its group: the id's group key when it has an id."""
    raw = record.get("id")
    if raw is None:
        return None, group
    if not is_text(raw):
        own.append(f"id must be a string, found {type_name(raw)}")
        return None, group
    m = _PROMPT_ID.fullmatch(raw[len(domain) + 1:]) if raw.startswith(f"{domain}-") else None
    if m is None:
        own.append(f"id {raw[:80]!r} is not a prompt id of domain {domain!r} ({domain}-q<group>-p<paraphrase>, "
                   "as the plugin's report names a row)")
        return None, group
    key = f"{domain}-{m.group(1)}"
    if group is not None and group != key:
        own.append(f"group {group[:80]!r} is not the group of id {raw!r} ({key!r}): give that group or none")
        return None, group
    return str(raw), key


def _finish_reason(record: dict[str, Any], own: list[str]) -> str | None:
    """A responses line's ``finish_reason`` (``null`` or absent: unknown)."""
    raw = record.get("finish_reason")
    if raw is None:
        return None
    if not is_finish_reason(raw):
        shown = repr(raw)[:80] if isinstance(raw, str) else type_name(raw)
        own.append(f"finish_reason must be the provider's word (stop, length, ...) or null, found {shown}")
        return None
    return str(raw)


def _question(record: dict[str, Any], own: list[str]) -> str | None:
    if "question" in record and "questions" in record:
        own.append("both 'question' and 'questions'; keep one")
        return None
    raw_q = record.get("question", record.get("questions"))
    if raw_q is None:
        own.append("missing 'question'")
    elif not is_text(raw_q):
        own.append(f"question must be a string, found {type_name(raw_q)}")
    elif not raw_q.strip():
        own.append("empty question")
    else:
        return str(raw_q.strip())
    return None


def _answer(record: dict[str, Any], own: list[str]) -> str | None:
    if "answer" not in record or record["answer"] is None:
        own.append("missing 'answer' (use \"\" for an empty gold)")
        return None
    raw_a = record["answer"]
    if isinstance(raw_a, str):
        # Raw (gold parsing happens in scoring.types.parse_gold); a JSON float keeps its
        # literal text.
        return str(raw_a)
    if isinstance(raw_a, int) and not isinstance(raw_a, bool):
        return str(raw_a)
    # booleans, objects, arrays, and NaN/Infinity (which json.loads accepts)
    own.append(f"answer must be a string or a finite number, found {type_name(raw_a)}")
    return None


def _type(record: dict[str, Any], types: Mapping[str, str], own: list[str]) -> str | None:
    raw_t = record.get("type")
    if raw_t is None:
        own.append("missing 'type'")
        return None
    if not is_text(raw_t):
        own.append(f"type must be a string, found {type_name(raw_t)}")
        return None
    type_ = types.get(raw_t.strip().lower())
    if type_ is None:
        own.append(f"unknown type {raw_t!r} (expected one of {', '.join(types)})")
    return type_


def _domain(record: dict[str, Any], default_domain: str, own: list[str]) -> str:
    domain = default_domain
    raw_d = record.get("domain")
    if raw_d is not None:
        if not is_text(raw_d):
            own.append(f"domain must be a string, found {type_name(raw_d)}")
        elif raw_d.strip():
            domain = raw_d.strip()
        # An empty domain cell means "the file's default domain", like a missing key.
    if has_controls(domain):
        # A domain name is printed everywhere (test ids, tables, gate verdicts, CI logs): a
        # newline in it would start a line of its own (a workflow command, say), an escape code
        # would reach the terminal.
        own.append(f"domain {domain!r} holds control characters (a newline, a tab, an escape code); "
                   "a domain name is one line of plain text")
    return domain


def _group(record: dict[str, Any], own: list[str]) -> str | None:
    if "group" not in record:
        return None
    raw_g = record["group"]
    if isinstance(raw_g, bool) or not (is_text(raw_g) or isinstance(raw_g, int)):
        own.append(f"group must be a string or an integer label, found {type_name(raw_g)}")
    elif isinstance(raw_g, str) and not raw_g.strip():
        own.append("empty group label")
    else:
        # 7 and "7" are one label: a CSV has only strings, a JSON file may mix.
        return str(raw_g).strip()
    return None


def _response_and_error(record: dict[str, Any], own: list[str]) -> tuple[str | None, str | None]:
    """The ``response`` and ``error`` of a line of a responses file."""
    response: str | None = None
    error: str | None = None
    raw_e = record.get("error")
    if raw_e is not None and not is_text(raw_e):
        own.append(f"error must be a string or null, found {type_name(raw_e)}")
    elif raw_e is not None and raw_e.strip():
        # "" or blank is what converters write for "no error"; only a message counts.
        error = raw_e
    if "response" not in record:
        if error is None:
            own.append("missing 'response' (only a failed call, with an 'error', may lack one)")
    else:
        raw_r = record["response"]
        if raw_r is None:
            if error is None:
                own.append("response is null but there is no 'error' (only a failed call may lack a response)")
        elif not is_text(raw_r):
            own.append(f"response must be a string, found {type_name(raw_r)}")
        else:
            response = raw_r
    return response, error


# The keys whose text a record's reader uses (others are ignored, and so never sanitised).
_TEXT_KEYS = ("question", "questions", "answer", "type", "domain", "group", "response", "error", "id")


def _sanitized(record: dict[str, Any], where: str, notes: list[str] | None) -> dict[str, Any]:
    """``record`` with lone surrogates in its text replaced by U+FFFD (a copy when any was)."""
    fixed: dict[str, str] = {}
    for key in _TEXT_KEYS:
        value = record.get(key)
        if isinstance(value, str):
            clean, changed = sanitize(value)
            if changed:
                fixed[key] = clean
    if not fixed:
        return record
    if notes is not None:
        notes.append(f"{where}: {', '.join(fixed)}: invalid characters (lone surrogates) replaced by U+FFFD")
    return {**record, **fixed}
