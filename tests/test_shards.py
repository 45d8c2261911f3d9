"""Sharding (``--defan-shard=I/N``) and ``defan merge``: the shares, real sessions merged back into
the unsharded run's figures and verdicts, every refusal, and the example workflow's shard jobs."""
from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Sequence, Tuple

import pytest

from timings import untimed

from defan_pytest import dataset
from defan_pytest.dataset import sampling, shards
from defan_pytest.metrics.summary import summarize
from defan_pytest.records import Report
from defan_pytest.report import github, html, writer
from defan_pytest.report.schema import load_report

try:  # Imported once here: hypothesis's pytest plugin imports it at the end of every session, and
    # pytester's in-process sessions would otherwise import it anew each time (seconds each).
    import hypothesis.internal.observability  # noqa: F401
except ImportError:  # pragma: no cover
    pass
from defan_pytest.cli import main

from test_html_report import THRESHOLDS as HTML_THRESHOLDS, make_report

# -- the shares -------------------------------------------------------------------------------


def _rows(spec: Sequence[Tuple[str, int, int]]) -> List[Dict[str, Any]]:
    return [{"id": f"{d}-q{g:04d}-p{p:02d}", "domain": d, "group": f"{d}-q{g:04d}"}
            for d, groups, size in spec for g in range(groups) for p in range(size)]


SPEC = [("sports", 23, 15), ("nobel", 9, 15), ("math", 31, 1), ("zeta", 4, 3)]


@pytest.mark.parametrize("n", [1, 2, 3, 4, 7, 16])
def test_shards_are_whole_groups_disjoint_complete_and_balanced(n: int) -> None:
    rows = _rows(SPEC)
    parts = [shards.select(rows, shards.Shard(i, n)) for i in range(1, n + 1)]
    ids = [r["id"] for part in parts for r in part]
    assert sorted(ids) == sorted(r["id"] for r in rows) and len(ids) == len(set(ids))
    for part in parts:
        assert part == [r for r in rows if r in part]  # in the selection's order
    owner = {r["group"]: i for i, part in enumerate(parts) for r in part}
    assert all(owner[r["group"]] == i for i, part in enumerate(parts) for r in part)  # groups never cut
    groups = [len({r["group"] for r in part}) for part in parts]
    assert max(groups) - min(groups) <= 1
    for domain, count, _size in SPEC:  # and within each domain
        per = [len({r["group"] for r in part if r["domain"] == domain}) for part in parts]
        assert sum(per) == count and max(per) - min(per) <= 1


def test_shares_depend_on_the_selection_only() -> None:
    rows = _rows(SPEC)
    shuffled = rows[:]
    random.Random(3).shuffle(shuffled)
    assert shards.assign(rows, 4) == shards.assign(shuffled, 4)
    # Natural order: q10 after q9 (a plain string sort would deal q10 second).
    assert shards.assign(_rows([("math", 12, 1)]), 12)["math-q0010"] == 10


def test_shares_of_a_public_sample(synthetic_public: Path) -> None:
    rows = sampling.select(dataset.load_dataset(str(synthetic_public)), sampling.parse_sample("50%"), 7)
    parts = [shards.select(rows, shards.Shard(i, 3)) for i in (1, 2, 3)]
    assert sum(len(p) for p in parts) == len(rows)
    assert parts == [shards.select(list(reversed(rows)), shards.Shard(i, 3))[::-1] for i in (1, 2, 3)]
    for d in {r.domain for r in rows}:
        per = [len({r.group_key for r in p if r.domain == d}) for p in parts]
        assert max(per) - min(per) <= 1


@pytest.mark.parametrize("text, message", [
    ("0/4", "between 1 and 4"), ("5/4", "between 1 and 4"), ("1/0", "at least 1 shard"), ("two", "not a shard"),
    ("1/2/3", "not a shard"),
])
def test_bad_shards(text: str, message: str) -> None:
    with pytest.raises(shards.ShardError, match=message):
        shards.parse_shard(text)


# -- real sessions, merged ----------------------------------------------------------------------

NAMES = ["Ada Lovelace", "Charles Babbage", "Grace Hopper", "Alan Turing", "Edsger Dijkstra", "Barbara Liskov",
         "Donald Knuth", "John Backus"]

