"""The example model, my-rag (examples/my_rag, registered by the top-level conftest.py).

* Its pieces, directly: the knowledge files, the knobs and the version, the BM25 retriever, the
  reader (question kinds, sentences, candidates with and without spaCy) and the pipeline.
* The README's main command, verbatim, in a fresh project holding the repository's conftest.py,
  examples/, thresholds.toml and pyproject.toml (and a test suite that must not run).
* Runs of the example in one project (:func:`example_project`): a baseline run with a report,
  a knob that drops knowledge (the level gate fails), and ``-n 2`` (the baseline's figures).
"""
from __future__ import annotations

import doctest
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Dict, List, Optional

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "examples") not in sys.path:  # the top-level conftest.py puts it there too
    sys.path.insert(0, str(ROOT / "examples"))

import my_rag  # noqa: E402
from my_rag import config as rag_config  # noqa: E402
from my_rag import knowledge, pipeline, reader, retriever  # noqa: E402
from my_rag.reader import Kind, Reader, analyse, answer_kind, sentences  # noqa: E402

HAS_SPACY_PIPELINE = rag_config.find_spacy_pipeline("auto") is not None


# --------------------------------------------------------------------------------------------
# the pieces
# --------------------------------------------------------------------------------------------


def test_doctests_of_the_example() -> None:
    for module in (rag_config, knowledge, retriever, reader, pipeline, my_rag):
        failures, _ = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert failures == 0, module.__name__


def test_knowledge_files_parse_into_passages() -> None:
    names = my_rag.available_knowledge()
    assert {"nobel_physics", "world_cup_finals", "conference_venues"} <= set(names)
    for path in my_rag.Config().files():
        passages = knowledge.load([path])
        assert len(passages) >= 5, path.name
        assert all(p.text and "Written for the my-rag example" not in p.text for p in passages), path.name


def test_markdown_and_text_formats() -> None:
    md = "# Title\n\n> an editor's note\n> on two lines\n\n## Part\n\nFirst\nparagraph.\n\nSecond one.\n"
    passages = knowledge.parse(md, "k.md")
    assert [(p.id, p.title, p.section, p.text) for p in passages] == [
        ("k.md#0", "Title", "Part", "First paragraph."),
        ("k.md#1", "Title", "Part", "Second one."),
    ]
    assert passages[0].indexed_text == "Title Part First paragraph."
    txt = knowledge.parse("The title line\n\nOne.\n\n\nTwo.\n", "k.txt")
    assert [(p.title, p.text) for p in txt] == [("The title line", "One."), ("The title line", "Two.")]


def test_knobs_and_version() -> None:
    default, problems = my_rag.Config.from_env({})
    assert problems == [] and default.top_k == rag_config.DEFAULT_TOP_K and default.knowledge == ()
    assert len(default.files()) == len(my_rag.available_knowledge())
    shallow, _ = my_rag.Config.from_env({"MY_RAG_TOP_K": "1"})
    physics, _ = my_rag.Config.from_env({"MY_RAG_KNOWLEDGE": "nobel_physics"})
    assert [p.name for p in physics.files()] == ["nobel_physics.md"]
    versions = {default.version, shallow.version, physics.version}
    assert len(versions) == 3, "each knob must change the version (the response cache key)"
    assert default.version == my_rag.Config.from_env({"MY_RAG_KNOWLEDGE": "all"})[0].version
    assert " k1 " in shallow.version and "kb=nobel_physics" in physics.version
    bad, problems = my_rag.Config.from_env({"MY_RAG_TOP_K": "0", "MY_RAG_KNOWLEDGE": "nobel_physics,nope"})
    assert bad == my_rag.Config() and len(problems) == 2
    assert "MY_RAG_TOP_K='0'" in problems[0] and "unknown knowledge file(s) nope" in problems[1]


def test_version_follows_the_knowledge_files(tmp_path: Path) -> None:
    (tmp_path / "facts.md").write_text("# Facts\n\nThe sky is blue.\n", encoding="utf-8")
    config = my_rag.Config(knowledge_dir=tmp_path)
    before = config.version
    (tmp_path / "facts.md").write_text("# Facts\n\nThe sky is grey.\n", encoding="utf-8")
    assert config.version != before


