"""The plugin's call path end to end: litellm calling the loopback OpenAI server from real pytest
sessions -- one call per prompt under xdist, a warm cache, resume after SIGKILL, a run stopped by
a bad key, errors counted apart, and secrets kept out of everything the run writes."""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

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


def test_xdist_sends_each_prompt_once_and_a_warm_cache_sends_none(project: pytest.Pytester) -> None:
    with OpenAIServer(answers=ANSWERS) as srv:
        first = project.runpytest_subprocess(*args(srv, "-n", "2"))
        assert first.ret == 0, first.stdout.lines[-20:]
        assert srv.counts == {q: 1 for q in ANSWERS}  # 60 prompts, each sent exactly once
        first.stdout.fnmatch_lines(["*60 prompts: 60 answered by the model, 0 from the cache*"])
        second = project.runpytest_subprocess(*args(srv))
        assert srv.total == 60  # nothing sent again
        second.stdout.fnmatch_lines(["*60 prompts: 0 answered by the model, 60 from the cache*",
                                     "*30 passed*30 hallucinated*"])
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
    assert nobel["rc_groups"] == 3  # its group is not fully scored
    assert "call-error" in result.stdout.lines[-1]


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


def test_sigkill_half_way_resumes_without_repeating(project: pytest.Pytester) -> None:
    with OpenAIServer(answers=ANSWERS, latency=0.15) as srv:
        cmd = [sys.executable, "-m", "pytest", *args(srv, "--defan-concurrency=2")]
        proc = subprocess.Popen(cmd, cwd=project.path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        deadline = time.monotonic() + 120
        while srv.total < 20 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        before = srv.counts
        db = sqlite3.connect(project.path / ".defan_cache" / "responses.sqlite3")
        committed = {row[0] for row in db.execute("SELECT prompt FROM answers")}
        db.close()
        assert 15 <= len(committed) < 60
        result = project.runpytest_subprocess(*args(srv))
        after = srv.counts
    assert result.ret == 0
    # every answer committed before the kill is reused: zero repeated requests for those ...
    assert all(after[q] == 1 for q in committed)
    # ... and only what was in flight at the kill (at most the concurrency) is asked again
    repeated = [q for q, n in after.items() if n > 1]
    assert len(repeated) <= 2 and all(q in before for q in repeated)
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
