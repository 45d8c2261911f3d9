"""A local OpenAI-protocol server (llama.cpp's llama-server, Ollama, vLLM) as users run one, in
real pytest sessions (issue 24, points 2-4): what cannot work stops the run at its first
requests with one message, a local server costs nothing and says so once, Ctrl-C says what is
kept, --collect-only says nothing of narrowing, and answers cut by max_tokens are counted."""
from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from defan_pytest.calls.protocol import Prompt
from defan_pytest.calls.reach import DOWN_SECONDS, Reach
from openai_server import OpenAIServer

ROWS = [{"question": f"How many moons does planet {i} have?", "answer": str(i % 7), "type": "numeric",
         "domain": "toy", "group": f"g{i // 3}"} for i in range(15)]
ANSWERS = {r["question"]: r["answer"] for r in ROWS}
TOY_ARGS = ["--defan-dataset=toy.jsonl", "--defan-spacy-model=none", "-p", "no:cacheprovider", "-p", "no:randomly"]
WORKERS = [[], ["-n", "2"]]


@pytest.fixture
def toy(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("DEFAN_PROGRESS_SECONDS", "60")
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("BUILD_NUMBER", raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    pytester.path.joinpath("toy.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    return pytester


def model_args(base: str, *extra: str) -> list:
    return ["--defan-model=openai/smollm2", f"--defan-model-arg=api_base={base}", "--defan-timeout=5", *TOY_ARGS,
            *extra]


def free_port() -> int:
    """A port nothing listens on: bound, then closed."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def stopped_once(result: pytest.RunResult, message: str) -> None:
    """The run stopped (exit 2) with ``message`` said once, and no traceback."""
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.INTERRUPTED, result.stdout.lines[-20:]
    assert out.count(message) == 1, out
    assert "Traceback" not in out and "threading.py" not in out


# -- point 2: stop early on what cannot work ---------------------------------------------------

@pytest.mark.parametrize("workers", WORKERS)
@pytest.mark.parametrize("path", ["auto", "litellm"])
def test_a_refused_port_stops_the_run_with_one_message(toy: pytest.Pytester, workers: list, path: str) -> None:
    port = free_port()
    result = toy.runpytest_subprocess(*model_args(f"http://127.0.0.1:{port}/v1", f"--defan-call-path={path}",
                                                  *workers))
    stopped_once(result, f"nothing answers at http://127.0.0.1:{port}/v1")
    assert "(connection refused) -- stopping before any answer: start the model server" in result.stdout.str()
    assert "retries" not in result.stdout.str().split("Interrupted")[-1]


@pytest.mark.parametrize("workers", WORKERS)
def test_an_api_base_without_a_scheme_stops_the_run_before_the_server_sees_a_request(
        toy: pytest.Pytester, workers: list) -> None:
    with OpenAIServer(answers=ANSWERS) as srv:
        result = toy.runpytest_subprocess(*model_args(f"127.0.0.1:{srv.port}/v1", *workers))
        assert srv.total == 0
    stopped_once(result, f"the model's address '127.0.0.1:{srv.port}/v1/chat/completions' is not an http:// or "
                         "https:// URL -- stopping: give api_base with its scheme")


def test_a_404_of_the_endpoint_names_the_url_and_the_fix(toy: pytest.Pytester) -> None:
    with OpenAIServer(answers=ANSWERS) as srv:
        result = toy.runpytest_subprocess(*model_args(f"http://127.0.0.1:{srv.port}/nope", "--defan-concurrency=4"))
    stopped_once(result, f"the model server answered 404 Not Found for http://127.0.0.1:{srv.port}/nope/chat/completions")
    assert "check api_base (an OpenAI-protocol server's usually ends in /v1" in result.stdout.str()


def test_a_model_the_server_does_not_have_keeps_the_servers_words(toy: pytest.Pytester) -> None:
    with OpenAIServer(faults=[{"fault": 404, "match": "*"}]) as srv:
        result = toy.runpytest_subprocess(*model_args(srv.base_url, "--defan-concurrency=4"))
        assert srv.total <= 4
    stopped_once(result, "NotFoundError (HTTP 404)")
    assert "does not exist" in result.stdout.str() and "chat-completions endpoint" not in result.stdout.str()


class Refused(ConnectionRefusedError):
    pass


class FakeCaller:
    route = type("R", (), {"url": "http://127.0.0.1:9/v1/chat/completions"})()


def test_after_answers_a_refused_server_is_retried_until_it_has_been_down_long_enough() -> None:
    now = [0.0]
    reach = Reach(FakeCaller(), clock=lambda: now[0])
    assert reach.judge(Refused(), "retry") == "fatal"  # before any answer: nothing is there
    reach.answered()
    assert reach.judge(Refused(), "retry") == "retry"  # a restart, perhaps
    now[0] = DOWN_SECONDS - 1
    assert reach.judge(Refused(), "retry") == "retry"
    reach.answered()  # it came back: the clock starts again
    now[0] += DOWN_SECONDS - 1
    assert reach.judge(Refused(), "retry") == "retry"
    now[0] += DOWN_SECONDS
    assert reach.judge(Refused(), "retry") == "fatal"
    assert "could not be reached for 30 s (connection refused), after 2 answers" in (reach.why(Refused()) or "")
    assert reach.judge(ValueError("no"), "fail") == "fail"  # anything else is the backend's verdict
    assert Reach(object()).judge(Refused(), "retry") == "retry"  # a callable's failures are its own


# -- point 3: quiet and exact ---------------------------------------------------------------------

@pytest.mark.parametrize("workers", WORKERS)
def test_a_local_server_costs_nothing_said_once(toy: pytest.Pytester, workers: list) -> None:
    with OpenAIServer(answers=ANSWERS) as srv:
        result = toy.runpytest_subprocess(*model_args(srv.base_url, "--defan-report=r.json", *workers))
    out = result.stdout.str()
    assert result.ret == 0, result.stdout.lines[-20:]
    assert out.count(f"local server 127.0.0.1:{srv.port}: no cost") == 1
    assert "cost unknown" not in out and "no price" not in out and "cost $" not in out
    result.stdout.fnmatch_lines(["usage via the OpenAI protocol: * in 15 answers; latency p50 *"])
    usage = json.loads((toy.path / "r.json").read_text())["usage"]
    assert usage["cost"]["spent"] == 0 and usage["price"]["local"] is True


def test_a_price_given_for_a_local_server_wins(toy: pytest.Pytester) -> None:
    with OpenAIServer(answers=ANSWERS) as srv:
        result = toy.runpytest_subprocess(*model_args(srv.base_url, "--defan-model-arg=price_in=1",
                                                      "--defan-model-arg=price_out=2"))
    assert result.ret == 0 and "local server" not in result.stdout.str()
    result.stdout.fnmatch_lines(["usage via the OpenAI protocol: *; cost $*"])


def test_the_counts_say_each_prompt_once(toy: pytest.Pytester) -> None:
    broken = ROWS[0]["question"]
    with OpenAIServer(answers=ANSWERS, faults=[{"fault": 500, "match": broken}]) as srv:
        result = toy.runpytest_subprocess(*model_args(srv.base_url, "--defan-retries=1"))
    result.stdout.fnmatch_lines(["15 prompts: 14 answered by the model, 0 from the cache, 0 not sent, 1 failed; 1 retry"])


def test_collect_only_says_nothing_of_narrowing(toy: pytest.Pytester) -> None:
    with OpenAIServer(answers=ANSWERS) as srv:
        result = toy.runpytest_subprocess(*model_args(srv.base_url, "--collect-only", "-q", "--defan-report=r.json"))
        assert srv.total == 0
    out = result.stdout.str()
    assert result.ret == 0 and "15 tests collected" in out
    assert "narrowed" not in out and "selected prompts ran" not in out and "DefAn:" not in out
    assert not (toy.path / "r.json").exists()


def test_ctrl_c_says_what_is_kept_and_the_same_command_resumes(toy: pytest.Pytester) -> None:
    hung = ROWS[5]["question"]
    with OpenAIServer(answers=ANSWERS, faults=[{"fault": "hang", "match": hung, "hang_seconds": 60, "times": 1}]) as srv:
        args = model_args(srv.base_url, "--defan-concurrency=1", "--defan-timeout=60")
        proc = subprocess.Popen([sys.executable, "-m", "pytest", *args], cwd=toy.path, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        assert srv.wait_for_total(6, timeout=120)  # five answered, the sixth hangs
        proc.send_signal(signal.SIGINT)
        said_once_then_resumed(toy, srv, proc, args, "5 answers of this run kept in the cache, 10 of the 15 prompts still "
                                                "to ask: run the same command again to resume")
        assert all(n == 1 for q, n in srv.counts.items() if q != hung)


def test_ctrl_c_under_xdist_says_what_the_cache_holds_and_the_same_command_resumes(toy: pytest.Pytester) -> None:
    hung = [r["question"] for r in ROWS[5:]]
    faults = [{"fault": "hang", "match": q, "hang_seconds": 60, "times": 1} for q in hung]
    with OpenAIServer(answers=ANSWERS, faults=faults) as srv:
        args = model_args(srv.base_url, "--defan-concurrency=4", "--defan-timeout=60", "-n", "2")
        # Its own process group, signalled whole, as a terminal's Ctrl-C reaches the controller
        # and the workers alike.
        proc = subprocess.Popen([sys.executable, "-m", "pytest", *args], cwd=toy.path, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
                                start_new_session=True)
        assert srv.wait_for_total(8, timeout=120)
        db = toy.path / ".defan_cache" / "responses.sqlite3"

        def cached() -> int:
            try:
                with sqlite3.connect(db, timeout=5) as conn:
                    return int(conn.execute("SELECT COUNT(*) FROM answers").fetchone()[0])
            except sqlite3.Error:
                return 0

        # The five answers served and written to the cache (an answer the server has sent may
        # still be on its way to the cache writer of a worker).
        deadline = 60
        while (sum(1 for q, n in srv.counts.items() if q not in hung) < 5 or cached() < 5) and deadline:
            deadline -= 1
            srv.wait_for_total(100, timeout=0.5)
        os.killpg(proc.pid, signal.SIGINT)
        # The controller asks (issue 35): it counts its own answers, as a serial run does.
        said_once_then_resumed(toy, srv, proc, args, "5 answers of this run kept in the cache, 10 of the 15 prompts still "
                                                "to ask: run the same command again to resume")


def said_once_then_resumed(toy: pytest.Pytester, srv: OpenAIServer, proc: subprocess.Popen, args: list,
                           kept: str) -> None:
    """The interrupted run ends (exit 2) with the Ctrl-C line saying ``kept`` once and no
    traceback; the same command then asks only the rest."""
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, out
    assert out.count(f"defan-pytest: stopped by Ctrl-C during the model calls: {kept}") == 1, out
    assert "Traceback" not in out and "threading.py" not in out and "KeyboardInterrupt" not in out
    # The hangs were there to be interrupted: the resumed run is answered at once (a hung prompt
    # the interrupted run never sent would otherwise hold it for the whole --defan-timeout).
    srv.set_faults([])
    again = toy.runpytest_subprocess(*args)
    assert again.ret == 0, again.stdout.lines[-20:]
    again.stdout.fnmatch_lines(["*15 prompts: 10 answered by the model, 5 from the cache*"])


# -- point 4: cut answers flagged -----------------------------------------------------------------

@pytest.mark.parametrize("workers", WORKERS)
def test_answers_cut_by_max_tokens_are_counted_with_the_hint(toy: pytest.Pytester, workers: list,
                                                             tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    summary = tmp_path / "step.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    cut = {**ANSWERS, **{r["question"]: {"content": "Planet has", "finish_reason": "length"} for r in ROWS[:3]}}
    with OpenAIServer(answers=cut) as srv:
        result = toy.runpytest_subprocess(*model_args(srv.base_url, "--defan-model-arg=max_tokens=8",
                                                      "--defan-report=r.json", *workers))
    line = ('3 of 15 answers were cut by the token limit (finish reason "length", max_tokens 8): they are scored as '
            'they are; raise it with --defan-model-arg max_tokens=256 (or max_tokens in [models."openai/smollm2"])')
    assert result.stdout.str().count(line) == 1
    assert json.loads((toy.path / "r.json").read_text())["meta"]["calls"]["cut"] == 3
    assert "3 of 15 answers were cut by the token limit" in summary.read_text(encoding="utf-8")


def test_an_http_url_the_client_cannot_use_is_not_called_a_non_http_url() -> None:
    """Issue 34 (10): ``http://127.1:PORT`` was reported as "not an http:// URL"."""
    class InvalidUrlClientError(Exception):
        pass

    class ShortHost:
        route = type("R", (), {"url": "http://127.1:8080/v1/chat/completions"})()

    class NoScheme:
        route = type("R", (), {"url": "127.0.0.1:8080/v1"})()

    exc = InvalidUrlClientError("127.1 - is not a canonical IPv4 address")
    said = Reach(ShortHost()).why(exc) or ""
    assert "not an http" not in said and "is an http URL the HTTP client cannot use" in said
    assert "127.1 - is not a canonical IPv4 address" in said and "127.0.0.1:8080" in said
    assert "is not an http:// or https:// URL" in (Reach(NoScheme()).why(exc) or "")
