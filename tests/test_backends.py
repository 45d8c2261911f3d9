"""The model-backend registry: the built-in backends, how one is chosen, how each judges its own
failures, and a backend added from outside the package -- one module plus one registry entry --
running real pytest sessions (serial and ``-n 2``)."""
from __future__ import annotations

import asyncio
import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Iterator

import pytest

from defan_pytest.calls.backends import BACKENDS, BUILT_IN, check_name, choose, make_caller
from defan_pytest.calls.backends.openai import (
    OPENAI,
    APIConnectionError,
    AuthenticationError,
    BadRequestError,
    InternalServerError,
    NotFoundError,
    PermissionDeniedError,
    ProviderError,
    RateLimitError,
    Timeout,
)
from defan_pytest.calls.models import CallableModel, LitellmModel
from defan_pytest.calls.protocol import EmptyAnswer
from defan_pytest.registry import RegistryError

# A toy backend, as a plugin would write it: model names ``echo/<anything>`` answer every prompt
# reversed.  ``echo/busy`` fails each prompt once with a transient error; ``echo/refuse`` fails
# with one no retry can fix; ``echo/cut`` says each answer was cut by the token limit.
ECHO_MODULE = '''
"""A toy model backend: ``echo/<anything>`` answers every prompt reversed."""
from defan_pytest.calls.backends.base import BaseBackend
from defan_pytest.calls.models import LitellmModel
from defan_pytest.calls.protocol import Caller, Reply


class Busy(Exception):
    """The echo is busy: ask again."""


class Refused(Exception):
    """The echo will never answer."""


class EchoBackend(BaseBackend):
    name = "echo"

    def knows(self, name):
        return name.startswith("echo/")

    def serves(self, model, call_path, timeout):
        if isinstance(model, LitellmModel) and model.model.startswith("echo/"):
            return True, "an echo model"
        return False, "not an echo model"

    def caller(self, model, timeout):
        return EchoCaller(model)

    def classify(self, exc):
        if isinstance(exc, Busy):
            return "retry"
        if isinstance(exc, Refused):
            return "fatal"
        return super().classify(exc)


ECHO = EchoBackend()


class EchoCaller(Caller):
    backend = ECHO

    def __init__(self, model):
        self.name = model.model
        self.identity = {"kind": "echo", "model": model.model}
        self.asked = set()

    async def __call__(self, prompt):
        if self.name == "echo/refuse":
            raise Refused("the echo refuses to answer")
        if self.name == "echo/busy" and prompt not in self.asked:
            self.asked.add(prompt)
            raise Busy("the echo is busy")
        if self.name == "echo/cut":  # a reply with its tokens and finish reason
            return Reply(prompt[::-1], 3, 2, "length")
        return prompt[::-1]
'''
# The project's one registry entry.
CONFTEST = "from defan_pytest.calls.backends import BACKENDS\nimport echo_backend\n\nBACKENDS.register(echo_backend.ECHO)\n"
# The questions read as answers backwards: "Answer: 3" (right) and "Answer: 4" (wrong: 5).
ROWS = [{"question": form.format(n), "answer": answer, "type": "numeric", "domain": "toy", "group": f"g{n}"}
        for n, answer in ((3, "3"), (4, "5")) for form in ("{} :rewsnA", "{} :rewsna", ".{} :rewsnA")]