CONFTEST = '''
import os, re
import defan_pytest

NAMES = %r
CUT = int(os.environ.get("MODEL_CUT", "4"))

@defan_pytest.model("composer", version=os.environ.get("MODEL_CUT", "4"))
def composer(prompt):
    g, p = (int(x) for x in re.findall(r"#(\\d+)", prompt))
    right = (g * 3 + p) %% 7 < CUT
    if "keys" in prompt:
        return f"It had {100 + g if right else 90 + g} keys."
    return NAMES[g %% 8] if right else f"I believe it was {NAMES[(g + 3) %% 8]}."
''' % (NAMES,)

THRESHOLDS = """\
[defaults]
max_fch = 0.60
min_rc = 0.05
min_samples = 3

[domains.beta]
max_fch = 0.20

[regression]
max_fch_rise = 0.02
"""


def _dataset() -> List[Dict[str, Any]]:
    rows = []
    for domain, groups, size in (("alpha", 7, 5), ("beta", 5, 3), ("gamma", 4, 1)):
        for g in range(groups):
            for p in range(size):
                if domain == "gamma":
                    rows.append({"question": f"How many keys did organ #{g} have (phrasing #{p})?",
                                 "answer": str(100 + g), "type": "numeric", "domain": domain, "group": f"o{g}"})
                else:
                    rows.append({"question": f"Who wrote piece #{g} of the {domain} list (phrasing #{p})?",
                                 "answer": NAMES[g % 8], "type": "name", "domain": domain, "group": f"p{g}"})
    return rows


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    for name in ("GITHUB_STEP_SUMMARY", "GITHUB_ACTIONS", "MODEL_CUT"):
        monkeypatch.delenv(name, raising=False)
    pytester.makeconftest(CONFTEST)
    pytester.path.joinpath("toy.jsonl").write_text("\n".join(json.dumps(r) for r in _dataset()) + "\n", encoding="utf-8")
    pytester.path.joinpath("thresholds.toml").write_text(THRESHOLDS, encoding="utf-8")
    return pytester


ARGS = ["--defan-model=composer", "--defan-dataset=toy.jsonl", "--defan-spacy-model=none", "-p", "no:cacheprovider"]
ROW_KEYS = ("id", "domain", "group", "type", "question", "answer", "response", "claim", "aligned", "correct", "error",
            "error_kind")


def _run(pytester: pytest.Pytester, *args: str) -> Tuple[int, Dict[str, Any]]:
    report = pytester.path / "r.json"
    if report.exists():
        report.unlink()
    result = pytester.runpytest(*ARGS, "--defan-report=r.json", *args)
    assert report.exists(), result.stdout.lines[-30:]
    return int(result.ret), json.loads(report.read_text(encoding="utf-8"))


def _same(a: Any, b: Any) -> None:
    assert json.dumps(untimed(a), sort_keys=True) == json.dumps(untimed(b), sort_keys=True)


def _rows_of(report: Dict[str, Any]) -> List[Dict[str, Any]]:
    return [{k: r.get(k) for k in ROW_KEYS} for r in report["rows"]]