def test_bm25_retriever_ranks_the_passage_with_the_rare_words_first() -> None:
    passages = knowledge.parse(
        "# Cups\n\nUruguay won the 1930 cup in Montevideo.\n\nItaly won the 1934 cup in Rome.\n\n"
        "Italy won the 1938 cup in Paris, beating Hungary.\n", "cups.md"
    )
    found = retriever.BM25Retriever(passages).search("Who won the 1934 cup?", k=2)
    assert [p.text for p, _ in found][0] == "Italy won the 1934 cup in Rome."
    assert 0 < found[1][1] < found[0][1] < 1
    assert retriever.BM25Retriever(passages).search("cube root of 804357", k=3) == []
    assert retriever.BM25Retriever([]).search("anything", k=3) == []


@pytest.mark.parametrize("question, kind", [
    ("Who was awarded the Nobel Prize in Chemistry in 1911?", Kind.PERSON),
    ("Which individual received the Nobel Prize for Literature in 1913?", Kind.PERSON),
    ("Which nation lifted the trophy in the 1998 FIFA World Cup?", Kind.TEAM),
    ("Which team secured the second position in the 1986 FIFA World Cup?", Kind.TEAM),
    ("What was the crowd size at the final match of the 1970 FIFA World Cup?", Kind.NUMBER),
    ("In what stadium did the final match of the 1966 FIFA World Cup take place?", Kind.STADIUM),
    ("Where did ICCV take place in 2019? Give me the exact location only.", Kind.PLACE),
    ("When was Holly Hunter born (mm/dd/yyyy)?", Kind.DATE),
    ("When did Japan join the United Nations?", Kind.DATE),
    ("Which year did Bangladesh join the OIC?", Kind.YEAR),
    ("What was Harvard University's position in the QS rankings for 2023?", Kind.RANK),
    ("Which movie earned Kathy Bates the Oscar?", Kind.TITLE),
    ("find the cube root of 804357 ?", Kind.NUMBER),
])
def test_answer_kind_from_the_wording(question: str, kind: Kind) -> None:
    assert answer_kind(question) is kind


def test_sentences_keep_initials_together() -> None:
    text = "J. J. Thomson won in 1906. Raymond Davis Jr. shared it in 2002. *Titanic* won too."
    assert [text[s:e] for s, e in sentences(text)] == [
        "J. J. Thomson won in 1906.", "Raymond Davis Jr. shared it in 2002.", "*Titanic* won too.",
    ]


PASSAGES = knowledge.parse(
    "# Test facts\n\n"
    "The 1921 Nobel Prize in Physics was awarded to Albert Einstein for the photoelectric effect.\n\n"
    "Uruguay won the 1930 FIFA World Cup, beating Argentina 4-2 in the final at the Estadio Centenario in "
    "Montevideo. Argentina were runners-up. The attendance was 68,346.\n\n"
    "For the films of 1990, *Misery* won Kathy Bates Best Actress. Kathy Bates was born on June 28, 1948.\n\n"
    "CVPR 2019 was held in Long Beach, California.\n\n"
    "Harvard University was ranked 4th in the QS World University Rankings 2024.\n\n"
    "Bangladesh joined the OIC in 1974 and the United Nations on 17 September 1974.\n",
    "facts.md",
)


@pytest.fixture(scope="module")
def nlp() -> object:
    if not HAS_SPACY_PIPELINE:
        pytest.skip("no English spaCy pipeline installed")
    return pipeline.load_nlp("auto")


@pytest.fixture(params=["regex", "spacy"])
def read(request: pytest.FixtureRequest) -> Reader:
    """The reader without spaCy (regular expressions) and with the installed pipeline."""
    return Reader(request.getfixturevalue("nlp") if request.param == "spacy" else None)


@pytest.mark.parametrize("question, expected", [
    ("Who was awarded the Nobel Prize in Physics in 1921?", "Albert Einstein"),
    ("Who won the 1930 FIFA World Cup?", "Uruguay"),
    ("Which team came second in the 1930 FIFA World Cup?", "Argentina"),
    ("What was the attendance of the 1930 FIFA World Cup final?", "68,346"),
    ("In what stadium did the 1930 FIFA World Cup final take place?", "Estadio Centenario"),
    ("Which movie earned Kathy Bates the Oscar?", "Misery"),
    ("When was Kathy Bates born (mm/dd/yyyy)?", "06/28/1948"),
    ("Where was CVPR held in 2019?", "Long Beach, California"),
    ("What was Harvard University's QS ranking in 2024?", "4"),
    ("Which year did Bangladesh join the OIC?", "1974"),
    ("When did Bangladesh join the United Nations?", "17 September 1974"),
])
def test_reader_takes_the_wanted_kind_from_the_passage(read: Reader, question: str, expected: str) -> None:
    found = retriever.BM25Retriever(PASSAGES).search(question, k=3)
    reading = read.read(analyse(question), found)
    assert reading is not None and reading.candidate == expected
    assert reading.answer == expected  # a short answer for these forms


