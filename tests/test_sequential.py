"""--defan-sequential (issue 39): the anytime-valid tests (defan_pytest.stats.sequential), the
sequential judge (defan_pytest.gates.sequential), the seed's order of the groups, and real
sessions, serial and ``-n 2``: a broken application stops early and fails naming where it
stopped, an unchanged one stops early and passes, the prompts not asked say why."""
from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from defan_pytest.dataset.domains import Row
from defan_pytest.dataset.sampling import Sample, group_order, select
from defan_pytest.gates.sequential import Judge, stop_lines
from defan_pytest.gates.thresholds import parse_thresholds
from defan_pytest.run.sequential import Asking, block, not_asked_reason
from defan_pytest.stats.sequential import BetTest, MeanBounds, grid

# -- the tests of a mean ---------------------------------------------------------------------


@given(st.lists(st.floats(-1.0, 1.0), max_size=200), st.floats(-0.9, 0.9), st.sampled_from([1, -1]))
@settings(max_examples=200, deadline=None)
def test_the_wealth_stays_positive_and_its_peak_is_kept(xs: list[float], m: float, side: int) -> None:
    test = BetTest(m, side)
    peak = 0.0
    for x in xs:
        test.add(x)
        assert math.isfinite(test.log_wealth) and 0.0 <= test.bet() <= test.limit
        peak = max(peak, test.log_wealth)
    assert test.peak == peak and test.e_value >= 1.0


def test_a_null_true_at_its_edge_is_rejected_at_most_alpha_of_the_time_whenever_it_is_looked_at() -> None:
    # Symmetric changes (a flip each way as likely), looked at after every one of 300: Ville's
    # inequality bounds the share of paths that ever reject by alpha.
    rng = random.Random(7)
    paths, alpha = 1500, 0.1
    rejected = 0
    for _ in range(paths):
        test = BetTest(0.0, 1)
        for _ in range(300):
            test.add(rng.choice((-1.0, 0.0, 0.0, 1.0)))
            if test.rejects(alpha):
                rejected += 1
                break
    assert rejected / paths <= alpha + 3 * math.sqrt(alpha * (1 - alpha) / paths)


def test_flips_all_for_the_worse_reject_no_change_within_a_few() -> None:
    test = BetTest(0.0, 1)
    for _ in range(12):
        test.add(1.0)
    assert test.rejects(0.0025)
    quiet = BetTest(0.0, 1)
    for _ in range(1000):
        quiet.add(0.0)
    assert quiet.peak == 0.0 and not quiet.rejects(0.5)


@given(st.floats(0.0, 1.0), st.integers(0, 2**31))
@settings(max_examples=25, deadline=None)
def test_the_bounds_hold_the_mean_and_close_in_on_it(p: float, seed: int) -> None:
    rng = random.Random(seed)
    bounds = MeanBounds(0.0, 1.0)
    for _ in range(400):
        bounds.add(1.0 if rng.random() < p else 0.0)
    # Each side at 0.001: the true mean lies between the bounds (but for a chance of ~0.002).
    assert bounds.lower(0.001) <= p + 1e-9 and bounds.upper(0.001) >= p - 1e-9
    assert bounds.upper(0.05) - bounds.lower(0.05) < 0.5


def test_the_grid_holds_its_ends_and_the_points_asked_for() -> None:
    points = grid(-1.0, 1.0, [0.0375, 5.0])
    assert points[0] == -1.0 and points[-1] == 1.0 and 0.0375 in points and 5.0 not in points
    assert list(points) == sorted(set(points))
    with pytest.raises(ValueError, match="null mean"):
        BetTest(2.0, 1)
    with pytest.raises(ValueError, match="side"):
        BetTest(0.0, 0)


# -- the seed's order ------------------------------------------------------------------------


def rows_of(domains: dict[str, int], size: int = 3) -> list[Row]:
    return [Row(d, g, p, f"q {d} {g} {p}", "1", "numeric", "x.csv", 1)
            for d, n in domains.items() for g in range(n) for p in range(size)]


@given(st.integers(0, 10**6), st.integers(1, 12))
@settings(max_examples=40, deadline=None)
def test_a_sample_of_a_seed_is_a_prefix_of_the_order_sequential_runs_ask_in(seed: int, k: int) -> None:
    rows = rows_of({"nobel": 12, "census": 9})
    order = group_order(rows, seed)
    taken = {r.group_key for r in select(rows, Sample(groups=k), seed)}
    for domain, groups in order.items():
        assert {g for g in groups[:k]} == {g for g in taken if g.startswith(domain)}


