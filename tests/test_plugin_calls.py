"""The plugin's call path end to end: litellm calling the loopback OpenAI server from real pytest
sessions -- one call per prompt under xdist, a warm cache, resume after SIGKILL, a run stopped by
a bad key, errors counted apart, and secrets kept out of everything the run writes."""
from __future__ import annotations

import json
import re
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

from timings import untimed

from conftest import find_public_dir
from defan_pytest.dataset import load_public
from openai_server import OpenAIServer

# The real public split, or None: then ROWS is empty and every test using `project` skips.
PUBLIC = find_public_dir()
KEY = "sk-test-SECRET-0123456789abcdef"
FOUR_GROUPS = "nobel-q0000 or nobel-q0001 or nobel-q0002 or nobel-q0003"
ROWS = [r for r in load_public(domains=["nobel"], data_dir=PUBLIC) if r.group < 4] if PUBLIC else []
# Right for even question groups, wrong for odd ones.
ANSWERS = {r.question: (r.answer.split(";")[0] if r.group % 2 == 0 else "Albert Einstein") for r in ROWS}


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, public_dir: Path) -> pytest.Pytester:
    monkeypatch.setenv("DEFAN_DATA_DIR", str(public_dir))
    monkeypatch.setenv("DEFAN_PROGRESS_SECONDS", "1")
    return pytester


def toy_rows(n: int) -> list[dict]:
    """``n`` numeric prompts of our own (no DefAn row), three paraphrases per group."""
    return [{"question": f"How many moons does planet {i} have?", "answer": str(i % 7), "type": "numeric",
             "domain": "toy", "group": f"g{i // 3}"} for i in range(n)]


TOY = toy_rows(15)
TOY_ANSWERS = {r["question"]: r["answer"] for r in TOY}


