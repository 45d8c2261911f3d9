"""Fuzz tests (hypothesis) of everything a user hands defan-pytest: ``defan score`` input files,
``thresholds.toml`` files, option values, and saved reports (``defan gate``, ``compare``, ``html``
and ``merge``: schema-valid and not, NaN, deep nesting, rows twice, nulls in every place).

Whatever the input: never a traceback or an INTERNALERROR; bad input is exit 2 (``defan``) or a
usage error (exit 4, the plugin), each problem naming the offending line, key, option or file;
and no partial output file is left behind.  Deterministic (``derandomize``), and kept to a few
seconds per property.
"""
from __future__ import annotations

import contextlib
import io
import json
import math
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterator

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import defan_pytest
from defan_pytest.calls import models
from defan_pytest.cli import main
from defan_pytest.run import Run
from defan_pytest.settings import ConfigError, Settings
from defan_pytest.settings.options import OPTIONS
from defan_pytest.gates.thresholds import ThresholdsError, load_thresholds
from defan_pytest.dataset import shards
from defan_pytest.metrics.summary import summarize

from test_html_report import make_report

pytestmark = pytest.mark.usefixtures("dataset_env")

FAST = settings(max_examples=100, derandomize=True, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])

ESC = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # what must never reach the terminal raw

# Text with everything in it: lone surrogates, control characters, escape sequences.
any_text = st.text(alphabet=st.characters(blacklist_categories=()), max_size=30)
huge_digits = st.integers(4000, 6000).map(lambda n: "9" * n)


# --------------------------------------------------------------------------------------------
# defan score inputs
# --------------------------------------------------------------------------------------------

GOOD = {
    "numeric": ["42", "1,351,921", "42.850", "None", ""],
    "rank": ["386", "601-650", "=47"],
    "date": ["1 May 2000", "11/19/1946", "1999"],
    "name": ["Marie Curie", "Henri Becquerel;Pierre Curie"],
    "city": ["Paris, France", "Virtual"],
}
json_scalar = st.none() | st.booleans() | st.integers() | st.floats() | any_text
json_value = st.recursive(json_scalar, lambda c: st.lists(c, max_size=3) | st.dictionaries(any_text, c, max_size=3),
                          max_leaves=6)


# Responses are any text a model may write: all of these are valid input, and get scored.
responses = {
    t: st.sampled_from(v) | any_text | huge_digits.map(lambda d: f"It is {d}.") | st.just("1/" + "0" * 5000)
    | st.just("\x1b[31mred\x1b[0m \x9b2J") | st.just("a\ud800b")
    for t, v in GOOD.items()
}


@st.composite
def records(draw: Any, corrupt: bool = False) -> dict[str, Any]:
    """A well-formed line (any response: scoring runs), or with ``corrupt`` one key or value
    gone wrong."""
    type_ = draw(st.sampled_from(sorted(GOOD)))
    rec: dict[str, Any] = {
        "question": draw(st.sampled_from(["What is it?", "How many moons has Mars?"]) | any_text.filter(str.strip)),
        "answer": draw(st.sampled_from(GOOD[type_])),
        "type": type_,
        "response": draw(responses[type_]),
    }
    for key, values in (("domain", ["d1", "d2", ""]), ("group", ["g", "h", 7]), ("error", ["HTTP 503", "", None])):
        if draw(st.booleans()):
            rec[key] = draw(st.sampled_from(values))
    if rec.get("group") is not None:
        rec["type"], rec["answer"] = "numeric", "42"  # one type per group
    if corrupt:
        key = draw(st.sampled_from(["question", "answer", "type", "response", "domain", "group", "error"]))
        if draw(st.booleans()):
            rec[key] = draw(json_value | huge_digits)
        else:
            rec.pop(key, None)
    return rec


def _line(rec: dict[str, Any]) -> str:
    # ensure_ascii: a lone surrogate becomes its \ud800 escape, as JSON files hold it; NaN and
    # Infinity are written as json.dumps writes them (JSON does not allow them).
    return json.dumps(rec)