# -- the judge --------------------------------------------------------------------------------


def records(rows: list[Row], wrong: Any) -> list[dict[str, Any]]:
    return [{"id": r.id, "domain": r.domain, "group": r.group_key, "type": r.type,
             "claim": "2" if wrong(r) else "1", "aligned": True, "correct": not wrong(r), "error": None}
            for r in rows]


def asked_run(rows: list[Row], base: list[dict[str, Any]], now: list[dict[str, Any]], seed: int = 1) -> Asking:
    planned: dict[str, tuple[int, int]] = {}
    for r in rows:
        g, p = planned.get(r.domain, (0, 0))
        planned[r.domain] = (g + (r.para == 0), p + 1)
    by_id = {x["id"]: x for x in now}
    order = [g for groups in group_order(rows, seed).values() for g in groups]
    asking = Asking(rows, order, Judge(parse_thresholds({}), planned, base), lambda batch: [by_id[r.id] for r in batch])
    batch = asking.first()
    while batch:
        batch = asking.next()
    return asking


def test_an_unchanged_application_settles_passing_before_the_end() -> None:
    rows = rows_of({"alpha": 100, "beta": 100})
    base = records(rows, lambda r: r.group % 4 == 0)
    asking = asked_run(rows, base, base)
    info = asking.info()
    assert info["settled"] and info["asked"] < info["total"] and not info["open"]
    assert {s["state"] for s in info["scopes"].values()} == {"pass"}
    # The groups asked are each domain's prefix of the seed's order.
    asked = {r.split("-p")[0] for r in asking.asked}
    for domain, groups in group_order(rows, 1).items():
        mine = [g for g in groups if g in asked]
        assert mine == groups[: len(mine)]


def test_a_broken_domain_settles_failing_early() -> None:
    rows = rows_of({"alpha": 100, "beta": 100})
    base = records(rows, lambda r: r.group % 4 == 0)
    now = records(rows, lambda r: r.group % 4 == 0 or (r.domain == "alpha" and r.group % 3 == 0))
    info = asked_run(rows, base, now).info()
    assert info["settled"] and info["asked"] < 0.5 * info["total"]
    assert info["scopes"]["alpha"]["state"] == "fail"
    assert info["scopes"]["alpha"]["metrics"]["regression:fch"]["state"] == "fail"


def test_a_change_near_the_tolerance_is_asked_to_the_end_and_says_what_is_open() -> None:
    rows = rows_of({"alpha": 60, "beta": 60})
    base = records(rows, lambda r: r.group % 4 == 0)
    # alpha: 2 groups of 60 turn wrong (a rise of 3.3 points, tolerance 2): too few to settle.
    now = records(rows, lambda r: r.group % 4 == 0 or (r.domain == "alpha" and r.group in (1, 2)))
    asking = asked_run(rows, base, now)
    info = asking.info()
    assert not info["settled"] and info["asked"] == info["total"] and "alpha" in info["open"]
    lines = stop_lines(block(info, []))
    assert "asked the whole sample" in lines[0] and "still open when it stopped: alpha" in lines[1]


def test_what_a_stop_saved_is_priced_from_the_prompts_asked() -> None:
    class Price:
        def cost(self, p: int, c: int) -> float:
            return (p + c) / 1000

    info = {"asked": 2, "total": 10, "batches": 1, "settled": True, "open": [], "scopes": {}}
    made = block(info, [{"prompt_tokens": 10, "completion_tokens": 30}, {"prompt_tokens": 20, "completion_tokens": 20}],
                 Price())
    assert made["saved"] == {"prompts": 8, "tokens": 320, "dollars": 0.32}
    assert "saved 8 prompts, about 320 tokens, about $0.32" in stop_lines(made)[0]
    assert not_asked_reason(info) == "not asked: the verdict was settled after 2 of 10 prompts (--defan-sequential)"


# -- real sessions -----------------------------------------------------------------------------

TOY = [{"question": f"[{d}] How many moons does planet {g} (variant {p}) have?", "answer": str(g % 7),
        "type": "numeric", "domain": d, "group": f"g{g}"} for d in ("alpha", "beta") for g in range(100) for p in range(3)]

