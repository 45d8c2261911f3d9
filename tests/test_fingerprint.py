"""Tests of defan_pytest.calls.fingerprint: a registered application is identified by the code
it imports and the data it declares, so that editing it asks the model again (issue 19: the
README's own-project snippet, edited in ``myapp.py`` without a new ``version=``, used to reuse
every cached answer)."""
from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest

from defan_pytest.calls.fingerprint import FingerprintError, fingerprint, project_modules
from defan_pytest.calls.models import ModelError, model


def _module(path: Path) -> types.ModuleType:
    mod = types.ModuleType(path.stem)
    mod.__file__ = str(path)
    return mod


def test_the_project_s_imported_sources_and_declared_inputs_are_covered(tmp_path: Path) -> None:
    (tmp_path / "myapp.py").write_text("def answer(p):\n    return 'Paris'\n")
    (tmp_path / "kb").mkdir()
    (tmp_path / "kb" / "facts.md").write_text("Paris is the capital.\n")
    (tmp_path / "kb" / ".hidden").write_text("not read\n")
    venv = tmp_path / ".venv" / "lib"
    venv.mkdir(parents=True)
    (tmp_path / ".venv" / "pyvenv.cfg").write_text("home = /usr\n")
    (venv / "dep.py").write_text("x = 1\n")
    modules = {"myapp": _module(tmp_path / "myapp.py"), "dep": _module(venv / "dep.py"),
               "elsewhere": _module(Path(json.__file__)), "builtin": sys}
    fp = fingerprint(tmp_path, ["kb"], modules)
    assert fp.sources == ("myapp.py",) and fp.inputs == ("kb/facts.md",)
    assert fp.describe() == f"fingerprint {fp.digest[:8]}: 1 source file, 1 declared input file"
    assert fp.to_json() == {"digest": fp.digest, "sources": ["myapp.py"], "inputs": ["kb/facts.md"]}
    assert fingerprint(tmp_path, ["kb"], modules) == fp  # stable

    (tmp_path / "myapp.py").write_text("def answer(p):\n    return 'London'\n")
    edited = fingerprint(tmp_path, ["kb"], modules)
    assert edited.digest != fp.digest
    (tmp_path / "kb" / "facts.md").write_text("London is the capital.\n")
    assert fingerprint(tmp_path, ["kb"], modules).digest != edited.digest
    (venv / "dep.py").write_text("x = 2\n")  # an installed dependency is not the project's code
    (tmp_path / "test_other.py").write_text('"""a test module nobody imports"""\n')
    assert fingerprint(tmp_path, ["kb"], modules).digest == fingerprint(tmp_path, ["kb"], modules).digest


def test_installed_code_and_defan_pytest_itself_are_left_out(tmp_path: Path) -> None:
    import defan_pytest.calls.fingerprint as this

    assert project_modules(Path(this.__file__).parents[2], {"m": this}) == []


def test_test_modules_pytest_imported_are_not_the_applications_code(tmp_path: Path) -> None:
    # A fingerprint taken inside a test (defan_evaluate) sees the test modules pytest has
    # imported since the run started; the run's own fingerprint never did.
    files = {}
    for name in ("myapp.py", "test_app.py", "app_test.py", "conftest.py"):
        (tmp_path / name).write_text("x = 1\n")
        files[name[:-3]] = types.SimpleNamespace(__file__=str(tmp_path / name))
    assert [p.name for p in project_modules(tmp_path, files)] == ["conftest.py", "myapp.py"]


def test_a_missing_input_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FingerprintError, match=r"input 'knowledge/': no such file or folder"):
        fingerprint(tmp_path, ["knowledge/"], {})


def test_inputs_must_be_a_list_of_paths() -> None:
    with pytest.raises(ModelError, match="inputs= takes a list of file or folder paths"):
        model("x", inputs="knowledge/")


# The README's own-project snippet: conftest.py registers a function around myapp.answer.
CONFTEST = """
import defan_pytest
from myapp import answer

@defan_pytest.model("my-app", version="1"{inputs})
def my_app(prompt):
    return answer(prompt)
"""
APP = "import json, os\n\ndef answer(prompt):\n    with open(os.environ['CALLS'], 'a') as f:\n" \
      "        f.write(json.dumps(prompt) + '\\n')\n    return {answer!r}\n"