bad_lines = st.one_of(
    records(corrupt=True).map(_line),
    any_text,
    st.integers(1, 200_000).map(lambda n: "[" * n + "]" * n),             # deep nesting
    st.integers(1, 200_000).map(lambda n: '{"a": ' + "[" * n + "]" * n + "}"),
    huge_digits.map(lambda d: '{"question": "Q", "answer": ' + d + ', "type": "numeric", "response": "1"}'),
    st.just("questions,answer,type"), st.just("["), st.just("{"),
)


@st.composite
def file_bytes(draw: Any) -> bytes:
    """Half the time a file of good lines (scored); else good lines with bad ones among them,
    or bytes of any kind."""
    kind = draw(st.integers(0, 3))
    if kind == 3:
        return bytes(draw(st.binary(max_size=200)))
    lines = draw(st.lists(records().map(_line), min_size=1, max_size=4))
    if kind == 2:
        for bad in draw(st.lists(bad_lines, min_size=1, max_size=2)):
            lines.insert(draw(st.integers(0, len(lines))), bad)
    return "\n".join(lines).encode("utf-8", "surrogatepass")


@contextlib.contextmanager
def _captured() -> Iterator[tuple[io.StringIO, io.StringIO]]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        yield out, err


@FAST
@given(data=file_bytes())
def test_defan_score_never_crashes_and_names_the_line(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "responses.jsonl"
        path.write_bytes(data)
        report = Path(tmp) / "report.json"
        with _captured() as (out, err):
            rc = main(["score", str(path), "--json", str(report), "--spacy-model", "none"])
        stdout, stderr = out.getvalue(), err.getvalue()
        event(f"exit {rc}")  # --hypothesis-show-statistics: how often scoring was reached
        assert rc in (0, 2), stderr
        assert "Traceback" not in stderr
        assert not ESC.search(stdout + stderr), (stdout + stderr)[:500]
        if rc == 0:
            assert json.loads(report.read_text(encoding="utf-8"))["rows"]
        else:
            assert not report.exists()  # nothing half-written, nothing written at all
            problems = [ln for ln in stderr.splitlines() if ln.startswith("  - ")]
            assert problems, stderr
            for p in problems:
                assert re.match(rf"  - {re.escape(str(path))}(:\d+: |: no responses)", p), p
        assert sorted(os.listdir(tmp)) == sorted(["responses.jsonl"] + (["report.json"] if rc == 0 else []))


# --------------------------------------------------------------------------------------------
# thresholds.toml
# --------------------------------------------------------------------------------------------

TOML_KEYS = ["defaults", "domains", "overall", "models", "nobel", "math", "my-rag", "max_fch", "max_pmh", "min_rc",
             "max_error_rate", "min_samples", "figure", "model", "litellm", "temperature", "version", "x"]
toml_scalar = (st.integers(-(2**63), 2**63 - 1) | st.floats() | st.booleans() | any_text
               | st.sampled_from(["mean", "pooled", "1979-05-27T07:32:00Z", "1979-05-27"]))


def _toml_value(value: Any) -> str:
    """A value as TOML writes it (inline tables and arrays)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf") if math.isinf(value) else repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        if re.fullmatch(r"\d{4}-\d\d-\d\d(T.*)?", value):
            return value  # a TOML date or datetime
        return json.dumps(value)  # a basic string (a lone surrogate's escape is invalid TOML)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return "{" + ", ".join(f"{json.dumps(k)} = {_toml_value(v)}" for k, v in value.items()) + "}"


toml_values = st.recursive(
    toml_scalar, lambda c: st.lists(c, max_size=3) | st.dictionaries(st.sampled_from(TOML_KEYS), c, max_size=3),
    max_leaves=8,
)
toml_documents = st.dictionaries(
    st.sampled_from(TOML_KEYS),
    st.dictionaries(st.sampled_from(TOML_KEYS) | any_text, toml_values, max_size=4) | toml_values,
    max_size=4,
).map(lambda doc: "".join(
    f"[{json.dumps(k)}]\n" + "".join(f"{json.dumps(k2)} = {_toml_value(v2)}\n" for k2, v2 in v.items())
    if isinstance(v, dict) else f"{json.dumps(k)} = {_toml_value(v)}\n"
    for k, v in sorted(doc.items(), key=lambda kv: isinstance(kv[1], dict))
))
toml_ish = st.lists(
    st.sampled_from(["[defaults]", "[domains.nobel]", "[models.\"my-rag\".overall]", "max_fch = 0.5", "min_rc = 2",
                     "figure = \"pooled\"", "min_samples = -1", "x = [[[[", "a = {b = {c = 1}}", "[[defaults]]",
                     "max_pmh = nan", "# comment", "\"quoted\" = 1", "= 1", "[models.m.litellm" + ".a" * 40 + "]"])
    | any_text | st.integers(1, 5000).map(lambda n: "a = " + "[" * n + "]" * n),
    max_size=8,
).map("\n".join)


unit = st.floats(0, 1)


@st.composite
def good_thresholds(draw: Any) -> str:
    """A valid file (limits in a few tables), now and then with one key of any value added."""
    tables = {
        "defaults": {"max_fch": draw(unit), "min_samples": draw(st.integers(0, 50))},
        "domains.nobel": {"min_rc": draw(unit)},
        "overall": {"figure": draw(st.sampled_from(["mean", "pooled"])), "max_pmh": draw(unit)},
        'models."my-rag".domains.mine': {"max_error_rate": draw(unit)},
        'models."my-rga"': {"temperature": draw(unit)},
    }
    chosen = draw(st.lists(st.sampled_from(sorted(tables)), min_size=1, max_size=4, unique=True))
    if draw(st.booleans()):
        table = draw(st.sampled_from(chosen))
        tables[table] = {**tables[table], draw(st.sampled_from(TOML_KEYS) | any_text): draw(toml_values)}
    return "".join(
        f"[{name}]\n" + "".join(f"{json.dumps(k)} = {_toml_value(v)}\n" for k, v in tables[name].items())
        for name in chosen
    )


@st.composite
def thresholds_bytes(draw: Any) -> bytes:
    kind = draw(st.integers(0, 4))
    if kind == 4:
        return bytes(draw(st.binary(max_size=200)))
    text = draw([good_thresholds(), good_thresholds(), toml_documents, toml_ish][kind])
    return text.encode("utf-8", "surrogatepass")


@FAST
@given(data=thresholds_bytes(), required=st.booleans())
def test_thresholds_never_crash_and_name_the_key_or_line(data: bytes, required: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "thresholds.toml"
        path.write_bytes(data)
        try:
            parsed = load_thresholds(path, extra_domains=["mine"], model="my-rag", required=required)
            event("valid")
        except ThresholdsError as exc:
            event("problems")
            assert exc.problems
            for p in exc.problems:
                assert p.startswith(f"{path}: "), p
                assert re.match(rf"{re.escape(str(path))}: (line \d+|\S.*: |sets no limit)", p), p
        else:
            assert parsed.sets_limits or not required


# --------------------------------------------------------------------------------------------
# option values: Settings.parse and Run.configure, then a few real sessions
# --------------------------------------------------------------------------------------------

ROWS = [
    {"question": f"How many moons has planet {g}?", "answer": str(g + 1), "type": "numeric", "domain": "sky",
     "group": f"g{g}"}
    for g in range(3)
]


def _safe_path_text(s: str) -> bool:
    # Random text must stay a name inside the test's folder: never the public split (a
    # download), an absolute path or a way out of the folder.
    t = s.strip()
    return bool(t) and t.lower() != "public" and not t.startswith(("/", "~", ".")) and ".." not in t and "\x00" not in t


def _not_a_number(s: str) -> bool:
    # A random tiny --defan-rpm or --defan-timeout would make a real session crawl, not fail.
    try:
        float(s)
    except ValueError:
        return True
    return False


path_text = any_text.filter(_safe_path_text)
OPTION_VALUES: dict[str, Any] = {
    "model": st.sampled_from(["fuzz-model", "fuzz-modle", "openai/gpt-4o-mini", "", " ", "fuzz-model,fuzz-modle",
                              "fuzz-model, fuzz-model", ","]) | any_text,
    "compare-to": st.sampled_from(["", "fuzz-model", "fuzz-modle", " "]) | any_text,
    "domain": st.lists(st.sampled_from(["sky", "", ",", "nobel", "sky,sky"]) | any_text, max_size=3),
    # Never empty here: that is the public split (a download); test_settings has the empty case.
    "dataset": st.sampled_from(["set.jsonl", "nope.csv", "conftest.py"]) | path_text,
    "sample": st.sampled_from(["", "1", "50%", "0", "-1", "101%", "1e3"]) | any_text,
    "seed": st.sampled_from(["", "7", "-1"]) | any_text | huge_digits,
    "thresholds": st.sampled_from(["", "limits.toml", "empty.toml", "set.jsonl"]) | path_text,
    "report": st.sampled_from(["", "out.json", "conftest.py", "set.jsonl", "limits.toml", "missing/out.json"])
    | path_text,
    "force-output": st.booleans(),
    "strict": st.booleans(),
    "gate-narrowed": st.booleans(),
    "spacy-model": st.sampled_from(["none", "", "no_such_pipeline", "antigravity.x"]) | path_text,
    "concurrency": st.sampled_from(["", "1", "0", "-3"]) | any_text.filter(_not_a_number) | huge_digits,
    "rpm": st.sampled_from(["", "600000", "0", "inf", "nan"]) | any_text.filter(_not_a_number),
    "retries": st.sampled_from(["", "0", "2", "-1"]) | any_text.filter(_not_a_number),
    "timeout": st.sampled_from(["", "30", "0", "-inf", "1e999"]) | any_text.filter(_not_a_number),
    "max-backoff": st.sampled_from(["", "60", "0", "-1", "inf", "nan"]) | any_text.filter(_not_a_number),
    "model-arg": st.lists(st.sampled_from(["temperature=0", "=", "x", ""]) | any_text, max_size=2),
    "cache": st.sampled_from(["off", "", "refresh"]) | path_text,
    "shard": st.sampled_from(["", "1/2", "0/2", "3/2", "1/0", "a/b"]) | any_text,
    "html": st.sampled_from(["", "out.html", "conftest.py", "set.jsonl", "out.json"]) | path_text,
    "baseline": st.sampled_from(["", "out.json", "set.jsonl", "limits.toml", "missing.json"]) | path_text,
    "baseline-force": st.booleans(),
    "decide": st.sampled_from(["", "point", "interval", "median"]) | any_text,
    "call-path": st.sampled_from(["", "auto", "litellm", "openai", "grpc"]) | any_text,
    "budget": st.sampled_from(["", "0", "1.5", "-1", "inf", "nan"]) | any_text.filter(_not_a_number),
    "max-answer": st.sampled_from(["", "1M", "512k", "0", "1023", "1e9", "-1M", "inf", "9" * 400]) | any_text,
    "pace": st.sampled_from(["", "adaptive", "fixed", "tcp"]) | any_text,
    "repeat": st.sampled_from(["", "3", "1", "21", "3:0", "3:10", "x:y", "3:"]) | any_text,
    "repeat-reduce": st.sampled_from(["", "mean", "all", "max"]) | any_text,
    "with-tests": st.booleans(),
    "sequential": st.booleans(),
    "tpm": st.sampled_from(["", "60000", "0", "inf", "nan"]) | any_text.filter(_not_a_number),
}
assert set(OPTION_VALUES) == {o.noun for o in OPTIONS}, "a new option needs a fuzz strategy"
GOOD_OPTIONS: dict[str, Any] = {
    "model": st.just("fuzz-model"),
    "domain": st.sampled_from([[], ["sky"], ["sky,sky"]]),
    "dataset": st.just("set.jsonl"),
    "sample": st.sampled_from(["1", "50%", "3"]),
    "seed": st.sampled_from(["7", "-1"]),
    "thresholds": st.just("limits.toml"),
    "report": st.sampled_from(["out.json", "sub/out.json"]),
    "force-output": st.booleans(),
    "strict": st.booleans(),
    "gate-narrowed": st.booleans(),
    "spacy-model": st.just("none"),
    "concurrency": st.sampled_from(["1", "4"]),
    "rpm": st.just("600000"),
    "retries": st.sampled_from(["0", "2"]),
    "timeout": st.sampled_from(["30", "2.5"]),
    "max-backoff": st.sampled_from(["60", "0.5"]),
    "model-arg": st.just([]),
    "cache": st.sampled_from(["off", "c1"]),
    "shard": st.sampled_from(["1/1", "1/2"]),
    "html": st.just("out.html"),
    "baseline-force": st.booleans(),
    "decide": st.sampled_from(["point", "interval"]),
    "call-path": st.sampled_from(["auto", "litellm"]),
    "budget": st.just("100"),
    "max-answer": st.sampled_from(["1M", "64k"]),
    "pace": st.sampled_from(["adaptive", "fixed"]),
    "repeat-reduce": st.sampled_from(["mean", "all"]),
    "with-tests": st.booleans(),
    "sequential": st.booleans(),
    "tpm": st.just("6000000"),
}


@st.composite
def option_values(draw: Any) -> dict[str, Any]:
    """Options that are fine, but for up to two of them given any value."""
    nouns = sorted(OPTION_VALUES)
    values = draw(st.fixed_dictionaries({}, optional=GOOD_OPTIONS))  # type: ignore[arg-type]
    for noun in draw(st.sets(st.sampled_from(nouns), max_size=2)):
        values[noun] = draw(OPTION_VALUES[noun])
    return dict(values)




def _project(folder: Path) -> None:
    (folder / "set.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    (folder / "limits.toml").write_text("[defaults]\nmax_fch = 0.9\n", encoding="utf-8")
    (folder / "empty.toml").write_text("", encoding="utf-8")
    (folder / "conftest.py").write_text("# precious\n", encoding="utf-8")
    (folder / "sub").mkdir(exist_ok=True)


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


@pytest.fixture(scope="module")
def fuzz_model() -> Iterator[None]:
    @defan_pytest.model("fuzz-model", version="1")
    def answer(prompt: str) -> str:
        return "2"

    yield
    models.unregister("fuzz-model")


@FAST
@given(values=option_values())
def test_any_option_values_are_a_run_or_problems_naming_them(fuzz_model: None, values: dict[str, Any]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _project(root)
        before = _snapshot(root)
        values.setdefault("dataset", "set.jsonl")
        values.setdefault("cache", "off")
        try:
            s, problems = Settings.parse(values, root=root, invocation_dir=root)
            Run.configure(s, problems)
            event("configured")
        except ConfigError as exc:
            event("usage error")
            assert exc.problems
            for p in exc.problems:
                named = (p.startswith("--defan-") or str(root) in p or "dataset" in p or "domain" in p
                         or "no DefAn prompt" in p)
                assert named, p
        # Configuration replaces no file, however it ends, and leaves no probe or temporary file
        # (the cache check may create the cache's folder: that is its job).
        assert _snapshot(root) == before
        assert not list(root.rglob(".defan-*.tmp"))


CONFTEST = '''
import defan_pytest

@defan_pytest.model("fuzz-model", version="1")
def answer(prompt):
    return "2"
'''


# Real sessions never name a litellm model: without an API key that run stops at its first call
# (one message, by design), and importing litellm would cost seconds a session.
session_values = option_values().map(
    lambda v: {**v, "model": v["model"].replace("/", "")} if isinstance(v.get("model"), str) else v
)


@settings(max_examples=6, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(values=session_values)
def test_real_sessions_with_random_options(pytester: pytest.Pytester, values: dict[str, Any]) -> None:
    for p in list(pytester.path.iterdir()):
        if p.is_file():
            p.unlink()
    _project(pytester.path)
    pytester.makeconftest(CONFTEST)
    before = _snapshot(pytester.path)
    values.setdefault("model", "fuzz-model")
    values.setdefault("dataset", "set.jsonl")
    values.setdefault("cache", "off")
    args = ["-p", "no:cacheprovider", "-q"]
    for noun, value in values.items():
        if isinstance(value, bool):
            args += [f"--defan-{noun}"] if value else []
        elif isinstance(value, list):
            args += [f"--defan-{noun}={v}" for v in value]
        else:
            args.append(f"--defan-{noun}={value}")
    args = [a.encode("utf-8", "surrogateescape").decode("utf-8", "replace") if "\x00" not in a else a.replace("\x00", "")
            for a in args]
    result = pytester.runpytest(*args)
    event(f"exit {result.ret}")
    text = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in text and "Traceback" not in text, text[-2000:]
    assert result.ret in (0, 1, 4, 5), (result.ret, text[-2000:])
    if result.ret == pytest.ExitCode.USAGE_ERROR:
        assert "defan-pytest" in text or "error:" in text, text[-2000:]
    report = values.get("report", "")
    if result.ret == pytest.ExitCode.USAGE_ERROR or not str(report).strip():
        # Nothing written by a run that stopped before its calls (or was not asked to write).
        after = _snapshot(pytester.path)
        assert {k: v for k, v in after.items() if k in before} == before


# --------------------------------------------------------------------------------------------
# saved reports (issue 20): defan gate, compare, html and merge
# --------------------------------------------------------------------------------------------

def _shards(report: dict[str, Any], n: int) -> list[dict[str, Any]]:
    """``report`` cut into the reports of its ``n`` shards."""
    out = []
    for i in range(1, n + 1):
        rows = shards.select(report["rows"], shards.Shard(i, n))
        part = json.loads(json.dumps(report))
        figures = summarize(rows)
        part.update(rows=rows, domains=figures["domains"], overall=figures["overall"], gate_status="skipped")
        part["meta"]["selection"].update(shard=f"{i}/{n}", selected=len(rows), ran=len(rows))
        out.append(part)
    return out


# The reports mutated: a plain one, one with a regression block, and a shard of a run.
PLAIN = make_report()
BASES = {"plain": PLAIN, "regression": make_report(shift=1, baseline=PLAIN), "shard": _shards(PLAIN, 3)[1]}


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for i, item in enumerate(value[:3]):  # the first few items of a list stand for all
            yield from _paths(item, (*prefix, i))


# Every place of a report, grouped by its top-level key, so that the rows (most of the paths)
# do not drown the metadata, the limits and the regression block.
PLACES = {
    name: {top: [p for p in _paths(base) if p[:1] == (top,)] for top in base}
    for name, base in BASES.items()
}

# Values JSON cannot hold are written as raw text in place of a marker.
RAW = {"NaN": "NaN", "Infinity": "Infinity", "-Infinity": "-Infinity", "1e400": "1e400", "deep": "[" * 5000 + "]" * 5000,
       "huge": "9" * 5000}
hostile_values = (st.sampled_from([None, "", "x", -1, 0, 1, 0.5, 2**70, True, [], {}, [None], {"a": None}])
                  | st.sampled_from(sorted(RAW)).map(lambda k: f"\x00raw:{k}\x00") | json_value)


def _set(data: Any, path: tuple[Any, ...], value: Any, delete: bool) -> None:
    *head, last = path
    for key in head:
        data = data[key]
    if delete and isinstance(data, dict):
        data.pop(last, None)
    else:
        data[last] = value


@st.composite
def hostile_reports(draw: Any, base: str) -> str:
    """A report of ``base`` with one to three places changed (set to a hostile value, deleted,
    a row given twice or made another row's), as the text of a file."""
    data = json.loads(json.dumps(BASES[base]))
    places = PLACES[base]
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["set", "set", "set", "delete", "row twice", "row of another", "key twice"]))
        rows = data.get("rows")
        rows = [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []  # a change may have hit them
        if kind == "row twice" and rows:
            data["rows"].append(dict(draw(st.sampled_from(rows))))
            continue
        if kind == "row of another" and rows:
            key = draw(st.sampled_from(["id", "domain", "group", "type"]))
            draw(st.sampled_from(rows))[key] = draw(st.sampled_from(rows)).get(key)
            continue
        top = draw(st.sampled_from(sorted(places)))
        path = draw(st.sampled_from(places[top]))
        if kind in ("key twice", "row twice", "row of another") or not path:
            continue
        try:
            _set(data, path, draw(hostile_values), delete=kind == "delete")
        except (KeyError, IndexError, TypeError):  # an earlier change took the place away
            continue
    text = json.dumps(data)
    for name, raw in RAW.items():
        text = text.replace(json.dumps(f"\x00raw:{name}\x00"), raw)
    if draw(st.booleans()) and draw(st.booleans()):
        text = text.replace('"gate_status":', '"gate_status": "pass", "gate_status":', 1)  # a key twice
    return text


def _command(which: str, bad: Path, good: Path, shards_: list[Path]) -> list[str]:
    b, g = str(bad), str(good)
    return {
        "gate": ["gate", b, "--json", "out.json"],
        "gate --baseline": ["gate", g, "--baseline", b, "--json", "out.json"],
        "compare NEW": ["compare", g, b],
        "compare OLD": ["compare", b, g],
        "html": ["html", b, "-o", "out.html"],
        "html --baseline": ["html", g, "--baseline", b, "-o", "out.html"],
        "merge": ["merge", str(shards_[0]), b, str(shards_[2]), "-o", "out.json", "--html", "out.html"],
    }[which]


@contextlib.contextmanager
def _environ(**values: str) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@FAST
@given(data=st.data(), which=st.sampled_from(["gate", "gate --baseline", "compare NEW", "compare OLD", "html",
                                             "html --baseline", "merge"]))
def test_any_saved_report_is_a_verdict_or_one_problem(data: Any, which: str) -> None:
    base = "shard" if which == "merge" else data.draw(st.sampled_from(["plain", "regression"]))
    text = data.draw(hostile_reports(base))
    with tempfile.TemporaryDirectory() as tmp, contextlib.chdir(tmp), _environ(
            GITHUB_STEP_SUMMARY=str(Path(tmp) / "summary.md"), GITHUB_ACTIONS="true"):
        bad, good = Path(tmp) / "bad.json", Path(tmp) / "good.json"
        bad.write_text(text, encoding="utf-8")
        good.write_text(json.dumps(PLAIN), encoding="utf-8")
        shard_files = []
        for i, part in enumerate(_shards(PLAIN, 3), 1):
            shard_files.append(Path(tmp) / f"shard{i}.json")
            shard_files[-1].write_text(json.dumps(part), encoding="utf-8")
        with _captured() as (out, err):
            rc = main(_command(which, bad, good, shard_files))  # never raises: that would be a traceback
        stdout, stderr = out.getvalue(), err.getvalue()
        event(f"{which}: exit {rc}")
        assert rc in (0, 1, 2), stderr[-2000:]
        assert not ESC.search(stdout + stderr), (stdout + stderr)[:500]
        written = [p for p in ("out.json", "out.html", "summary.md") if Path(p).exists()]
        if rc == 2:
            assert stderr.startswith(("defan: error: ", "defan merge: nothing was merged")), stderr[-2000:]
            assert written == [], (written, stderr[-2000:])  # nothing half written
        elif which.startswith(("gate", "merge")):
            assert "summary.md" in written and "out.json" in written
            # What a verdict writes is a report a later run can read.
            assert main(["gate", "out.json"]) in (0, 1)
        elif which.startswith("html"):
            assert written == ["out.html"]


def test_hostile_reports_in_real_processes(tmp_path: Path) -> None:
    # The console script, with a few reports the fuzz above only reaches in-process.
    (tmp_path / "good.json").write_text(json.dumps(PLAIN), encoding="utf-8")
    cases = {
        "deep.json": '{"schema": "defan-pytest-report", "rows": ' + "[" * 200_000 + "]" * 200_000 + "}",
        "nan.json": json.dumps(PLAIN).replace('"total": 1.5', '"total": NaN'),
        "twice.json": json.dumps({**PLAIN, "rows": PLAIN["rows"] + PLAIN["rows"][:1]}),
    }
    env = {**os.environ, "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"), "GITHUB_ACTIONS": "true"}
    defan = Path(sys.executable).with_name("defan")
    for name, text in cases.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
        for argv in (["gate", name, "--json", "out.json"], ["compare", "good.json", name], ["html", name, "-o", "o.html"],
                     ["merge", name, "-o", "out.json"]):
            proc = subprocess.run([str(defan), *argv], capture_output=True, text=True, env=env, cwd=tmp_path,
                                  timeout=120)
            assert proc.returncode == 2 and "Traceback" not in proc.stderr, (argv, proc.stderr[-2000:])
            assert proc.stderr.startswith("defan: error: "), proc.stderr[-1000:]
            assert not any((tmp_path / p).exists() for p in ("out.json", "o.html", "summary.md"))