def test_reader_answers_some_forms_with_the_sentence(read: Reader) -> None:
    question = "In 1921, which individual received the Nobel Prize in Physics?"
    reading = read.read(analyse(question), retriever.BM25Retriever(PASSAGES).search(question, k=3))
    assert reading is not None and reading.candidate == "Albert Einstein"
    assert reading.answer == (
        "The 1921 Nobel Prize in Physics was awarded to Albert Einstein for the photoelectric effect. [source: facts.md]"
    )


@pytest.fixture(scope="module")
def rag() -> my_rag.Pipeline:
    return my_rag.Pipeline(my_rag.Config()).load()


def test_pipeline_right_when_the_passage_is_there(rag: my_rag.Pipeline) -> None:
    assert rag.answer("Who won the Nobel Prize in Physics in 1921?") == "Albert Einstein"
    assert rag.answer("Which team won the 1998 FIFA World Cup?") == "France"
    assert rag.answer("Where was CVPR 2019 held?") == "Long Beach, California"
    trace = rag.trace("Who was awarded the Nobel Prize in Chemistry in 1911?")
    assert trace.answer == "Marie Curie" and trace.reading is not None
    assert trace.reading.passage.source == "nobel_chemistry.md"


def test_pipeline_wrong_or_silent_when_it_is_not(rag: my_rag.Pipeline) -> None:
    # Chemistry between 1951 and 1989 is not in the knowledge base: the reader answers from the
    # closest passage (another year, or another prize), as retrieval-augmented systems do.
    wrong = rag.trace("Who was awarded the Nobel Prize in Chemistry in 1962?")
    assert wrong.reading is not None and wrong.answer
    assert not ("1962" in wrong.reading.passage.text and "Chemistry" in wrong.reading.passage.text)
    assert rag.answer("find the cube root of 804357 ?(Give me the numeric answer only)") == pipeline.NOTHING_RETRIEVED


def test_knowledge_knob_changes_the_answers() -> None:
    physics_only = my_rag.Pipeline(my_rag.Config(knowledge=("nobel_physics",)))
    assert physics_only.answer("Who won the Nobel Prize in Physics in 1921?") == "Albert Einstein"
    assert physics_only.answer("Which team won the 1998 FIFA World Cup?") != "France"


def test_pipeline_answers_from_many_threads(rag: my_rag.Pipeline) -> None:
    questions = [
        "Who won the Nobel Prize in Physics in 1921?", "Which team won the 1998 FIFA World Cup?",
        "Where was CVPR 2019 held?", "When was Tom Hanks born (mm/dd/yyyy)?",
    ] * 8
    fresh = my_rag.Pipeline(my_rag.Config())  # loads on the first question, from several threads
    answers: Dict[int, str] = {}

    def ask(i: int) -> None:
        answers[i] = fresh.answer(questions[i])

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(len(questions))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [answers[i] for i in range(len(questions))] == [rag.answer(q) for q in questions]


def test_bad_knob_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(pipeline.PipelineError, match="cannot load spaCy pipeline 'no_such_pipeline'"):
        my_rag.Pipeline(my_rag.Config(spacy="no_such_pipeline")).load()


# --------------------------------------------------------------------------------------------
# sessions: the README's main command, the level gate, -n 2
# --------------------------------------------------------------------------------------------

#: A test suite in the example project; the README's command must not run it.
PROJECT_SUITE = "def test_the_project_suite_is_not_run():\n    raise AssertionError('the test suite ran')\n"
#: The thresholds of the gate tests: a limit the default knowledge base meets and the physics
#: file alone does not.
NOBEL_GATE = "[domains.nobel]\nmax_fch = 0.60\n"
#: The runs of the gate tests: the README's command on 10 paraphrase groups (the xdist
#: start-up, not the model, dominates a -n 2 run), judged by NOBEL_GATE.
SMALL = ("--defan-model=my-rag", "--defan-domain=nobel", "--defan-sample=150", "--defan-thresholds=nobel-gate.toml")