ROWS = [{"question": f"Q{i}: which number?", "answer": "1", "type": "numeric", "domain": "toy", "group": f"g{i // 3}"}
        for i in range(9)]
ARGS = ["--defan-model=my-app", "--defan-dataset=toy.jsonl", "--defan-spacy-model=none", "-p", "no:cacheprovider"]


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "n2"])
def test_editing_the_application_asks_again(pytester: pytest.Pytester, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch, xdist: list) -> None:
    calls = tmp_path / "calls.jsonl"
    monkeypatch.setenv("CALLS", str(calls))

    def sent() -> int:
        n = len(calls.read_text().splitlines()) if calls.exists() else 0
        calls.unlink(missing_ok=True)
        return n

    pytester.path.joinpath("toy.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    pytester.path.joinpath("kb.md").write_text("facts\n")
    pytester.makeconftest(CONFTEST.format(inputs=', inputs=["kb.md"]'))
    pytester.path.joinpath("myapp.py").write_text(APP.format(answer="1"))
    first = pytester.runpytest_subprocess(*ARGS, *xdist)
    assert sent() == 9
    first.stdout.fnmatch_lines(["*9 prompts: 9 answered by the model, 0 from the cache*"])
    pytester.path.joinpath("test_unrelated.py").write_text('"""A test module the application never imports."""\n')
    warm = pytester.runpytest_subprocess(*ARGS, *xdist)
    assert sent() == 0  # nothing of the application changed: every answer reused
    warm.stdout.re_match_lines([r".*9 prompts: 0 answered by the model, 9 from the cache \(my-app version 1, "
                                r"source [0-9a-f]{8} \(fingerprint [0-9a-f]{8}: 2 source files, "
                                r"1 declared input file\)\).*"])
    pytester.path.joinpath("myapp.py").write_text(APP.format(answer="2"))  # a regression, same version=
    edited = pytester.runpytest_subprocess(*ARGS, *xdist)
    assert sent() == 9
    edited.stdout.fnmatch_lines(["*9 prompts: 9 answered by the model, 0 from the cache*", "*hallucinated*"])
    pytester.path.joinpath("kb.md").write_text("other facts\n")  # a declared input changed
    pytester.runpytest_subprocess(*ARGS, *xdist)
    assert sent() == 9


def test_a_missing_declared_input_is_a_usage_error_before_any_call(pytester: pytest.Pytester, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CALLS", str(tmp_path / "calls.jsonl"))
    pytester.path.joinpath("toy.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    pytester.makeconftest(CONFTEST.format(inputs=', inputs=["knowledge/"]'))
    pytester.path.joinpath("myapp.py").write_text(APP.format(answer="1"))
    result = pytester.runpytest_subprocess(*ARGS)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--defan-model my-app: input 'knowledge/': no such file or folder*"])
    assert not (tmp_path / "calls.jsonl").exists()


def test_a_link_loop_inside_a_declared_folder_is_one_clear_error(tmp_path: Path) -> None:
    """Issue 34 (8): it was an INTERNALERROR RuntimeError (exit 3)."""
    folder = tmp_path / "knowledge"
    folder.mkdir()
    (folder / "facts.md").write_text("facts\n")
    (folder / "loop").symlink_to(folder / "loop")
    with pytest.raises(FingerprintError, match=r"input 'knowledge/': .*loop: a link that leads nowhere"):
        fingerprint(tmp_path, ["knowledge/"], {})


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_fifo_or_a_device_named_as_an_input_is_said_to_be_one(tmp_path: Path, kind: str) -> None:
    """Issue 34 (8): a FIFO or a device named directly was reported as "no such file"."""
    import os

    if kind == "fifo":
        os.mkfifo(tmp_path / "pipe")
        item, what = "pipe", "a FIFO"
    else:
        item, what = "/dev/null", "a character device"
    with pytest.raises(FingerprintError, match=rf"input '{item}': {what}, not a regular file or a folder") as info:
        fingerprint(tmp_path, [item], {})
    assert "no such file" not in str(info.value)