@pytest.fixture
def echo(tmp_path: Path) -> Iterator[ModuleType]:
    """The toy backend's module, imported from a file outside the package and registered."""
    path = tmp_path / "echo_backend.py"
    path.write_text(ECHO_MODULE, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("echo_backend", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    saved = BACKENDS.snapshot()
    BACKENDS.register(module.ECHO)
    try:
        yield module
    finally:
        BACKENDS.restore(saved)


def test_the_built_in_backends_in_the_order_they_are_asked() -> None:
    assert BUILT_IN == ("callable", "openai", "litellm") and BACKENDS.names()[:3] == BUILT_IN
    with pytest.raises(RegistryError, match="built in"):
        BACKENDS.unregister("litellm")


def test_the_registry_takes_backend_instances_only() -> None:
    class Half:
        name = "half"

        def knows(self, name: str) -> bool:
            return False

    with pytest.raises(RegistryError, match="no serves, caller, classify"):
        BACKENDS.register(Half())
    with pytest.raises(RegistryError, match="a class, not a backend"):
        BACKENDS.register(type(OPENAI))
    with pytest.raises(RegistryError, match="already registered"):
        BACKENDS.register(OPENAI)


def test_choose_says_why_and_a_plugin_may_pick() -> None:
    lean = LitellmModel("m", "openai/gpt-4o-mini", {"api_base": "http://127.0.0.1:9/v1"})
    assert [(b.name, why) for b, why in [choose(lean), choose(lean, "litellm")]] == [
        ("openai", "OpenAI protocol"), ("litellm", "--defan-call-path=litellm")]
    general, why = choose(LitellmModel("m", "anthropic/claude-3-5-haiku"))
    assert general.name == "litellm" and why == "provider 'anthropic' is not called through the OpenAI protocol"
    assert choose(CallableModel("c", lambda p: p, False), "litellm")[0].name == "callable"
    picked, why = choose(lean, "auto", picked=BACKENDS.get("litellm"))
    assert picked.name == "litellm" and "pytest_defan_backend" in why


def test_the_lean_backend_judges_its_own_failures() -> None:
    verdicts = {cls: OPENAI.classify(cls("x", status_code=status)) for cls, status in (
        (BadRequestError, 400), (AuthenticationError, 401), (PermissionDeniedError, 403), (NotFoundError, 404),
        (RateLimitError, 429), (InternalServerError, 503), (APIConnectionError, None), (Timeout, None))}
    assert verdicts == {BadRequestError: "fail", AuthenticationError: "fatal", PermissionDeniedError: "fatal",
                        NotFoundError: "fatal", RateLimitError: "retry", InternalServerError: "retry",
                        APIConnectionError: "retry", Timeout: "retry"}
    assert [OPENAI.classify(ProviderError("x", status_code=s)) for s in (409, 422)] == ["retry", "fail"]
    assert OPENAI.classify(BadRequestError("API key is missing", status_code=400)) == "fatal"
    assert OPENAI.classify(EmptyAnswer("the model returned no content")) == "fail"
    assert OPENAI.classify(ConnectionResetError()) == "retry"


def test_a_toy_backend_decides_retry_or_fatal(echo: ModuleType) -> None:
    assert echo.ECHO.classify(echo.Busy()) == "retry" and echo.ECHO.classify(echo.Refused()) == "fatal"
    assert echo.ECHO.classify(ValueError("its own bug")) == "fail"


def test_a_registered_backend_knows_its_names_and_is_chosen_first(echo: ModuleType) -> None:
    assert check_name("echo/rev", {}) is None
    model = LitellmModel("echo/rev", "echo/rev")
    backend, why = choose(model)
    assert backend is echo.ECHO and why == "an echo model"
    caller = make_caller(model, timeout=5)
    assert caller.backend is echo.ECHO and asyncio.run(caller("abc")) == "cba"
    assert choose(LitellmModel("m", "openai/gpt-4o-mini"))[0].name == "openai"  # not an echo model


def test_an_unregistered_backend_s_names_are_unknown() -> None:
    problem = check_name("echo/rev", {})
    assert problem is not None and problem.startswith("unknown model 'echo/rev'")


def _echo_project(pytester: pytest.Pytester) -> None:
    pytester.path.joinpath("echo_backend.py").write_text(ECHO_MODULE, encoding="utf-8")
    pytester.makeconftest(CONFTEST)
    pytester.path.joinpath("toy.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")


@pytest.mark.parametrize("extra", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_toy_backend_runs_a_pytest_session(pytester: pytest.Pytester, extra: list) -> None:
    _echo_project(pytester)
    result = pytester.runpytest_subprocess(
        "--defan-model=echo/busy", "--defan-dataset=toy.jsonl", "--defan-cache=off", "--defan-spacy-model=none",
        "--defan-retries=2", "--defan-report=r.json", "-p", "no:cacheprovider", *extra,
    )
    assert result.ret == pytest.ExitCode.OK, result.stdout.lines[-20:]
    outcomes = result.parseoutcomes()  # each prompt an item: group g4's three are hallucinated
    # (and the 2 gate tests of the built-in error limit, toy and overall: passed)
    assert (outcomes.get("right"), outcomes.get("hallucinated"), outcomes.get("passed")) == (3, 3, 2), outcomes
    result.stdout.fnmatch_lines(["*via echo*", "*6 answered by the model*6 retries*"])
    report = json.loads(pytester.path.joinpath("r.json").read_text())
    rows = sorted(report["rows"], key=lambda r: r["id"])
    assert [(r["response"], r["claim"], r["correct"], r["attempts"]) for r in rows] == [
        (row["question"][::-1], row["question"].strip(".")[0], row["group"] == "g3", 2) for row in ROWS
    ]
    assert report["usage"]["call_path"] == "echo"


def test_a_backends_reply_brings_its_finish_reason_to_the_report(pytester: pytest.Pytester) -> None:
    _echo_project(pytester)
    result = pytester.runpytest_subprocess(
        "--defan-model=echo/cut", "--defan-dataset=toy.jsonl", "--defan-cache=off", "--defan-spacy-model=none",
        "--defan-report=r.json", "-p", "no:cacheprovider", "-v",
    )
    assert result.ret == pytest.ExitCode.OK, result.stdout.lines[-20:]
    rows = json.loads(pytester.path.joinpath("r.json").read_text())["rows"]
    assert {(r["finish_reason"], r["response"]) for r in rows} == {("length", row["question"][::-1]) for row in ROWS}
    result.stdout.fnmatch_lines(["*[[]finish: length, cut by the token limit[]]*"])


def test_a_fatal_failure_of_a_toy_backend_stops_the_run(pytester: pytest.Pytester) -> None:
    _echo_project(pytester)
    result = pytester.runpytest_subprocess(
        "--defan-model=echo/refuse", "--defan-dataset=toy.jsonl", "--defan-cache=off", "--defan-spacy-model=none",
        "-p", "no:cacheprovider",
    )
    assert result.ret != pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*Refused: the echo refuses to answer -- stopping*"])



def test_a_plugin_picks_the_backend_through_pytest_defan_backend(pytester: pytest.Pytester) -> None:
    # An OpenAI model string, which the built-in openai backend would take (and fail on: no
    # key); the conftest's pytest_defan_backend picks the echo backend for it instead.
    _echo_project(pytester)
    pytester.makeconftest(CONFTEST + (
        "\ndef pytest_defan_backend(config, model, call_path):\n"
        "    return BACKENDS.get('echo')\n"
    ))
    result = pytester.runpytest_subprocess(
        "--defan-model=openai/echo-plain", "--defan-dataset=toy.jsonl", "--defan-cache=off",
        "--defan-spacy-model=none", "--defan-report=r.json", "-p", "no:cacheprovider",
    )
    assert result.ret == pytest.ExitCode.OK, result.stdout.lines[-20:]
    report = json.loads(pytester.path.joinpath("r.json").read_text())
    assert report["usage"]["call_path"] == "echo"


def test_every_output_receives_the_report_through_pytest_defan_report(pytester: pytest.Pytester) -> None:
    # Another plugin (here a conftest) gets the finished report through the same hook the
    # built-in writers implement, on the controller only, once, also under xdist.
    _echo_project(pytester)
    pytester.makeconftest(CONFTEST + (
        "\nimport json, pathlib\n"
        "def pytest_defan_report(config, report):\n"
        "    out = pathlib.Path('seen.jsonl')\n"
        "    line = json.dumps({'rows': len(report.rows), 'worker': hasattr(config, 'workerinput')})\n"
        "    out.write_text((out.read_text() if out.exists() else '') + line + '\\n')\n"
    ))
    result = pytester.runpytest_subprocess(
        "--defan-model=echo/busy", "--defan-dataset=toy.jsonl", "--defan-cache=off", "--defan-spacy-model=none",
        "--defan-retries=2", "--defan-report=r.json", "-p", "no:cacheprovider", "-n", "2",
    )
    assert result.ret == pytest.ExitCode.OK, result.stdout.lines[-20:]
    seen = [json.loads(line) for line in pytester.path.joinpath("seen.jsonl").read_text().splitlines()]
    assert seen == [{"rows": len(ROWS), "worker": False}]
    assert len(json.loads(pytester.path.joinpath("r.json").read_text())["rows"]) == len(ROWS)