def make_example_project(dest: Path) -> Path:
    """A copy of what a fresh clone runs the example from: conftest.py, examples/,
    thresholds.toml and pyproject.toml (testpaths, addopts), plus a test suite of its own."""
    for name in ("conftest.py", "thresholds.toml", "pyproject.toml"):
        shutil.copy(ROOT / name, dest / name)
    shutil.copytree(ROOT / "examples", dest / "examples", ignore=shutil.ignore_patterns("__pycache__"))
    (dest / "tests").mkdir(exist_ok=True)
    (dest / "tests" / "test_project_suite.py").write_text(PROJECT_SUITE, encoding="utf-8")
    (dest / "nobel-gate.toml").write_text(NOBEL_GATE, encoding="utf-8")
    return dest


def example_env(data_dir: Path, **extra: str) -> Dict[str, str]:
    """The environment of a user's shell: no pytest or xdist variables of this run."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "MY_RAG_", "DEFAN_")) and k != "COV_CORE_SOURCE"}
    env.update(DEFAN_DATA_DIR=str(data_dir), LITELLM_LOCAL_MODEL_COST_MAP="True", **extra)
    return env


def run_example(project: Path, data_dir: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    """``python -m pytest ARGS`` in ``project``, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:sugar", *args], cwd=project, env=example_env(data_dir, **env),
        capture_output=True, text=True, timeout=300,
    )