CONFTEST = '''
import json, os
import defan_pytest
ROWS = {r["question"]: r for r in (json.loads(l) for l in open("toy.jsonl"))}

@defan_pytest.model("app", version="1")
def app(prompt):
    with open(os.environ["DEFAN_TEST_ASKS"], "a") as f:
        f.write(prompt + "\\n")
    r = ROWS[prompt]
    g = int(r["group"][1:])
    broken = os.environ.get("BROKEN") == "1" and r["domain"] == "alpha" and g % 3 == 0
    right = (g % 4 != 0) and not broken
    return r["answer"] if right else str(int(r["answer"]) + 1)
'''
ARGS = ["--defan-model=app", "--defan-dataset=toy.jsonl", "--defan-spacy-model=none", "-p", "no:cacheprovider",
        "-p", "no:randomly", "--defan-cache=off"]
WORKERS = [pytest.param([], id="serial"), pytest.param(["-n", "2"], id="n2")]


@pytest.fixture
def toy(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.Pytester:
    monkeypatch.setenv("DEFAN_PROGRESS_SECONDS", "60")
    monkeypatch.setenv("DEFAN_TEST_ASKS", str(tmp_path / "asks.txt"))
    for name in ("CI", "BUILD_NUMBER", "GITHUB_STEP_SUMMARY", "BROKEN"):
        monkeypatch.delenv(name, raising=False)
    pytester.path.joinpath("toy.jsonl").write_text("".join(json.dumps(r) + "\n" for r in TOY), encoding="utf-8")
    pytester.makeconftest(CONFTEST)
    base = pytester.runpytest_subprocess(*ARGS, "--defan-report=base.json")
    assert base.ret == 0
    (tmp_path / "asks.txt").write_text("")
    return pytester


def asked(tmp_path: Path) -> int:
    return len((tmp_path / "asks.txt").read_text().splitlines())


@pytest.mark.parametrize("workers", WORKERS)
def test_a_broken_application_stops_early_and_fails_naming_where_it_stopped(
        toy: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: list) -> None:
    monkeypatch.setenv("BROKEN", "1")
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = toy.runpytest_subprocess(*ARGS, "--defan-baseline=base.json", "--defan-sequential",
                                      "--defan-report=r.json", "-rfs", *workers)
    assert result.ret == 1
    block = json.loads((toy.path / "r.json").read_text())["meta"]["sequential"]
    assert block["settled"] and block["asked"] < 600 and block["scopes"]["alpha"]["state"] == "fail"
    assert asked(tmp_path) == block["asked"]  # each prompt asked once, none past the stop
    out = result.stdout.str()
    where = f"stopped after batch {block['batches']}: the verdict was settled; asked {block['asked']} of 600 prompts"
    assert f"defan sequential: {where}" in out
    assert "FAILED defan::regression[alpha]" in out
    assert f"regressed: worse than the model's own noise and past the tolerance 0.02 (--defan-sequential: stopped after " \
           f"batch {block['batches']}, {block['asked']} of 600 prompts asked)" in out
    outcomes = result.parseoutcomes()
    assert outcomes["skipped"] == 600 - block["asked"]
    assert f"not asked: the verdict was settled after {block['asked']} of 600 prompts (--defan-sequential)" in out
    assert where in summary.read_text()


@pytest.mark.parametrize("workers", WORKERS)
def test_an_unchanged_application_stops_early_and_passes(toy: pytest.Pytester, tmp_path: Path, workers: list) -> None:
    result = toy.runpytest_subprocess(*ARGS, "--defan-baseline=base.json", "--defan-sequential",
                                      "--defan-report=r.json", "--junitxml=j.xml", *workers)
    assert result.ret == 0
    report = json.loads((toy.path / "r.json").read_text())
    block = report["meta"]["sequential"]
    assert block["settled"] and block["asked"] < 600 and not block["open"]
    assert report["meta"]["selection"]["ran"] == block["asked"] and not report["meta"]["selection"]["narrowed"]
    assert report["regression"]["status"] == "pass" and report["gate_status"] == "pass"
    assert asked(tmp_path) == block["asked"]
    assert result.parseoutcomes()["skipped"] == 600 - block["asked"]
    assert "not asked: the verdict was settled after" in (toy.path / "j.xml").read_text()


def test_the_same_stop_serially_and_under_xdist(toy: pytest.Pytester, tmp_path: Path) -> None:
    stops = []
    for workers in ([], ["-n", "2"]):
        toy.runpytest_subprocess(*ARGS, "--defan-baseline=base.json", "--defan-sequential", "--defan-report=r.json",
                                 *workers)
        block = json.loads((toy.path / "r.json").read_text())["meta"]["sequential"]
        stops.append((block["asked"], block["batches"], block["scopes"]))
    assert stops[0] == stops[1]


def test_a_sequential_run_with_nothing_to_settle_is_one_usage_error(toy: pytest.Pytester) -> None:
    result = toy.runpytest_subprocess(*ARGS, "--defan-sequential")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--defan-sequential stops asking once the gates' verdicts are settled, but this run "
                                 "judges no answers: give it --defan-baseline*"])
    assert "Traceback" not in result.stderr.str()