def test_merging_1_3_and_7_shards_gives_the_unsharded_run(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    whole_summary = project.path / "whole.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(whole_summary))
    whole_rc, whole = _run(project)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY")
    assert whole_rc == 1 and whole["gate_status"] == "fail"  # beta breaches its limit
    assert whole["meta"]["calls"]["answered"] == len(_dataset()) == 54  # asked once; every shard below reads the cache
    for n in (1, 3, 7):
        files = []
        for i in range(1, n + 1):
            rc, shard = _run(project, f"--defan-shard={i}/{n}")
            assert rc == 0 and shard["gate_status"] == "skipped"  # a shard's gate is not judged
            assert shard["meta"]["selection"]["shard"] == f"{i}/{n}"
            assert shard["meta"]["selection"]["domains"] == ["alpha", "beta", "gamma"]
            assert shard["meta"]["calls"]["cached"] == len(shard["rows"])
            path = project.path / f"shard-{n}-{i}.json"
            path.write_text(json.dumps(shard), encoding="utf-8")
            files.append(str(path))
        summary = project.path / f"merged-{n}.md"
        monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
        out, page = project.path / f"merged-{n}.json", project.path / f"merged-{n}.html"
        rc = main(["merge", *reversed(files), "-o", str(out), "--html", str(page)])
        monkeypatch.delenv("GITHUB_STEP_SUMMARY")
        printed = capsys.readouterr().out
        assert rc == whole_rc, printed
        assert f"merged {n} shards (54 prompts): level gate fail" in printed
        merged = json.loads(out.read_text(encoding="utf-8"))
        for key in ("domains", "overall", "gate", "gate_status", "regression"):
            _same(merged[key], whole[key])
        _same(merged["thresholds"]["limits"], whole["thresholds"]["limits"])
        assert _rows_of(merged) == _rows_of(whole)
        sel = merged["meta"]["selection"]
        assert (sel["selected"], sel["ran"], sel["shard"], sel["narrowed"]) == (54, 54, None, False)
        assert merged["meta"]["producer"] == "defan merge" and merged["meta"]["merged"]["shards"] == n
        assert summary.read_text(encoding="utf-8") == whole_summary.read_text(encoding="utf-8")
        assert writer.is_report(page) and f'"selected":54' in page.read_text(encoding="utf-8")


def test_a_merged_run_against_a_baseline_gives_the_unsharded_regression(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    pytest.importorskip("defan_pytest.gates.paired", reason="the regression gate's statistics are not there yet")
    monkeypatch.setenv("MODEL_CUT", "6")
    _rc, base = _run(project)
    baseline = project.path / "baseline.json"
    baseline.write_text(json.dumps(base), encoding="utf-8")
    monkeypatch.setenv("MODEL_CUT", "0")  # a much worse model: every prompt wrong
    whole_rc, whole = _run(project, f"--defan-baseline={baseline}")
    assert whole["regression"]["status"] == "fail" and whole_rc == 1
    files = []
    for i in (1, 2, 3):
        rc, shard = _run(project, f"--defan-shard={i}/3", f"--defan-baseline={baseline}")
        assert rc == 0 and shard["regression"]["status"] == "skipped"
        path = project.path / f"s{i}.json"
        path.write_text(json.dumps(shard), encoding="utf-8")
        files.append(str(path))
    out = project.path / "merged.json"
    assert main(["merge", *files, "-o", str(out)]) == 1  # the level gate fails either way
    assert f"the shards were compared with {baseline}; pass --baseline" in capsys.readouterr().err
    assert main(["merge", *files, "-o", str(out), "--baseline", str(baseline)]) == 1
    assert "regression gate fail" in capsys.readouterr().out
    merged = json.loads(out.read_text(encoding="utf-8"))
    for key in ("domains", "overall", "gate", "gate_status", "regression"):
        _same(merged[key], whole[key])


def test_a_shard_runs_its_share_and_skips_its_gates(project: pytest.Pytester) -> None:
    _rc, whole = _run(project)
    result = project.runpytest(*ARGS, "--defan-shard=2/3", "--defan-report=r.json", "-rs")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*SKIPPED*shard 2/3 ran part of the selection*defan merge*"])
    shard = json.loads((project.path / "r.json").read_text(encoding="utf-8"))
    expected = shards.select(whole["rows"], shards.Shard(2, 3))
    assert [r["id"] for r in shard["rows"]] == [r["id"] for r in expected]
    assert shard["meta"]["selection"]["selected"] == len(expected) and shard["gate_status"] == "skipped"
    # The gate table says so on every row, never PASS or FAIL, and why in its legend.
    assert _table_statuses(result) == {"NOT JUDGED"}
    result.stdout.fnmatch_lines(["NOT JUDGED = the gates were skipped: shard 2/3 ran part of the selection*"])
    # --defan-gate-narrowed judges the shard on its own.
    judged = project.runpytest(*ARGS, "--defan-shard=2/3", "--defan-gate-narrowed", "--defan-report=r.json")
    assert json.loads((project.path / "r.json").read_text(encoding="utf-8"))["gate_status"] in ("pass", "fail")
    assert "shard 2/3 ran part" not in judged.stdout.str()
    assert "NOT JUDGED" not in judged.stdout.str() and _table_statuses(judged) <= {"PASS", "FAIL", "TOO FEW", "INSUFFICIENT"}


def _table_statuses(result: pytest.RunResult) -> set[str]:
    """The status column of the gate table's rows (the domains and the overall figure)."""
    statuses = set()
    for line in result.stdout.lines:
        words = line.split()
        if words and line.startswith(("alpha ", "beta ", "gamma ", "overall (")):
            statuses.add(" ".join(w for w in words if w.isalpha() and w.isupper()) or "?")
    assert statuses, result.stdout.lines
    return statuses


def test_xdist_workers_of_a_shard_run_the_same_share(project: pytest.Pytester) -> None:
    _rc, serial = _run(project, "--defan-shard=3/4")
    _rc, parallel = _run(project, "--defan-shard=3/4", "-n", "2")
    assert _rows_of(parallel) == _rows_of(serial)
    _same(parallel["domains"], serial["domains"])


def test_bad_shard_options_are_usage_errors(project: pytest.Pytester) -> None:
    for value, message in (("4/3", "--defan-shard: '4/3': the shard number must be between 1 and 3"),
                           ("x", "--defan-shard: 'x' is not a shard"),
                           ("", "--defan-shard: given an empty value"),
                           ("17/17", "--defan-shard 17/17: this shard has no paraphrase group (the selection has 16)")):
        result = project.runpytest(*ARGS, f"--defan-shard={value}")
        assert result.ret == 4
        assert message in "\n".join(result.stderr.lines), result.stderr.lines


# -- refusals ---------------------------------------------------------------------------------


def _split(report: Dict[str, Any], n: int) -> List[Dict[str, Any]]:
    """``report`` cut into the reports its N shards would write."""
    out = []
    for i in range(1, n + 1):
        rows = shards.select(report["rows"], shards.Shard(i, n))
        figures = summarize(rows)
        part = json.loads(json.dumps(report))
        part.update(rows=rows, domains=figures["domains"], overall=figures["overall"], gate_status="skipped")
        part["meta"]["selection"].update(shard=f"{i}/{n}", selected=len(rows), ran=len(rows))
        out.append(part)
    return out


@pytest.fixture
def split(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Tuple[Path, List[Path]]:
    monkeypatch.chdir(tmp_path)
    for name in ("GITHUB_STEP_SUMMARY", "GITHUB_ACTIONS"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "thresholds.toml").write_text(HTML_THRESHOLDS, encoding="utf-8")
    whole = tmp_path / "whole.json"
    whole.write_text(json.dumps(make_report()), encoding="utf-8")
    files = []
    for i, part in enumerate(_split(make_report(), 3), 1):
        path = tmp_path / f"shard{i}.json"
        path.write_text(json.dumps(part), encoding="utf-8")
        files.append(path)
    return whole, files


def _refused(capsys: pytest.CaptureFixture[str], files: Sequence[Path], *words: str) -> str:
    assert main(["merge", *map(str, files), "-o", "merged.json"]) == 2
    err = capsys.readouterr().err
    for word in words:
        assert word in err, err
    assert not Path("merged.json").exists()
    return err


def test_split_reports_merge_back(split: Tuple[Path, List[Path]], capsys: pytest.CaptureFixture[str]) -> None:
    whole, files = split
    assert main(["merge", *map(str, files), "-o", "merged.json", "--html", "merged.html"]) == 1  # the toy gate fails
    merged, original = json.loads(Path("merged.json").read_text()), json.loads(whole.read_text())
    for key in ("domains", "overall", "gate", "gate_status"):
        _same(merged[key], original[key])
    assert [r["id"] for r in merged["rows"]] == [r["id"] for r in original["rows"]]
    # The hand-made whole report has no power block; the merged one states what it could catch.
    mine = github.step_summary(Report.from_json(merged))
    assert "### What this run could catch" in mine
    assert mine.split("\n### What this run could catch")[0].rstrip("\n") == github.step_summary(Report.from_json(original)).rstrip("\n")
    loaded = load_report("merged.json")  # valid: a baseline too
    assert loaded.meta.merged is not None and loaded.meta.merged.files == tuple(str(f) for f in files)
    assert html.MARK in Path("merged.html").read_text(encoding="utf-8")


def test_refuses_shards_of_different_runs(split: Tuple[Path, List[Path]], capsys: pytest.CaptureFixture[str]) -> None:
    _whole, files = split
    changes = {
        "model": lambda m: m["model"].update(version="2"),
        "data set": lambda m: m["dataset"].update(identity="file:ffffffffffffffff"),
        "selection": lambda m: m["selection"].update(seed=7),
        "scorer": lambda m: m["scorer"].update(ner=True, pipeline="en_core_web_sm", version="3.8.0"),
    }
    for what, change in changes.items():
        odd = json.loads(files[1].read_text())
        change(odd["meta"])
        other = files[1].with_name("odd.json")
        other.write_text(json.dumps(odd))
        _refused(capsys, [files[0], other, files[2]], "shards of different runs", str(files[0]), str(other),
                 f"differ in {what}")


def test_refuses_a_missing_or_duplicated_shard(split: Tuple[Path, List[Path]], capsys: pytest.CaptureFixture[str]) -> None:
    _whole, files = split
    _refused(capsys, [files[0], files[2]], "missing shard 2/3", f"{files[0]} is 1/3", f"{files[2]} is 3/3")
    copy = files[1].with_name("copy.json")
    shutil.copy(files[1], copy)
    _refused(capsys, [*files, copy], f"shard 2/3 given twice: {files[1]} and {copy}")
    # A shard of another split (2/4 among thirds).
    odd = json.loads(files[1].read_text())
    odd["meta"]["selection"]["shard"] = "2/4"
    other = files[1].with_name("quarter.json")
    other.write_text(json.dumps(odd))
    _refused(capsys, [files[0], other, files[2]], "shards of different splits", f"{other} is shard 2/4")


def test_refuses_a_mix_of_sharded_and_unsharded_reports(split: Tuple[Path, List[Path]],
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    whole, files = split
    _refused(capsys, [*files, whole], "a mix of sharded and unsharded reports", f"{whole} is not a shard",
             f"{files[0]} is shard 1/3")
    _refused(capsys, [whole], f"{whole} is not a shard")
    # Not a report at all, or one that does not match the schema: named, exit 2.
    bad = whole.with_name("bad.json")
    bad.write_text("{}")
    _refused(capsys, [files[0], bad], str(bad), "not a defan-pytest report")
    # The same prompt in two shards (a shard file edited by hand).
    odd = json.loads(files[1].read_text())
    odd["rows"].append(json.loads(files[0].read_text())["rows"][0])
    other = files[1].with_name("overlap.json")
    other.write_text(json.dumps(odd))
    _refused(capsys, [files[0], other, files[2]], "is in two shards", str(files[0]), str(other))


def test_merge_never_writes_over_a_shard(split: Tuple[Path, List[Path]], capsys: pytest.CaptureFixture[str]) -> None:
    _whole, files = split
    before = files[0].read_text()
    assert main(["merge", *map(str, files), "-o", str(files[0])]) == 2
    assert "would overwrite a shard report" in capsys.readouterr().err and files[0].read_text() == before
    assert main(["merge", *map(str, files), "-o", "m.json", "--html", "m.json"]) == 2
    assert "the same file as -o" in capsys.readouterr().err


# -- the example workflow's shard jobs, run for real ---------------------------------------------

WORKFLOW = Path(__file__).resolve().parents[1] / "examples" / "github-actions.yml"


def test_the_workflows_shard_and_merge_jobs(project: pytest.Pytester) -> None:
    import yaml

    wf = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    shard_job, merge_job = wf["jobs"]["defan-shard"], wf["jobs"]["defan-merge"]
    count = len(shard_job["strategy"]["matrix"]["shard"])
    assert merge_job["needs"] == "defan-shard" and "!cancelled()" in merge_job["if"]
    run_step = next(s for s in shard_job["steps"] if "--defan-shard" in str(s.get("run")))
    upload = next(s for s in shard_job["steps"] if str(s.get("uses", "")).startswith("actions/upload-artifact@"))
    download = next(s for s in merge_job["steps"] if str(s.get("uses", "")).startswith("actions/download-artifact@"))
    merge_step = next(s for s in merge_job["steps"] if "defan merge" in str(s.get("run")))
    saved = next(s for s in merge_job["steps"] if str(s.get("uses", "")).startswith("actions/upload-artifact@"))
    assert saved["with"]["name"] == "defan-baseline"  # what the pull-request job downloads
    assert upload["with"]["name"].startswith("defan-shard-") and download["with"]["pattern"] == "defan-shard-*"

    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "GITHUB_"))}
    env.update({str(k): str(v) for k, v in wf["env"].items()})
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTEST_ADDOPTS"] = "--defan-dataset=toy.jsonl --defan-spacy-model=none -p no:randomly -p no:hypothesispytest"
    env["DEFAN_MODEL"] = "composer"
    env["DEFAN_DOMAINS"] = "alpha,beta,gamma"  # the toy data set's domains, as its team writes them

    def bash(command: str, **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", "-e", "-c", command], cwd=project.path, env={**env, **extra},
                              capture_output=True, text=True, timeout=300)

    artifact = upload["with"]["path"]
    for i in range(1, count + 1):
        shard_env = {k: str(v).replace("${{ matrix.shard }}", str(i)) for k, v in (shard_job.get("env") or {}).items()}
        done = bash(run_step["run"], **shard_env)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
        # What actions/download-artifact with a pattern leaves: one folder per artifact.
        folder = project.path / download["with"]["path"] / f"defan-shard-{i}"
        folder.mkdir(parents=True)
        (project.path / artifact).rename(folder / artifact)
    summary, output = project.path / "summary.md", project.path / "github-output"
    output.write_text("", encoding="utf-8")
    merged = bash(merge_step["run"], GITHUB_STEP_SUMMARY=str(summary), GITHUB_OUTPUT=str(output))
    assert merged.returncode == 1, merged.stdout[-3000:] + merged.stderr[-2000:]  # beta breaches its limit
    # Judged: the merged report is the next baseline whatever its verdict.
    assert output.read_text(encoding="utf-8") == "keep=true\n" and "steps.merge.outputs.keep == 'true'" in saved["if"]
    assert f"merged {count} shards (54 prompts): level gate fail" in merged.stdout
    assert "DefAn: composer" in summary.read_text(encoding="utf-8")
    for path in str(saved["with"]["path"]).split():
        assert (project.path / path).is_file()
    _rc, whole = _run(project)
    report = json.loads((project.path / "defan-report.json").read_text(encoding="utf-8"))
    for key in ("domains", "overall", "gate", "gate_status"):
        _same(report[key], whole[key])


# -- each shard against itself (issue 20) ---------------------------------------------------------


def _edited(path: Path, name: str, edit: Any) -> Path:
    data = json.loads(path.read_text())
    edit(data)
    other = path.with_name(name)
    other.write_text(json.dumps(data))
    return other


def test_refuses_a_shard_missing_rows_its_metadata_counts(split: Tuple[Path, List[Path]],
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    _whole, files = split
    ran = len(json.loads(files[1].read_text())["rows"])
    half = _edited(files[1], "half.json", lambda d: d.update(rows=d["rows"][: len(d["rows"]) // 2]))
    _refused(capsys, [files[0], half, files[2]], f"{half} (shard 2/3): holds {ran // 2} prompts",
             f"its metadata says it ran {ran}")


def test_refuses_a_shard_whose_counts_were_edited_to_match(split: Tuple[Path, List[Path]],
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    # Its first group gone, and its metadata made to agree: the shares no longer deal out.
    _whole, files = split

    def drop_first_group(d: Dict[str, Any]) -> None:
        first = d["rows"][0]["group"]
        d["rows"] = [r for r in d["rows"] if r["group"] != first]
        d["meta"]["selection"].update(selected=len(d["rows"]), ran=len(d["rows"]))

    less = _edited(files[0], "less.json", drop_first_group)
    _refused(capsys, [less, files[1], files[2]], "are not in its share of the run's selection", "nothing was merged")


def test_refuses_a_shard_with_a_row_twice(split: Tuple[Path, List[Path]], capsys: pytest.CaptureFixture[str]) -> None:
    _whole, files = split

    def twice(d: Dict[str, Any]) -> None:
        d["rows"].append(dict(d["rows"][0]))
        d["meta"]["selection"].update(selected=len(d["rows"]), ran=len(d["rows"]))

    doubled = _edited(files[1], "doubled.json", twice)
    _refused(capsys, [files[0], doubled, files[2]], f"shard report {doubled}", "is given twice")


def test_refuses_a_shard_that_ran_part_of_its_share_unsaid(split: Tuple[Path, List[Path]],
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    _whole, files = split

    def one_less(d: Dict[str, Any]) -> None:
        d["rows"] = d["rows"][:-1]
        d["meta"]["selection"]["ran"] = len(d["rows"])  # "selected" still counts the one left out

    part = _edited(files[2], "part.json", one_less)
    _refused(capsys, [files[0], files[1], part], f"{part} (shard 3/3): ran", "yet does not say it ran part of them")
    # Said (narrowed), it merges: the gates are skipped, as for any narrowed run.
    told = _edited(part, "told.json", lambda d: d["meta"]["selection"].update(narrowed=True))
    assert main(["merge", str(files[0]), str(files[1]), str(told), "-o", "merged.json"]) == 0
    assert json.loads(Path("merged.json").read_text())["meta"]["selection"]["narrowed"] is True