@pytest.fixture
def toy(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A project with a small user dataset (``toy.jsonl``): runs without the public split."""
    monkeypatch.setenv("DEFAN_PROGRESS_SECONDS", "60")
    write_toy(pytester, TOY)
    return pytester


def write_toy(pytester: pytest.Pytester, rows: list[dict]) -> None:
    pytester.path.joinpath("toy.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


TOY_ARGS = ["--defan-dataset=toy.jsonl", "--defan-spacy-model=none", "-p", "no:cacheprovider"]


def args(srv: OpenAIServer, *extra: str) -> list[str]:
    return [
        "--defan-model=openai/test-model", f"--defan-model-arg=api_base={srv.base_url}",
        f"--defan-model-arg=api_key={KEY}", "--defan-domain=nobel", "-k", FOUR_GROUPS, "--defan-gate-narrowed", "--defan-timeout=5",
        "--defan-retries=1", "--defan-report=r.json", "--junitxml=j.xml", "-p", "no:cacheprovider", *extra,
    ]


def files_contain(root: Path, needle: str) -> list[str]:
    hits = []
    for path in root.rglob("*"):
        if path.is_file() and needle.encode() in path.read_bytes():
            hits.append(str(path))
    return hits


@pytest.mark.slow
def test_xdist_sends_each_prompt_once_and_a_warm_cache_sends_none(project: pytest.Pytester) -> None:
    with OpenAIServer(answers=ANSWERS) as srv:
        first = project.runpytest_subprocess(*args(srv, "-n", "2"))
        assert first.ret == 0, first.stdout.lines[-20:]
        assert srv.counts == {q: 1 for q in ANSWERS}  # 60 prompts, each sent exactly once
        first.stdout.fnmatch_lines(["*60 prompts: 60 answered by the model, 0 from the cache*"])
        second = project.runpytest_subprocess(*args(srv))
        assert srv.total == 60  # nothing sent again
        second.stdout.fnmatch_lines(["*60 prompts: 0 answered by the model, 60 from the cache*",
                                     "*30 right*30 hallucinated*"])
        assert srv.requests[0]["headers"]["authorization"] == f"Bearer {KEY}"  # the key was used ...
    # ... and is nowhere in what the runs wrote or printed
    assert files_contain(project.path, KEY) == []
    for out in (first, second):
        assert KEY not in out.stdout.str() + out.stderr.str()
    report = json.loads((project.path / "r.json").read_text())
    assert report["domains"]["nobel"]["fch"] == 0.5


def test_errors_are_counted_apart_and_gated(project: pytest.Pytester) -> None:
    broken = ROWS[0].question  # group 0: would have been answered right
    project.path.joinpath("thresholds.toml").write_text("[defaults]\nmax_error_rate = 0.01\n")
    with OpenAIServer(answers=ANSWERS, faults=[{"fault": 500, "match": broken}]) as srv:
        result = project.runpytest_subprocess(*args(srv, "-rA"))
        assert srv.counts[broken] == 2  # one retry, then an errored response
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*nobel: error rate 0.02 > max_error_rate 0.01*"])
    nobel = json.loads((project.path / "r.json").read_text())["domains"]["nobel"]
    assert (nobel["n"], nobel["errors"], nobel["scored"]) == (60, 1, 59)
    assert nobel["fch"] == pytest.approx(30 / 59)  # the errored prompt is no hallucination
    assert nobel["rc_groups"] == 4  # its group is judged on its 14 answered paraphrases
    assert "1 call error" in result.stdout.lines[-1]


@pytest.mark.slow
@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_bad_key_stops_the_run_with_one_message(project: pytest.Pytester, workers: list[str]) -> None:
    with OpenAIServer(faults=[{"fault": 401, "match": "*"}]) as srv:
        result = project.runpytest_subprocess(*args(srv, "--defan-concurrency=4", *workers))
        sent = srv.total
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert out.count("Interrupted: defan-pytest: AuthenticationError (HTTP 401)") == 1
    assert sent <= 4 * max(1, len(workers))  # what was in flight, not 60 requests
    assert "FAILED" not in out and KEY not in out + result.stderr.str()


@pytest.fixture
def busy_core() -> Iterator[None]:
    """A busy loop on the other core for the test's duration (bounded: it stops by itself)."""
    spin = subprocess.Popen([sys.executable, "-c", "import time\nend = time.time() + 120\nwhile time.time() < end:\n    pass"])
    try:
        yield
    finally:
        spin.kill()
        spin.wait()


# A disk (or a starved writer thread) that takes 50 ms per commit: answers arrive faster than
# they are written, which is when answers waiting for the writer used to be lost to a kill.
SLOW_WRITER = """
import time
from defan_pytest.cache.store import ResponseCache

_write = ResponseCache._write

def slow_write(self, *args, **kwargs):
    time.sleep(0.05)
    return _write(self, *args, **kwargs)

ResponseCache._write = slow_write
"""


@pytest.mark.slow
@pytest.mark.parametrize("concurrency,load", [(2, None), (8, "busy-core"), (8, "slow-writer")],
                         ids=["idle", "busy-machine", "slow-writer"])
def test_sigkill_half_way_resumes_without_repeating(project: pytest.Pytester, request: pytest.FixtureRequest,
                                                    concurrency: int, load: str) -> None:
    if load == "busy-core":
        request.getfixturevalue("busy_core")
    elif load == "slow-writer":
        project.makeconftest(SLOW_WRITER)
    with OpenAIServer(answers=ANSWERS, latency=0.15) as srv:
        cmd = [sys.executable, "-m", "pytest", *args(srv, f"--defan-concurrency={concurrency}")]
        proc = subprocess.Popen(cmd, cwd=project.path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        srv.wait_for_total(30, timeout=300)  # half way (a run that ends sooner fails below)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        # Requests the killed process had already written may still be on their way to a busy
        # server thread: let the server's count settle before taking it as "asked before the kill".
        # No event says the network has delivered all a dead process wrote: the count is taken
        # once no request has arrived for a second (polled, within a minute).
        settle = time.monotonic() + 60
        seen = -1
        while srv.total != seen and time.monotonic() < settle:
            seen = srv.total
            srv.wait_for_total(seen + 1, timeout=1.0)
        before = srv.counts
        db = sqlite3.connect(project.path / ".defan_cache" / "responses.sqlite3")
        committed = {row[0] for row in db.execute("SELECT prompt FROM answers")}
        db.close()
        # every prompt sent but not committed was in flight at the kill: at most one per slot
        assert len(before) - concurrency <= len(committed) < 60
        result = project.runpytest_subprocess(*args(srv))
        after = srv.counts
    assert result.ret == 0
    # every answer committed before the kill is reused: zero repeated requests for those ...
    assert all(after[q] == 1 for q in committed)
    # ... and only what was in flight at the kill (at most the concurrency) is asked again
    repeated = [q for q, n in after.items() if n > 1]
    assert len(repeated) <= concurrency and all(q in before for q in repeated)
    assert sorted(after) == sorted(ANSWERS)


def test_model_table_in_pyproject(project: pytest.Pytester) -> None:
    with OpenAIServer(answers=ANSWERS) as srv:
        project.makepyprojecttoml(f"""
            [tool.defan.models.brief]
            model = "openai/test-model"
            api_base = "{srv.base_url}"
            system_prompt = "Answer with the name only."
            max_tokens = 16
            litellm = {{ api_key = "{KEY}" }}
        """)
        result = project.runpytest_subprocess("--defan-model=brief", "--defan-domain=nobel", "-k", "nobel-q0000",
                                              "-p", "no:cacheprovider")
        body = srv.requests[0]["body"]
    assert result.ret == 0
    assert body["messages"][0] == {"role": "system", "content": "Answer with the name only."}
    assert body["max_tokens"] == 16 and body["temperature"] == 0  # temperature defaults to 0
    assert files_contain(project.path / ".defan_cache", KEY) == []


def test_bad_model_table_is_a_usage_error(project: pytest.Pytester) -> None:
    project.makepyprojecttoml("""
        [tool.defan.models.brief]
        model = "openai/test-model"
        temprature = 0.2
    """)
    result = project.runpytest("--defan-model=brief", "--defan-domain=nobel")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "pyproject.toml [tool.defan]: models.brief.temprature: unknown key" in result.stderr.str()


# --------------------------------------------------------------------------------------------
# issue 8: nothing lost, nothing leaked, nothing hangs -- in real sessions
# --------------------------------------------------------------------------------------------

# One distinct key per way a run is given a credential.
SECRETS = {
    "api_key": "sk-apikey-A1b2C3d4E5f6G7h8",
    "headers": "hdr-H1i2J3k4L5m6N7o8",
    "extra_headers": "xtr-X1y2Z3a4B5c6D7e8",
    "environment": "env-E1f2G3h4I5j6K7l8",
    "callable": "cbk-C1d2E3f4G5h6I7j8",
}
LEAKY_CONFTEST = """
import os
import defan_pytest

@defan_pytest.model("leaky", version="1")
def leaky(prompt):
    if "planet 1 " in prompt:
        raise RuntimeError("search backend refused key " + os.environ["AZURE_SEARCH_ADMIN_KEY"])
    return prompt.split("planet ")[1].split(" ")[0]
"""


@pytest.mark.slow
def test_no_credential_reaches_anything_a_run_writes(toy: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACME_SERVICE_KEY", SECRETS["environment"])
    monkeypatch.setenv("AZURE_SEARCH_ADMIN_KEY", SECRETS["callable"])
    toy.makeconftest(LEAKY_CONFTEST)
    # A failed call or two is the point here, not a gate failure (the built-in limit is 0.05).
    toy.path.joinpath("thresholds.toml").write_text("[defaults]\nmax_error_rate = 0.5\n", encoding="utf-8")
    every_key = " ".join(SECRETS.values())
    answers = dict(TOY_ANSWERS)
    answers[TOY[0]["question"]] = f"0 (debug: {every_key})"  # a model that echoes what it was sent
    faults = [{"fault": 500, "match": TOY[2]["question"], "message": f"upstream rejected {every_key}"},
              {"fault": 401, "match": "never sent", "message": every_key}]
    reports = ["--defan-report=r.json", "--junitxml=j.xml", "--html=report.html", "--self-contained-html", "-rA", "-v"]
    with OpenAIServer(answers=answers, faults=faults) as srv:
        litellm_run = toy.runpytest_subprocess(
            "--defan-model=openai/test-model", f"--defan-model-arg=api_base={srv.base_url}",
            f"--defan-model-arg=api_key={SECRETS['api_key']}",
            f'--defan-model-arg=headers={{"Authorization": "Bearer {SECRETS["headers"]}"}}',
            f'--defan-model-arg=extra_headers={{"X-Trace-Token": "{SECRETS["extra_headers"]}"}}',
            "--defan-retries=0", "--defan-timeout=5", "-n", "2", *TOY_ARGS, *reports,
        )
        sent = {v for r in srv.requests for v in r["headers"].values()}
    assert litellm_run.ret == 0, litellm_run.stdout.lines[-20:]
    assert f"Bearer {SECRETS['headers']}" in sent and SECRETS["extra_headers"] in sent  # the keys were used
    callable_run = toy.runpytest_subprocess(
        "--defan-model=leaky", *TOY_ARGS, "--defan-report=r2.json", "--junitxml=j2.xml", "--html=report2.html",
        "--self-contained-html", "-rA", "-v",
    )
    assert callable_run.ret == 0, callable_run.stdout.lines[-20:]
    for run in (litellm_run, callable_run):
        run.stdout.fnmatch_lines(["*0 not sent, 1 failed*"])  # the errors that quoted every key were reported
    report = json.loads((toy.path / "r2.json").read_text())
    assert [r["error"] for r in report["rows"] if r["error"]] == ["RuntimeError: search backend refused key ***"]
    # Every byte the runs wrote (the cache folder, the reports, the captured terminal output
    # that pytester keeps in ./stdout and ./stderr) is free of every key.
    written = [p for p in toy.path.rglob("*") if p.is_file()]
    assert {p.name for p in written} >= {"responses.sqlite3", "r.json", "j.xml", "report.html", "stdout", "stderr"}
    for how, key in SECRETS.items():
        assert files_contain(toy.path, key) == [], how
        for run in (litellm_run, callable_run):
            assert key not in run.stdout.str() + run.stderr.str(), how


@pytest.mark.slow
def test_an_unusable_cache_is_a_usage_error_before_any_call(toy: pytest.Pytester, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    calls = tmp_path / "calls.jsonl"
    monkeypatch.setenv("DEFAN_TEST_CALLS", str(calls))
    toy.makeconftest(COUNTING_CONFTEST.format(version="1", answer="'1'"))
    toy.path.joinpath("blocker").write_text("a file where the cache folder should be")
    db = toy.path / ".defan_cache" / "responses.sqlite3"
    db.parent.mkdir()
    db.write_bytes(b"not a database" * 100)
    cases = {
        "--defan-cache=blocker": f"--defan-cache: {toy.path / 'blocker'} is a file, not a folder",
        "--defan-cache=/sys/kernel/defan-cache": "--defan-cache: /sys/kernel/defan-cache: cannot create the folder",
        "--defan-cache=.defan_cache": f"{db} is not a usable SQLite database (file is not a database): run once "
                                      "with --defan-cache=refresh",
    }
    for option, message in cases.items():
        result = toy.runpytest_subprocess("--defan-model=counting", option, *TOY_ARGS)
        assert result.ret == pytest.ExitCode.USAGE_ERROR, (option, result.stderr.lines[-5:])
        assert message in result.stderr.str() and "INTERNALERROR" not in result.stderr.str() + result.stdout.str()
    assert not calls.exists()  # nothing was asked
    refreshed = toy.runpytest_subprocess("--defan-model=counting", "--defan-cache=refresh", *TOY_ARGS)
    assert refreshed.ret == 0
    refreshed.stdout.fnmatch_lines(["*note: the response cache * was corrupt (file is not a database): moved aside "
                                    "as responses.sqlite3.corrupt-*"])
    assert [p.name for p in db.parent.glob("responses.sqlite3.corrupt-*")]
    again = toy.runpytest_subprocess("--defan-model=counting", *TOY_ARGS)
    again.stdout.fnmatch_lines(["*15 prompts: 0 answered by the model, 15 from the cache*"])


COUNTING_CONFTEST = """
import json, os, time
import defan_pytest

def note(prompt):
    calls = os.environ.get("DEFAN_TEST_CALLS")
    if calls:
        with open(calls, "a") as f:
            f.write(json.dumps(prompt) + "\\n")

@defan_pytest.model("counting", version="{version}")
def counting(prompt):
    note(prompt)
    time.sleep(float(os.environ.get("DEFAN_TEST_DELAY", "0")))
    return {answer}
"""


def test_a_sync_callable_that_never_returns_does_not_keep_the_process_alive(toy: pytest.Pytester) -> None:
    toy.makeconftest(
        "import threading\nimport defan_pytest\n"
        "@defan_pytest.model('stuck')\n"
        "def stuck(prompt):\n"
        "    if 'planet 4 ' in prompt:\n"
        "        threading.Event().wait()  # never returns\n"
        "    return '1'\n"
    )
    # The outcome: the process exits (the timeout is pytester's guard against a hang).
    result = toy.runpytest_subprocess("--defan-model=stuck", "--defan-timeout=1", "--defan-retries=0", *TOY_ARGS,
                                      timeout=300)
    result.stdout.fnmatch_lines(["*15 prompts: 14 answered by the model, 0 from the cache, 0 not sent, 1 failed; 0 retries*"])


@pytest.mark.slow
def test_an_async_callable_blocking_the_event_loop_stops_the_run(toy: pytest.Pytester) -> None:
    toy.makeconftest(
        "import time\nimport defan_pytest\n"
        "@defan_pytest.model('blocker')\n"
        "async def blocker(prompt):\n"
        "    time.sleep(3600)  # blocks the event loop: no timeout can fire\n"
        "    return '1'\n"
    )
    # The sleep never ends in time: only the watchdog stops the run (pytester's timeout guards a hang).
    result = toy.runpytest_subprocess("--defan-model=blocker", "--defan-timeout=1", *TOY_ARGS, timeout=300)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    out = result.stdout.str()
    assert out.count("Interrupted: defan-pytest: model 'blocker' blocked the event loop") == 1


def test_missing_credentials_stop_the_run_with_one_message(toy: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    result = toy.runpytest_subprocess("--defan-model=openai/test-model", "--defan-retries=4", *TOY_ARGS, timeout=300)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    out = result.stdout.str()
    assert out.count("Interrupted: defan-pytest: no credentials for 'openai/test-model': set OPENAI_API_KEY") == 1
    assert "retries" not in out.split("Interrupted")[-1] or "0 retries" in out


@pytest.mark.slow
def test_editing_a_callable_without_a_new_version_asks_again(toy: pytest.Pytester, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    calls = tmp_path / "calls.jsonl"
    monkeypatch.setenv("DEFAN_TEST_CALLS", str(calls))

    def sent() -> int:
        n = len(calls.read_text().splitlines()) if calls.exists() else 0
        calls.unlink(missing_ok=True)
        return n

    toy.makeconftest(COUNTING_CONFTEST.format(version="2024-06-01", answer="'1'"))
    toy.runpytest_subprocess("--defan-model=counting", *TOY_ARGS)
    assert sent() == 15
    again = toy.runpytest_subprocess("--defan-model=counting", *TOY_ARGS)
    assert sent() == 0
    toy.makeconftest(COUNTING_CONFTEST.format(version="2024-06-01", answer="'2'"))  # edited, same version
    edited = toy.runpytest_subprocess("--defan-model=counting", *TOY_ARGS)
    assert sent() == 15  # the old code's answers are not reused
    edited.stdout.fnmatch_lines(["*15 prompts: 15 answered by the model, 0 from the cache, *"])
    # the summary says which code the cached answers belong to
    again.stdout.re_match_lines([r".*15 prompts: 0 answered by the model, 15 from the cache "
                                 r"\(counting version 2024-06-01, source [0-9a-f]{8} \(fingerprint [0-9a-f]{8}: 1 source file\)\), "
                                 r"0 not sent, 0 failed; 0 retries"])


@pytest.mark.slow
def test_xdist_counts_where_answers_came_from(toy: pytest.Pytester, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    calls = tmp_path / "calls.jsonl"
    monkeypatch.setenv("DEFAN_TEST_CALLS", str(calls))
    write_toy(toy, toy_rows(60))
    toy.makeconftest(COUNTING_CONFTEST.format(version="1", answer="'1'"))
    first = toy.runpytest_subprocess("--defan-model=counting", "-n", "2", *TOY_ARGS)
    first.stdout.fnmatch_lines(["*60 prompts: 60 answered by the model, 0 from the cache, 0 not sent, 0 failed; 0 retries*"])
    assert len(calls.read_text().splitlines()) == 60
    warm = toy.runpytest_subprocess("--defan-model=counting", "-n", "2", *TOY_ARGS)
    warm.stdout.re_match_lines([r".*60 prompts: 0 answered by the model, 60 from the cache \(counting version 1, "
                                r"source [0-9a-f]{8} \(fingerprint [0-9a-f]{8}: 1 source file\)\), 0 not sent, 0 failed; 0 retries"
                                r"(; \d+ of the 60 prompts came through another worker, session or prompt of the same text)?$"])
    assert len(calls.read_text().splitlines()) == 60  # nothing asked again


@pytest.mark.slow
def test_claims_of_a_run_killed_under_xdist_are_cleaned_at_the_next_start(toy: pytest.Pytester,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    write_toy(toy, toy_rows(60))
    toy.makeconftest(COUNTING_CONFTEST.format(version="1", answer="'1'"))
    monkeypatch.setenv("DEFAN_TEST_DELAY", "0.2")
    db = toy.path / ".defan_cache" / "responses.sqlite3"
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "--defan-model=counting", "-n", "2",
                             "--defan-concurrency=2", *TOY_ARGS], cwd=toy.path, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)

    def claims() -> int:
        try:
            with sqlite3.connect(db, timeout=5) as conn:
                return int(conn.execute("SELECT COUNT(*) FROM claims").fetchone()[0])
        except sqlite3.Error:
            return 0

    deadline = time.monotonic() + 120
    while claims() < 8 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert claims() >= 8  # the killed run's claims are still there ...
    monkeypatch.setenv("DEFAN_TEST_DELAY", "0")
    result = toy.runpytest_subprocess("--defan-model=counting", *TOY_ARGS)
    assert result.ret == 0
    with sqlite3.connect(db) as conn:  # ... until the next run starts
        left = [conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in ("claims", "progress")]
        assert left == [0, 0]
        assert conn.execute("SELECT COUNT(*) FROM members").fetchone()[0] == 0


def test_an_answer_with_invalid_code_points_is_kept_with_a_note(toy: pytest.Pytester) -> None:
    toy.makeconftest(
        "import defan_pytest\n"
        "@defan_pytest.model('surrogate', version='1')\n"
        "def surrogate(prompt):\n"
        "    return '0 \\ud800' if 'planet 0 ' in prompt else '1'\n"
    )
    for _ in range(2):  # asked, then from the cache: the same row, note included
        result = toy.runpytest_subprocess("--defan-model=surrogate", "--defan-report=r.json", *TOY_ARGS)
        assert result.ret == 0, result.stdout.lines[-10:]
        row = json.loads((toy.path / "r.json").read_text(encoding="utf-8"))["rows"][0]
        assert row["response"] == "0 \ufffd" and row["error"] is None
        assert "invalid code points (lone surrogates), replaced by U+FFFD" in row["note"]
    result.stdout.fnmatch_lines(["*15 prompts: 0 answered by the model, 15 from the cache*"])


# --------------------------------------------------------------------------------------------
# issue 10: the lean call path, tokens, latency, cost and the budget -- in real sessions
# --------------------------------------------------------------------------------------------

# Right for even paraphrase groups, wrong for odd ones.
MIXED = {r["question"]: (r["answer"] if int(r["group"][1:]) % 2 == 0 else "99") for r in TOY}


def toy_model_args(srv: OpenAIServer, *extra: str) -> list:
    return ["--defan-model=openai/test-model", f"--defan-model-arg=api_base={srv.base_url}",
            f"--defan-model-arg=api_key={KEY}", "--defan-timeout=5", *TOY_ARGS, *extra]


def comparable(report: dict) -> dict:
    """A report without what differs between two runs of the same answers (when, how long)."""
    out = {k: v for k, v in report.items() if k not in ("meta", "usage")}
    out["rows"] = [{k: v for k, v in r.items()} for r in report["rows"]]
    return dict(untimed(out))


@pytest.mark.slow
def test_the_lean_path_and_litellm_give_identical_reports(toy: pytest.Pytester) -> None:
    results = {}
    with OpenAIServer(answers=MIXED) as srv:
        for path in ("litellm", "auto"):
            results[path] = toy.runpytest_subprocess(
                *toy_model_args(srv, f"--defan-call-path={path}", "--defan-cache=off", f"--defan-report={path}.json"))
            assert results[path].ret == 0, results[path].stdout.lines[-20:]
        assert srv.counts == {q: 2 for q in MIXED}  # each path asked every prompt once
    reports = {p: json.loads((toy.path / f"{p}.json").read_text()) for p in results}
    assert comparable(reports["litellm"]) == comparable(reports["auto"])
    assert reports["litellm"]["domains"]["toy"]["fch"] == pytest.approx(6 / 15)  # groups 1 and 3 wrong
    # which path ran: in the usage block of the report and in the terminal
    assert (reports["litellm"]["usage"]["call_path"], reports["auto"]["usage"]["call_path"]) == ("litellm", "openai")
    for path, via in (("litellm", "litellm"), ("auto", "the OpenAI protocol")):
        results[path].stdout.fnmatch_lines([
            # a loopback server: no cost, said once (tests/test_local_server.py)
            f"defan estimate: 15 prompts to send (0 from the cache) via {via}: ~* prompt + ~1,500 completion tokens; "
            f"local server 127.0.0.1:{srv.port}: no cost",
            "*15 prompts: 15 answered by the model, 0 from the cache*",
            f"usage via {via}: 105 prompt + 15 completion tokens in 15 answers; latency p50 * ms, p95 * ms",
        ])
        usage = reports[path]["usage"]
        assert usage["tokens"] == {"prompt": 105, "completion": 15, "total": 120, "answers": 15, "unknown": 0}
        assert usage["latency"]["n"] == 15 and 0 < usage["latency"]["p50"] <= usage["latency"]["p95"]


PRICED = """
[tool.defan.models.priced]
model = "openai/test-model"
api_base = "{base}"
price_in = 1000.0
price_out = 2000.0
litellm = {{ api_key = "{key}" }}
"""


@pytest.mark.slow
@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_a_budget_stops_the_run_incomplete_and_a_resume_asks_nothing_twice(toy: pytest.Pytester,
                                                                          workers: list) -> None:
    write_toy(toy, toy_rows(60))
    rows = toy_rows(60)
    answers = {r["question"]: f"it has {r['answer']}" for r in rows}
    per_call = (7 * 1000 + 3 * 2000) / 1e6  # 7 prompt words, 3 answer words: $0.013
    args = ["--defan-model=priced", "--defan-report=r.json", "--defan-concurrency=4", *TOY_ARGS, *workers]
    with OpenAIServer(answers=answers, latency=0.02) as srv:
        toy.makepyprojecttoml(PRICED.format(base=srv.base_url, key=KEY))
        first = toy.runpytest_subprocess("--defan-budget=0.3", *args, timeout=300)
        sent = srv.total
        report = json.loads((toy.path / "r.json").read_text())
        second = toy.runpytest_subprocess("--defan-budget=5", *args, timeout=300)
        counts = srv.counts
    budget = report["usage"]["budget"]
    assert budget["limit"] == 0.3 and budget["complete"] is False and budget["unsent"] == 60 - sent
    # within one concurrency window of the limit (each worker's, under xdist)
    assert budget["spent"] == pytest.approx(sent * per_call) and budget["spent"] <= 0.3 + 4 * per_call * max(1, len(workers))
    assert sent * per_call >= 0.3 - (4 + 1) * per_call  # not long before the limit, workers or not
    errors = [r for r in report["rows"] if r["error"]]
    assert len(errors) == 60 - sent and all(r["error_kind"] == "BudgetExceeded" for r in errors)
    assert all(r["claim"] is None and r["correct"] is None for r in errors)  # never a hallucination
    first.stdout.fnmatch_lines([
        "defan estimate: 60 prompts to send (0 from the cache) via the OpenAI protocol: ~* prompt + ~6,000 "
        "completion tokens, ~$12.* at $1,000.00 in, $2,000.00 out per million tokens ([[]models.priced])",
        f"*budget $0.3000 reached ($* spent): {60 - sent} prompts not sent, the run is incomplete; every answer is "
        "kept in the cache: a larger --defan-budget asks the rest",
    ])
    # resumed with a larger budget: the rest is asked, nothing twice
    assert second.ret == 0, second.stdout.lines[-20:]
    assert counts == {q: 1 for q in answers}
    second.stdout.fnmatch_lines([f"defan estimate: {60 - sent} prompts to send ({sent} from the cache)*",
                                 "*budget $5.0000: $* spent"])
    resumed = json.loads((toy.path / "r.json").read_text())["usage"]
    assert resumed["budget"]["complete"] is True and resumed["cached"] == sent
    assert resumed["cost"]["spent"] == pytest.approx((60 - sent) * per_call)


def test_a_budget_needs_a_price(toy: pytest.Pytester) -> None:
    result = toy.runpytest("--defan-model=openai/local-model", "--defan-model-arg=api_base=http://127.0.0.1:9/v1",
                           "--defan-budget=1", *TOY_ARGS)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert ("--defan-budget: no price for 'openai/local-model': set price_in and price_out (USD per million tokens) "
            'in [models."openai/local-model"]') in result.stderr.str()
    forced = toy.runpytest("--defan-model=anthropic/claude-3-5-haiku", "--defan-call-path=openai", *TOY_ARGS)
    assert forced.ret == pytest.ExitCode.USAGE_ERROR
    assert "--defan-call-path=openai: 'anthropic/claude-3-5-haiku' cannot take the OpenAI-protocol path" in \
        forced.stderr.str()


# Each process of the session (controller and workers) says, at its end, which HTTP clients it
# imported: a worker with nothing to ask must not pay for one.
PROBE_CONFTEST = """
import json, os, sys

def pytest_sessionfinish(session):
    who = getattr(session.config, "workerinput", {}).get("workerid", "controller")
    with open(os.path.join(os.environ["DEFAN_TEST_PROBE"], who + ".json"), "w") as f:
        json.dump(sorted(m for m in ("litellm", "openai", "aiohttp", "httpx") if m in sys.modules), f)
"""


@pytest.mark.slow
def test_start_up_each_worker_pays_once_and_a_worker_with_nothing_to_ask_pays_nothing(
        toy: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_toy(toy, toy_rows(60))
    toy.makeconftest(PROBE_CONFTEST)
    answers = {r["question"]: f"it has {r['answer']}" for r in toy_rows(60)}

    def modules(run: str) -> dict:
        folder = tmp_path / run
        folder.mkdir()
        monkeypatch.setenv("DEFAN_TEST_PROBE", str(folder))
        return folder

    with OpenAIServer(answers=answers, latency=0.01) as srv:
        cold_dir = modules("cold")
        cold = toy.runpytest_subprocess(*toy_model_args(srv, "-n", "2"))
        warm_dir = modules("warm")
        warm = toy.runpytest_subprocess(*toy_model_args(srv, "-n", "2"))
        assert srv.total == 60
    assert cold.ret == 0 and warm.ret == 0, cold.stdout.lines[-20:] + warm.stdout.lines[-20:]
    seen = {p.stem: json.loads(p.read_text()) for p in cold_dir.glob("*.json")}
    assert set(seen) == {"controller", "gw0", "gw1"}
    assert all("litellm" not in m and "openai" not in m for m in seen.values())  # the lean path never imports them
    # Issue 35: the controller asks every prompt through its one pool (and runs their tests);
    # the workers ask nothing, so they never load a client.
    assert "aiohttp" in seen["controller"] and seen["gw0"] == seen["gw1"] == []
    warm_seen = {p.stem: json.loads(p.read_text()) for p in warm_dir.glob("*.json")}
    assert warm_seen == {"controller": [], "gw0": [], "gw1": []}  # everything cached: no client anywhere
    warm.stdout.fnmatch_lines(["defan estimate: 0 prompts to send (60 from the cache) via the OpenAI protocol: "
                               "nothing to pay"])


# --------------------------------------------------------------------------------------------
# issue 20: hostile servers -- credentials stay home, memory stays bounded -- in real sessions
# --------------------------------------------------------------------------------------------

XKEY = "xak-Q1w2E3r4T5y6U7i8"  # a credential in a header aiohttp and httpx forward on a redirect


@pytest.mark.slow
@pytest.mark.parametrize("path,workers", [("auto", []), ("litellm", []), ("auto", ["-n", "2"])],
                         ids=["lean", "litellm", "lean-xdist"])
def test_a_redirect_stops_the_run_and_no_credential_leaves(toy: pytest.Pytester, path: str, workers: list) -> None:
    with OpenAIServer(default_answer="1") as elsewhere:
        target = f"{elsewhere.base_url}/chat/completions?sig=SIGsecret77"
        with OpenAIServer(faults=[{"fault": "redirect", "location": target}]) as srv:
            result = toy.runpytest_subprocess(*toy_model_args(
                srv, f"--defan-call-path={path}", f'--defan-model-arg=extra_headers={{"x-api-key": "{XKEY}"}}',
                "--defan-concurrency=2", "--defan-report=r.json", *workers))
        assert elsewhere.total == 0  # no request, no key reached the other host; none of its answers counted
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert out.count(f"Interrupted: defan-pytest: RefusedRedirect: the server answered HTTP 307, a redirect to "
                     f"http://127.0.0.1:{elsewhere.port}/v1/chat/completions?sig=***: not followed") == 1
    for secret in (XKEY, KEY, "SIGsecret77"):
        assert secret not in out and files_contain(toy.path, secret) == []


@pytest.mark.slow
@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_answers_over_the_cap_are_errors_and_nothing_keeps_them(toy: pytest.Pytester, workers: list) -> None:
    huge, endless = TOY[1]["question"], TOY[2]["question"]
    faults = [{"fault": "huge", "match": huge, "size": 4_000_000}, {"fault": "endless", "match": endless}]
    with OpenAIServer(answers=TOY_ANSWERS, faults=faults) as srv:
        result = toy.runpytest_subprocess(*toy_model_args(srv, "--defan-max-answer=64k", "--defan-report=r.json",
                                                          "--defan-html=r.html", "--defan-retries=2", *workers))
        assert srv.counts[huge] == srv.counts[endless] == 1  # not retried
    # Two call errors in 15: the built-in max_error_rate (0.05) fails the gate, and only it.
    assert result.ret == 1, result.stdout.lines[-20:]
    result.stdout.fnmatch_lines(["FAILED defan::gate?toy? - toy: error rate 0.13 > max_error_rate 0.05*"])
    rows = {r["question"]: r for r in json.loads((toy.path / "r.json").read_text())["rows"]}
    for q in (huge, endless):
        assert rows[q]["response"] is None and "AnswerTooLarge: the answer is larger than 64 KiB" in rows[q]["error"]
    assert sum(r["error"] is None for r in rows.values()) == 13
    # What the run kept holds at most the cap per answer: here none of the 4 MB and the endless one.
    for kept in ("r.json", "r.html", ".defan_cache/responses.sqlite3"):
        assert (toy.path / kept).stat().st_size < 1_000_000, kept


def test_a_bad_answer_cap_is_a_usage_error(toy: pytest.Pytester) -> None:
    result = toy.runpytest("--defan-model=openai/test-model", "--defan-max-answer=lots", *TOY_ARGS)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--defan-max-answer: 'lots' is not a size (bytes, or with a unit: 512k, 1M, 2MiB)" in result.stderr.str()


@pytest.mark.parametrize("workers", [["-n", "2"]], ids=["n2"])
def test_an_absurd_retry_after_is_said_once_and_waited_at_most_the_backoff_maximum(toy: pytest.Pytester,
                                                                                  workers: list) -> None:
    # One prompt, asked twice: the second time after the backoff's maximum (lowered to 2 s here;
    # 60 s by default), not 1e9 s; under xdist the worker's note reaches the controller on the
    # prompt's report.  (Under -n 2 only: a serial run says it on the same path minus the hand-over.)
    write_toy(toy, TOY[:1])
    rule = {"fault": 429, "match": "*", "times": 1, "per_prompt": True, "retry_after": "1e9"}
    with OpenAIServer(answers=TOY_ANSWERS, faults=[rule]) as srv:
        result = toy.runpytest_subprocess(*toy_model_args(srv, "--defan-retries=1", "--defan-max-backoff=2",
                                                          "--defan-report=r.json", *workers), timeout=300)
        assert srv.counts == {TOY[0]["question"]: 2}
    assert result.ret == 0, result.stdout.lines[-20:]
    assert result.stdout.str().count("note: the provider asked to wait 1,000,000,000 s before a retry (Retry-After); "
                                     "every retry waits at most 2 s, the backoff's maximum (--defan-max-backoff)") == 1


@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_secrets_in_urls_reach_no_artefact_and_no_cache_key(toy: pytest.Pytester, workers: list) -> None:
    hook = "https://tok3nUser@hooks.example/run?code=QCODE4242&sig=SIGsecret77"
    with OpenAIServer(answers=TOY_ANSWERS) as srv:
        result = toy.runpytest_subprocess(*toy_model_args(
            srv, f'--defan-model-arg=extra_body={{"callback": "{hook}"}}', "--defan-report=r.json",
            "--defan-html=r.html", "--junitxml=j.xml", *workers))
        assert srv.requests[0]["body"]["callback"] == hook  # sent as given
    assert result.ret == 0, result.stdout.lines[-20:]
    meta = json.loads((toy.path / "r.json").read_text())["meta"]
    assert "https://***@hooks.example/run?code=***&sig=***" in json.dumps(meta)
    for secret in ("tok3nUser", "QCODE4242", "SIGsecret77"):
        assert secret not in result.stdout.str() + result.stderr.str() and files_contain(toy.path, secret) == []


@pytest.mark.parametrize("base", ["http://tok3nUser@127.0.0.1:{port}/v1", "http://me:pw5@127.0.0.1:{port}/v1"])
def test_an_api_base_with_user_info_is_one_usage_error_before_any_call(toy: pytest.Pytester, base: str) -> None:
    with OpenAIServer(answers=TOY_ANSWERS) as srv:
        result = toy.runpytest_subprocess("--defan-model=openai/test-model",
                                          f"--defan-model-arg=api_base={base.format(port=srv.port)}", *TOY_ARGS)
        assert srv.total == 0
    err = result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert err.count(f"api_base 'http://***@127.0.0.1:{srv.port}/v1' holds user info") == 1
    assert "tok3nUser" not in err + result.stdout.str() and "pw5" not in err + result.stdout.str()


# --------------------------------------------------------------------------------------------
# issue 21: the finish reason travels -- the server's word to the scorer, the items, the
# report rows, the page and the -v line, and back from the cache
# --------------------------------------------------------------------------------------------

CUT_QUESTION = TOY[4]["question"]  # planet 4: gold 4
SILENT_QUESTION = TOY[5]["question"]
FINISHING = {**MIXED, CUT_QUESTION: {"content": "Planet 4 has", "finish_reason": "length"},
             SILENT_QUESTION: {"content": "5", "finish_reason": None}}

RECORDS_CONFTEST = """
import json
import re

seen = {}

def pytest_runtest_logreport(report):
    if report.when == "call":
        props = dict(report.user_properties)
        if "defan" in props:
            seen[props["defan"]["id"]] = props["defan"]

def pytest_sessionfinish(session):
    if not hasattr(session.config, "workerinput"):
        with open("items.json", "w") as f:
            json.dump(seen, f)
"""


@pytest.mark.slow
@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
@pytest.mark.parametrize("path", ["auto", "litellm"])
def test_the_finish_reason_travels_end_to_end_and_back_from_the_cache(toy: pytest.Pytester, workers: list,
                                                                      path: str) -> None:
    toy.makeconftest(RECORDS_CONFTEST)
    with OpenAIServer(answers=FINISHING) as srv:
        for run in ("asked", "cached"):
            result = toy.runpytest_subprocess(*toy_model_args(
                srv, f"--defan-call-path={path}", "--defan-report=r.json", "--defan-html=r.html", "-v", *workers))
            assert result.ret == 0, result.stdout.lines[-20:]
            assert srv.total == 15  # the second run asked nothing
            if run == "cached":
                result.stdout.fnmatch_lines(["*15 prompts: 0 answered by the model, 15 from the cache*"])
            # the -v line of the cut answer says so; the ordinary "stop" is not repeated on every line
            result.stdout.fnmatch_lines(["*A: 'Planet 4 has' [[]finish: length, cut by the token limit[]]*"])
            assert not [ln for ln in result.stdout.lines if "[finish: stop" in ln]
            # null on the wire: unknown on the lean path; litellm says "stop" for it itself
            silent = None if path == "auto" else "stop"
            expected = {r["question"]: "stop" for r in TOY} | {CUT_QUESTION: "length", SILENT_QUESTION: silent}
            rows = json.loads((toy.path / "r.json").read_text(encoding="utf-8"))["rows"]
            assert {r["question"]: r.get("finish_reason") for r in rows} == expected, run
            assert ("finish_reason" in rows[5]) == (silent is not None)  # an unknown one: no key
            items = json.loads((toy.path / "items.json").read_text(encoding="utf-8"))
            assert {r["question"]: r["finish_reason"] for r in items.values()} == expected, run
            page = (toy.path / "r.html").read_text(encoding="utf-8")
            data = json.loads(re.search(r'id="defan-data">(.*?)</script>', page, re.S).group(1))
            col = data["cols"].index("finish_reason")
            assert {r[0]: r[col] for r in data["rows"]}["toy-q0001-p01"] == "length"


def test_a_prompts_description_names_its_finish_reason() -> None:
    from defan_pytest.plugin.wording import describe, finish_tag

    rec = {"id": "toy-q0001-p01", "question": "How many?", "answer": "4", "response": "Planet 4 has",
           "claim": None, "aligned": False, "correct": False, "error": None, "finish_reason": "length"}
    assert "  finish:   length (cut by the token limit)" in describe(rec).splitlines()
    assert finish_tag(rec) == " [finish: length, cut by the token limit]"
    assert finish_tag(dict(rec, finish_reason="content_filter")) == " [finish: content_filter]"
    assert finish_tag(dict(rec, finish_reason="stop")) == finish_tag(dict(rec, finish_reason=None)) == ""
    assert "finish:" not in describe(dict(rec, finish_reason=None))


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (Linux /proc)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat[stat.rindex(")") + 2:].split()[1]) == pid:
                out.append(int(entry.name))
    return out


@pytest.mark.slow
def test_a_worker_killed_never_hangs_the_run_and_a_resume_asks_only_the_unanswered(
        toy: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Issue 34 point 2.  Before: SIGKILL of one worker left its claims "calling" for ever and the
    # other worker waited on them until an outer timeout (progress stuck at 71/120).
    calls = tmp_path / "calls.jsonl"
    monkeypatch.setenv("DEFAN_TEST_CALLS", str(calls))
    monkeypatch.setenv("DEFAN_TEST_DELAY", "0.1")
    write_toy(toy, toy_rows(120))
    toy.makeconftest(COUNTING_CONFTEST.format(version="1", answer="'1'"))
    cmd = [sys.executable, "-m", "pytest", "--defan-model=counting", "-n", "2", "--defan-concurrency=16", *TOY_ARGS]
    proc = subprocess.Popen(cmd, cwd=toy.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and proc.poll() is None:
            asked = len(calls.read_text().splitlines()) if calls.exists() else 0
            workers = [p for p in _children(proc.pid) if p != proc.pid]
            if asked >= 30 and len(workers) >= 2:
                break
            time.sleep(0.05)
        assert proc.poll() is None, "the run ended before a worker could be killed"
        os.kill(sorted(workers)[0], signal.SIGKILL)
        out, _ = proc.communicate(timeout=240)  # the bound: it ends, never hangs
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    # It ends with a message: xdist's word on the worker that died, and the run's summary (the
    # controller asks and runs the prompts: a worker holds none of them).
    assert "120 prompts: " in out, out[-3000:]
    asked = [json.loads(line) for line in calls.read_text().splitlines()]
    assert len(asked) == len(set(asked))  # nothing asked twice in the run
    monkeypatch.setenv("DEFAN_TEST_DELAY", "0")
    again = toy.runpytest_subprocess("--defan-model=counting", *TOY_ARGS)
    assert again.ret == 0, again.stdout.lines[-20:]
    resumed = [json.loads(line) for line in calls.read_text().splitlines()][len(asked):]
    # The resume asks only what the killed run had not answered, each once.
    assert len(resumed) == len(set(resumed)) and not set(resumed) & set(asked)
    assert len(asked) + len(resumed) == 120