def test_the_ini_key_and_the_help(toy: pytest.Pytester, tmp_path: Path) -> None:
    toy.makeini("[pytest]\ndefan_sequential = true\n")
    result = toy.runpytest_subprocess(*ARGS, "--defan-baseline=base.json")
    assert result.ret == 0 and "defan sequential: stopped after batch" in result.stdout.str()
    helped = toy.runpytest_subprocess("--help")
    assert "--defan-sequential" in helped.stdout.str()
    assert "(default: off: every selected prompt is asked)" in " ".join(helped.stdout.str().split())


def test_cached_answers_are_all_used_and_cost_nothing(toy: pytest.Pytester, tmp_path: Path) -> None:
    cached = [*ARGS[:-1], "--defan-cache=.defan_cache"]
    first = toy.runpytest_subprocess(*cached, "--defan-baseline=base.json", "--defan-sequential", "--defan-report=a.json")
    assert first.ret == 0
    before = json.loads((toy.path / "a.json").read_text())["meta"]["sequential"]["asked"]
    (tmp_path / "asks.txt").write_text("")
    again = toy.runpytest_subprocess(*cached, "--defan-baseline=base.json", "--defan-sequential", "--defan-report=b.json")
    assert again.ret == 0
    block = json.loads((toy.path / "b.json").read_text())["meta"]["sequential"]
    # Every cached group first, judged before any call: settled on them alone, nothing asked.
    assert block["asked"] == before and block["batches"] == 1 and asked(tmp_path) == 0


def test_no_scope_is_settled_before_the_groups_its_gates_need() -> None:
    rows = rows_of({"alpha": 100, "beta": 100})
    base = records(rows, lambda r: r.group % 4 == 0)
    planned = {"alpha": (100, 300), "beta": (100, 300)}
    judge = Judge(parse_thresholds({"defaults": {"min_samples": 40}}), planned, base)
    by_group: dict[str, list[dict[str, Any]]] = {}
    for rec in base:
        by_group.setdefault(rec["group"], []).append(rec)
    for key in [f"{d}-q{g:04d}" for g in range(39) for d in ("alpha", "beta")]:
        judge.add_group(key.split("-")[0], "numeric", by_group[key])
    assert {s.state for s in judge.state().values()} == {"open"}  # unchanged, but 39 < 40 groups
    for g in range(39, 100):
        for d in ("alpha", "beta"):
            judge.add_group(d, "numeric", by_group[f"{d}-q{g:04d}"])
        if judge.settled():
            break
    assert judge.settled() and g < 99


def test_each_shard_stops_on_its_own_share_and_merge_judges_the_union(toy: pytest.Pytester, tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    from defan_pytest.cli import main

    for i in (1, 2):
        result = toy.runpytest_subprocess(*ARGS, "--defan-baseline=base.json", "--defan-sequential", f"--defan-shard={i}/2",
                                          f"--defan-report=s{i}.json")
        assert "defan sequential: stopped after batch" in result.stdout.str()
    shards = [json.loads((toy.path / f"s{i}.json").read_text())["meta"]["sequential"] for i in (1, 2)]
    assert all(s["settled"] and s["asked"] < s["total"] == 300 for s in shards)
    code = main(["merge", str(toy.path / "s1.json"), str(toy.path / "s2.json"), "--baseline", str(toy.path / "base.json"),
                 "-o", str(toy.path / "m.json")])
    assert code == 0, capsys.readouterr()
    merged = json.loads((toy.path / "m.json").read_text())
    assert merged["meta"]["sequential"]["asked"] == sum(s["asked"] for s in shards) == merged["meta"]["selection"]["ran"]
    assert merged["regression"]["status"] == "pass" and merged["gate_status"] == "pass"