def report(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def table_line(stdout: str, scope: str) -> List[str]:
    lines = [line.split() for line in stdout.splitlines() if line.startswith(scope + " ")]
    assert lines, f"no {scope!r} line in:\n{stdout}"
    return lines[-1]


@pytest.mark.slow
def test_readme_main_command_runs_the_example_and_not_the_test_suite(
    pytester: pytest.Pytester, public_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_example_project(pytester.path)
    pytest_script = Path(sys.executable).with_name("pytest")
    command = [str(pytest_script)] if pytest_script.exists() else [sys.executable, "-m", "pytest"]
    for name in [k for k in os.environ if k.startswith(("PYTEST_", "MY_RAG_", "DEFAN_"))]:
        monkeypatch.delenv(name)  # pytester.run passes os.environ on
    monkeypatch.setenv("DEFAN_DATA_DIR", str(public_dir))
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    result = pytester.run(*command, "--defan-model=my-rag", "--defan-domain=nobel")  # README, verbatim
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines([
        "defan: model my-rag, 600 prompts",
        "my-rag: top_k=4, knowledge=all (9 files), reader=*; sample 600 (the default of conftest.py*",
        "collected 600 items",
        "*= DefAn: my-rag =*",
        "nobel * PASS",
        "overall (mean) * PASS",
        "600 prompts: 600 answered by the model, 0 from the cache*",
        "outcomes of 600 prompts: * right, * hallucinated, *",
        "wrong (FCH): * of 40 questions (most wrong first*",
        "  nobel-q* */15  *: *gold *",
        "*passed*",
    ])
    assert " right" in result.stdout.lines[-1] and " hallucinated" in result.stdout.lines[-1]  # in any order
    out = result.stdout.str()
    assert "test_project_suite" not in out and "the test suite ran" not in out
    assert "failed" not in out.splitlines()[-1]
    fch = float(table_line(out, "nobel")[2])
    assert 0.25 <= fch <= 0.65, f"nobel FCH {fch}: the README's figures need measuring again"


#: A project of a new user: no pytest configuration at all, its own unit test that fails, a
#: model registered in conftest.py and a data set of two questions (one the model gets right).
UNCONFIGURED_PROJECT = {
    "conftest.py": (
        "import defan_pytest\n\n"
        "@defan_pytest.model('kite-rag', version='1')\n"
        "def kite_rag(prompt: str) -> str:\n"
        "    return 'Blue Heron'\n"
    ),
    "kites.jsonl": (
        '{"question": "Which kite flew highest at the 2037 Windmere fair?", "answer": "Blue Heron", '
        '"type": "name", "domain": "kites", "group": "k1"}\n'
        '{"question": "Which kite won the 2038 Windmere fair?", "answer": "Red Kestrel", '
        '"type": "name", "domain": "kites", "group": "k2"}\n'
    ),
    "test_myapp_api.py": "def test_api():\n    assert 1 + 1 == 3\n",
    "other/test_other.py": "def test_other():\n    pass\n",
    "loose.toml": "[defaults]\nmax_fch = 0.60\n",   # FCH 0.50: the gate passes
    "tight.toml": "[defaults]\nmax_fch = 0.40\n",   # the gate fails
}
KITES = ("--defan-model=kite-rag", "--defan-dataset=kites.jsonl", "--defan-spacy-model=none", "-p", "no:cacheprovider")


@pytest.fixture
def unconfigured_project(pytester: pytest.Pytester) -> pytest.Pytester:
    for name, text in UNCONFIGURED_PROJECT.items():
        (pytester.path / name).parent.mkdir(parents=True, exist_ok=True)
        (pytester.path / name).write_text(text, encoding="utf-8")
    return pytester


def nodeids(result: pytest.RunResult, outcome: str) -> List[str]:
    """The tests of a session (in-process: its reports) with this outcome, the verdicts included."""
    return sorted(r.nodeid for r in result.reprec.getreports("pytest_runtest_logreport")  # type: ignore[attr-defined]
                  if r.when == "call" and r.outcome == outcome)


@pytest.mark.parametrize("thresholds, workers, code", [
    ("loose.toml", [], 0),
    ("tight.toml", [], 1),
    pytest.param("loose.toml", ["-n", "2"], 0, marks=pytest.mark.slow),
], ids=["gate-passes", "gate-fails", "gate-passes-n2"])
def test_a_defan_run_in_a_project_without_configuration_exits_as_its_gate_says(
    unconfigured_project: pytest.Pytester, thresholds: str, workers: List[str], code: int
) -> None:
    result = unconfigured_project.runpytest(*KITES, f"--defan-thresholds={thresholds}", *workers)
    assert result.ret == code, result.stdout.str()
    out = result.stdout.str()
    assert "test_myapp_api" not in out and "test_other" not in out  # neither collected nor run
    # Under xdist the controller runs the prompts' tests itself (issue 35): the workers collect
    # nothing of the project's, and nothing else.
    result.stdout.fnmatch_lines(["collected 2 items" if not workers else "2 workers [[]0 items[]]"])
    if not workers:
        assert nodeids(result, "failed") == ([] if code == 0 else ["defan::gate[kites]", "defan::gate[overall]"])


@pytest.mark.parametrize("paths, ran", [
    ((), ["other/test_other.py::test_other", "test_myapp_api.py::test_api"]),  # the folder pytest started in
    (("other",), ["other/test_other.py::test_other"]),                              # the paths named
])
def test_defan_with_tests_collects_the_project_tests_too(unconfigured_project: pytest.Pytester, paths: tuple,
                                                         ran: List[str]) -> None:
    result = unconfigured_project.runpytest(*KITES, "--defan-thresholds=loose.toml", "--defan-with-tests", *paths)
    ran_here = [n for n in nodeids(result, "passed") + nodeids(result, "failed") if not n.startswith("defan::")]
    assert sorted(ran_here) == ran
    assert result.ret == (1 if "test_myapp_api.py::test_api" in ran else 0), result.stdout.str()
    assert "defan::gate[kites]" in nodeids(result, "passed")


def test_paths_named_to_a_defan_run_are_said_and_not_collected(unconfigured_project: pytest.Pytester) -> None:
    """The paths named (or pytest's testpaths) are not collected: the header says which, and
    the conftest.py of a path named still registers its model."""
    (unconfigured_project.path / "conftest.py").rename(unconfigured_project.path / "other" / "conftest.py")
    (unconfigured_project.path / "pyproject.toml").write_text('[tool.pytest.ini_options]\ntestpaths = ["."]\n')
    result = unconfigured_project.runpytest(*KITES, "--defan-thresholds=loose.toml", "other", "test_myapp_api.py")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["defan: not collected: other, test_myapp_api.py (a DefAn run asks its prompts only; "
                                 "--defan-with-tests runs the project's tests too)"])
    assert [n for n in nodeids(result, "passed") + nodeids(result, "failed") if not n.startswith("defan::")] == []
    plain = unconfigured_project.runpytest("-p", "no:cacheprovider")  # not a DefAn run: the testpaths, as ever
    plain.assert_outcomes(passed=1, failed=1)


@pytest.fixture(scope="module")
def example_project(tmp_path_factory: pytest.TempPathFactory, public_dir: Path) -> Path:
    """The example project after its baseline run: ``baseline.json`` is the report of
    ``pytest --defan-model=my-rag --defan-domain=nobel`` on a small sample (:data:`SMALL`),
    judged by ``nobel-gate.toml``."""
    project = make_example_project(tmp_path_factory.mktemp("example"))
    result = run_example(project, public_dir, *SMALL, "--defan-report=baseline.json")
    assert result.returncode == 0, result.stdout + result.stderr
    return project


@pytest.mark.slow
def test_a_knob_that_drops_knowledge_fails_the_level_gate(example_project: Path, public_dir: Path) -> None:
    result = run_example(example_project, public_dir, *SMALL, "--defan-report=physics-only.json",
                         MY_RAG_KNOWLEDGE="nobel_physics")
    assert result.returncode == 1, result.stdout
    assert "FAILED defan::gate[nobel] - nobel: FCH" in result.stdout
    assert "> max_fch 0.60" in result.stdout
    # A new version: nothing of the baseline's answers is reused.
    assert "150 prompts: 150 answered by the model, 0 from the cache" in result.stdout
    base, changed = report(example_project / "baseline.json"), report(example_project / "physics-only.json")
    assert base["meta"]["model"]["version"] != changed["meta"]["model"]["version"]
    assert "kb=nobel_physics" in changed["meta"]["model"]["version"]
    assert changed["domains"]["nobel"]["fch"] >= base["domains"]["nobel"]["fch"] + 0.2


@pytest.mark.slow
def test_a_knob_that_drops_knowledge_fails_the_regression_gate(example_project: Path, public_dir: Path) -> None:
    # The README's main command (its default sample of 600 prompts: 40 groups) makes the
    # baseline; the knob's run is compared with it.  (At the 10 groups of SMALL a paired test
    # at the gate's confidence cannot call even a 57-point rise significant: 6 groups flipping
    # one way happen by chance 1 time in 64.)
    main = ("--defan-model=my-rag", "--defan-domain=nobel", "--defan-thresholds=nobel-gate.toml")
    first = run_example(example_project, public_dir, *main, "--defan-report=main.json")
    assert first.returncode == 0, first.stdout
    result = run_example(example_project, public_dir, *main, "--defan-baseline=main.json",
                         MY_RAG_KNOWLEDGE="nobel_physics")
    assert result.returncode == 1, result.stdout
    assert "FAILED defan::regression[nobel] - nobel: FCH" in result.stdout
    assert "right before, wrong now (FCH):" in result.stdout
    same = run_example(example_project, public_dir, *main, "--defan-baseline=main.json")
    assert same.returncode == 0, same.stdout  # the unchanged pipeline, from the cache: never regresses


def figures(rep: dict) -> dict:
    keys = ("n", "scored", "groups", "fch", "pmh", "rc", "fch_count", "pmh_count")
    return {d: {k: v.get(k) for k in keys} for d, v in rep["domains"].items()}


def claims(rep: dict) -> Dict[str, Optional[str]]:
    return {row["id"]: row["claim"] for row in rep["rows"]}


@pytest.mark.slow
def test_xdist_gives_the_serial_figures(example_project: Path, public_dir: Path) -> None:
    result = run_example(example_project, public_dir, *SMALL, "-n", "2", "--defan-cache=cache-n2",
                         "--defan-report=n2.json")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "150 prompts: 150 answered by the model" in result.stdout
    base, n2 = report(example_project / "baseline.json"), report(example_project / "n2.json")
    assert figures(n2) == figures(base)
    assert claims(n2) == claims(base)


#: A README command that says how it exits: ``pytest ...    # exit 1: it regressed``.
EXIT_MARK = r"#\s*exit (\d+)\b"


def readme_commands() -> List[tuple]:
    """Every command of the README's ``sh`` blocks marked with the exit code it promises, in
    README order, with that code."""
    import re

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    found = []
    for block in re.findall(r"```sh\n(.*?)```", text, flags=re.S):
        for line in block.splitlines():
            m = re.search(EXIT_MARK, line)
            if m:
                found.append((line[: m.start()].strip(), int(m.group(1))))
    return found


def test_the_readme_marks_its_commands() -> None:
    commands = [c for c, _ in readme_commands()]
    assert any("--defan-baseline=baseline.json" in c for c in commands)
    assert any(c.startswith("defan compare") for c in commands)


@pytest.mark.slow
def test_every_marked_readme_command_exits_as_the_readme_says(tmp_path: Path, public_dir: Path) -> None:
    # In README order, in one fresh project (the later commands read the earlier ones' reports),
    # with the shipped thresholds.toml.
    project = make_example_project(tmp_path)
    env = example_env(public_dir)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    for command, code in readme_commands():
        done = subprocess.run(["bash", "-c", command], cwd=project, env=env, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == code, f"{command}\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}"
