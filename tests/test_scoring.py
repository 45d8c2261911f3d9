"""The scorer end to end: the paper's Table 6, the labelled validation set, NER on and off,
and hypothesis properties of the extractor."""
from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from defan_pytest.scoring.equivalence import claims_equivalent, group_consistent
from defan_pytest.scoring.ner import installed_pipelines
from defan_pytest.scoring.scorer import Score, Scorer, ScoreInput

import labelled

KOBE_RESPONSES = [
    "334", "62", "334", "Kobe University is located in Japan.", "386", "195",
    "Kobe University is located in Japan and was ranked 334th.", "801–1000",
    "Kobe University is not ranked in the QS rankings for 2022.", "334th", "467",
    "Kobe University is highly ranked university in the world and was ranked 386th in 2022.",
    "Kobe University was not ranked in the QS World University Rankings for 2022.", "386th",
    "601–650",
]


@pytest.fixture(scope="module")
def rules() -> Scorer:
    return Scorer(nlp=None)


def _validation(name: str) -> list[dict]:
    # Rows of the public split are stored by id; their question, gold and type come from
    # tests/data/labelled_public.jsonl (no split needed).
    return labelled.load(name)


#: The question of the paper's Table 6 (quoted in the paper) and its gold.
KOBE = "What was the position of Kobe University in the QS rankings for 2022?"


def test_paper_table6(rules: Scorer) -> None:
    scores = rules.score_many([ScoreInput(KOBE, "  386  ", "rank", r, domain="qs_ranking") for r in KOBE_RESPONSES])
    fch = sum(not s.correct for s in scores) / 15
    pmh = sum(not s.aligned for s in scores) / 15
    assert round(fch, 2) == 0.80 and round(pmh, 2) == 0.33
    assert not group_consistent("rank", [s.claim for s in scores])  # RC 0


def test_the_table6_rows_of_the_labelled_set_are_the_paper_s(rules: Scorer) -> None:
    """The labelled set holds Table 6 as the paraphrase group of its question: the same
    verdicts with each paraphrase as asked."""
    rows = [r for r in _validation("validation.jsonl") if r.get("table6")]
    assert [r["response"] for r in rows] == KOBE_RESPONSES
    assert len({r["id"].rsplit("-", 1)[0] for r in rows}) == 1 and KOBE in {r["question"] for r in rows}
    scores = rules.score_many([ScoreInput(r["question"], r["answer"], "rank", r["response"], domain="qs_ranking") for r in rows])
    assert (sum(not s.correct for s in scores), sum(not s.aligned for s in scores)) == (12, 5)


@pytest.mark.parametrize("name", labelled.SETS)
@pytest.mark.parametrize("nlp", [None, "auto"])
def test_validation_set_agreement(nlp: str | None, name: str) -> None:
    """The hand-labelled sets: the scorer must agree with the annotator on nearly every row.
    The held-out sets (``validation_holdout``; ``validation_forms``: long reasoning, five other
    languages, tables, key-value lists, JSON, RAG citations) were labelled without sight of the
    scorer.  At least 99% agreement on ``aligned`` and on ``correct``, at most 2% of rows
    disagreeing on anything (claim included), and in ``validation_forms`` no form of response
    worse than that; the remaining disagreements are rows marked AMBIGUOUS (see
    docs/SCORING-CHOICES.md)."""
    rows = _validation(name)
    assert len(rows) >= 150
    scorer = Scorer(nlp=nlp)
    scores = scorer.score_many(
        [ScoreInput(r["question"], r["answer"], r["type"], r["response"], domain=r["domain"]) for r in rows]
    )
    wrong = []
    aligned_off = correct_off = 0
    by_form: dict[str, list[int]] = {}
    for r, s in zip(rows, scores):
        exp = r["expected_claim"]
        claim_ok = (exp is None) == (s.claim is None) and (exp is None or claims_equivalent(r["type"], s.claim, exp))
        aligned_off += s.aligned != r["expected_aligned"]
        correct_off += s.correct != r["expected_correct"]
        ok = claim_ok and s.aligned == r["expected_aligned"] and s.correct == r["expected_correct"]
        counts = by_form.setdefault(r.get("form", ""), [0, 0])
        counts[0] += 1
        counts[1] += not ok
        if not ok:
            wrong.append((r.get("form"), r["response"][-200:], r["expected_aligned"], r["expected_correct"], exp, s))
    assert aligned_off / len(rows) <= 0.01, wrong
    assert correct_off / len(rows) <= 0.01, wrong
    assert len(wrong) / len(rows) <= 0.02, wrong
    # Per form of response: no form may hide behind the others (one disagreement in a small one).
    worse = {form: c for form, c in by_form.items() if c[1] > max(1, int(0.02 * c[0]))}
    assert not worse, (worse, wrong)


@pytest.mark.parametrize("name", sorted(labelled.FLOORS))
def test_the_blind_sets_keep_their_agreement(name: str) -> None:
    """The blind sets of issue 21 (tests/labelled.py): the agreement reached is kept, and every
    row is scored as the plugin would, its finish reason included (clarification 14)."""
    rows = _validation(name)
    scores = Scorer(nlp=None).score_many([
        ScoreInput(r["question"], r["answer"], r["type"], r["response"], domain=r["domain"],
                   finish_reason=r.get("finish_reason")) for r in rows])
    aligned = sum(s.aligned == r["expected_aligned"] for r, s in zip(rows, scores)) / len(rows)
    correct = sum(s.correct == r["expected_correct"] for r, s in zip(rows, scores)) / len(rows)
    floor_aligned, floor_correct = labelled.FLOORS[name]
    assert aligned >= floor_aligned and correct >= floor_correct, (name, aligned, correct)


@pytest.mark.parametrize("name", [*labelled.SETS, *sorted(labelled.FLOORS)])
def test_every_labelled_paraphrase_group_gets_its_consistency_verdict(name: str) -> None:
    """RC, judged on the scorer's claims, agrees with RC judged on the labelled claims, for every
    paraphrase group of two or more rows in a set (rows of one question of the public split)."""
    rows = _validation(name)
    scores = Scorer(nlp=None).score_many([
        ScoreInput(r["question"], r["answer"], r["type"], r["response"], domain=r["domain"],
                   finish_reason=r.get("finish_reason")) for r in rows])
    groups: dict = {}
    for r, s in zip(rows, scores):
        if r.get("id"):
            groups.setdefault(r["id"].rsplit("-p", 1)[0], []).append((r, s))
    wrong = [g for g, members in groups.items() if len(members) > 1 and
             group_consistent(members[0][0]["type"], [r["expected_claim"] for r, _ in members])
             != group_consistent(members[0][0]["type"], [s.claim for _, s in members])]
    assert not wrong, (name, wrong)


def test_labelled_sets_store_public_rows_by_id() -> None:
    """A row of the public split is stored by its id (which must resolve in
    labelled_public.jsonl, checked against the split in test_labelled_snapshot.py), and an
    inline question must be one we wrote, not DefAn's."""
    by_id = labelled.fixture_rows()
    questions = {r["question"].strip() for r in by_id.values()}
    for name in (*labelled.SETS, *labelled.FLOORS):
        for i, r in enumerate(labelled.raw_rows(name), 1):
            where = f"{name}:{i}"
            if "id" in r:
                assert r["id"] in by_id, where
                assert not set(labelled.JOINED) & set(r), f"{where}: the public row supplies these"
            else:
                assert r["question"].strip() not in questions, f"{where}: a DefAn question stored inline; store its id"
            assert {"response", "expected_aligned", "expected_correct", "expected_claim"} <= set(r), where


def test_errored_response_is_not_scored(rules: Scorer) -> None:
    s = rules.score("q?", "1", "numeric", None, error="timeout after 30 s")
    assert s == Score(None, None, None, "timeout after 30 s")


def test_unknown_type_is_an_error(rules: Scorer) -> None:
    with pytest.raises(ValueError, match="allowed: name, numeric, date, rank, city"):
        rules.score("q?", "1", "number", "1")


def test_scoring_is_deterministic_and_order_independent() -> None:
    answers = {"nobel": ["Wilhelm Röntgen", "Albert Einstein", "Marie Curie"]}
    items = [
        ScoreInput("Who won the Nobel Prize in Physics in 1901?", "Wilhelm Röntgen", "name", r, domain="nobel")
        for r in ("It was Wilhelm Röntgen.", "Albert Einstein won.", "I think Someone Else did.", "Röntgen")
    ]
    a = Scorer(nlp=None, answers=answers).score_many(items)
    b = Scorer(nlp=None, answers=answers).score_many(list(reversed(items)))
    assert a == list(reversed(b))


@pytest.mark.skipif(not installed_pipelines(), reason="no spaCy pipeline installed")
def test_ner_settles_unknown_names_the_rules_cannot() -> None:
    q = "Which movie earned Janet Gaynor the Oscar in 1928? give the movie name only."
    r = "Janet Gaynor won Best Actress; Hollywood insiders credit Sunrise above all."
    with_ner = Scorer(nlp="auto").score(q, "Sunrise", "name", r, domain="entertainment")
    assert with_ner.claim is not None and with_ner.correct is not None


# -- hypothesis properties -------------------------------------------------------------------

MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December"]
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(n=st.integers(min_value=0, max_value=99_999_999), style=st.integers(0, 5))
def test_any_written_form_of_a_gold_number_is_correct(rules: Scorer, n: int, style: int) -> None:
    gold = f"{n:,}"
    form = [str(n), f"{n:,}", f"**{n:,}**", f"Answer: {n}", f"The answer is {n:,}.", f"{n}."][style]
    s = rules.score("How many people lived there in 1850?", gold, "numeric", form, domain="census")
    assert s.correct, (gold, form, s)


@SETTINGS
@given(
    whole=st.integers(0, 9999),
    frac=st.integers(0, 99),
    extra=st.integers(0, 9),
)
def test_a_decimal_gold_accepts_its_precision(rules: Scorer, whole: int, frac: int, extra: int) -> None:
    gold = f"{whole}.{frac:02d}"
    claim = f"{gold}{extra}"  # one more digit: within 10^-2
    assert rules.score("q?", gold, "numeric", claim, domain="math").correct


@SETTINGS
@given(y=st.integers(1800, 2030), m=st.integers(1, 12), d=st.integers(1, 28), style=st.integers(0, 5))
def test_any_written_form_of_a_gold_date_is_correct(rules: Scorer, y: int, m: int, d: int, style: int) -> None:
    gold = f"{m:02d}/{d:02d}/{y}"
    month = MONTHS[m - 1]
    form = [gold, f"{d} {month} {y}", f"{month} {d}, {y}", f"{y}-{m:02d}-{d:02d}",
            f"{month[:3]}. {d}, {y}", f"She was born on {d} {month} {y}."][style]
    s = rules.score("When was Jane Doe born (mm/dd/yyyy)?", gold, "date", form, domain="entertainment")
    assert s.correct, (gold, form, s)


@SETTINGS
@given(r=st.integers(1, 1500), style=st.integers(0, 5))
def test_any_written_form_of_a_gold_rank_is_correct(rules: Scorer, r: int, style: int) -> None:
    form = [str(r), f"{r}th", f"#{r}", f"={r}", f"{r}=", f"It was ranked {r} in 2022."][style]
    s = rules.score("What was the QS rank of X University in 2022?", f"  {r}  ", "rank", form, domain="qs_ranking")
    assert s.correct, (r, form, s)


@SETTINGS
@given(
    qn=st.integers(0, 3000),
    answer=st.integers(0, 10_000_000),
    template=st.sampled_from([
        "In {q}, the figure was {a:,}.",
        "The {q} count was {a}.",
        "For {q}: {a:,} people.",
        "According to the {q} census, there were {a:,} residents.",
    ]),
)
def test_numbers_the_question_contains_never_become_the_claim(rules: Scorer, qn: int, answer: int, template: str) -> None:
    q = f"What was the population of Tasmania in {qn}?"
    r = template.format(q=qn, a=answer)
    s = rules.score(q, "1", "numeric", r, domain="census")
    if answer == qn:
        assert s.claim is None
    else:
        assert s.claim is not None and Decimal(s.claim) == answer, (q, r, s)


@SETTINGS
@given(
    response=st.text(max_size=300),
    question=st.text(max_size=120),
    type_=st.sampled_from(["name", "numeric", "date", "rank", "city"]),
    answer=st.sampled_from(["", "386", "1,351,921", "42.85", "11/19/1946", "Wilhelm Röntgen",
                            "None[c]", "Seattle, Washington Virtual/Online due to COVID-19[15]", "  269=  ", "½"]),
    domain=st.sampled_from(["nobel", "math", "qs_ranking", None]),
)
def test_no_input_string_crashes_the_scorer(rules: Scorer, response: str, question: str, type_: str, answer: str, domain: str | None) -> None:
    s = rules.score(question, answer, type_, response, domain=domain)
    assert s.claim is None or isinstance(s.claim, str)
    assert isinstance(s.aligned, bool) and isinstance(s.correct, bool)
    assert not (s.correct and s.claim is None)


@SETTINGS
@given(response=st.text(alphabet=st.characters(codec="utf-8"), max_size=200).map(lambda t: f"<think>{t}</think> 386"))
def test_reasoning_blocks_never_leak_into_the_claim(rules: Scorer, response: str) -> None:
    if "</think>" in response[:-12] or "<think>" in response[7:]:
        return  # nested tags: not what models emit
    s = rules.score("What was the QS rank of X in 2022?", "386", "rank", response)
    assert s.claim == "386" and s.aligned


# -- bounded cost on long responses ---------------------------------------------------------------


def test_a_runaway_response_is_scored_on_a_window_with_a_note() -> None:
    from defan_pytest.scoring.scorer import MAX_WHOLE, WINDOW

    filler = "and then the model kept thinking about many unrelated things " * (MAX_WHOLE // 60 + 10)
    s = Scorer(nlp=None).score("Who won the 1903 Nobel Prize in Physics?", "Pierre Curie", "name",
                               filler + "\nFinal answer: Pierre Curie", domain="nobel")
    assert s.claim == "Pierre Curie" and s.correct is True
    assert s.note is not None and f"{WINDOW:,}" in s.note and "not read whole" in s.note
    short = Scorer(nlp=None).score("Who won?", "Pierre Curie", "name", "Pierre Curie")
    assert short.note is None


def test_the_middle_of_a_runaway_response_is_not_read() -> None:
    from defan_pytest.scoring.scorer import MAX_WHOLE

    half = "x " * (MAX_WHOLE // 2)
    s = Scorer(nlp=None).score("How many?", "42", "numeric", half + " The answer is 41. " + half)
    assert s.claim is None and s.note is not None  # the only number sits outside the window


class _BrokenNER:
    name = "broken"

    def entities(self, texts: object, batch_size: int = 256) -> object:
        raise RuntimeError("pipeline exploded")


def test_a_failing_ner_pipeline_falls_back_to_rules_with_a_note() -> None:
    scorer = Scorer(nlp=_BrokenNER())
    s = scorer.score("Who won the 1903 Nobel Prize in Physics?", "Pierre Curie", "name",
                     "I believe Zorbo Quux won it.", domain="nobel")
    assert s.claim == "Zorbo Quux" and s.correct is False
    assert s.note is not None and "NER failed (RuntimeError: pipeline exploded)" in s.note


class _RecordingNER:
    name = "recording"

    def __init__(self) -> None:
        self.seen: list = []

    def entities(self, texts: list, batch_size: int = 256) -> list:
        self.seen.extend(texts)
        out = []
        for t in texts:
            i = t.find("Zorbo Quux")
            out.append([(i, i + len("Zorbo Quux"), "PERSON")] if i >= 0 else [])
        return out


def test_ner_reads_a_bounded_window_and_its_offsets_map_back() -> None:
    from defan_pytest.scoring.scorer import NER_WINDOW

    ner = _RecordingNER()
    response = "the model wrote lowercase prose for a long time. " * 2000 + "Then Zorbo Quux won it. " + "more prose. " * 5000
    s = Scorer(nlp=ner).score("Who won the 1903 Nobel Prize in Physics?", "Pierre Curie", "name", response, domain="nobel")
    assert s.claim == "Zorbo Quux"
    assert len(ner.seen) == 1 and len(ner.seen[0]) <= NER_WINDOW < len(response)


def test_every_public_gold_answered_as_written_is_correct(public_dir: Path) -> None:
    """A response that is exactly a row's gold is right, for every row of the public split
    with a gold (the 30 virtual-conference golds were wrong before issue 37) -- except the UN
    rows that ask for dd/mm/yyyy: their gold is written month first, as the dataset writes
    dates, so the same digits read day first (as the question asks) are another date when
    the day is 12 or less."""
    from defan_pytest.dataset import load_public

    rows = [r for r in load_public(data_dir=public_dir) if r.answer.strip()]
    scores = Scorer(nlp=None).score_many([ScoreInput(r.question, r.answer, r.type, r.answer, domain=r.domain) for r in rows])
    wrong = [(r.id, r.answer, s.claim) for r, s in zip(rows, scores) if not s.correct]
    assert all(i.startswith("world_org-") and "dd/mm" in q.question for (i, _, _), q in
               zip(wrong, [r for r, s in zip(rows, scores) if not s.correct])), wrong
    assert len(wrong) == 26, wrong


def test_a_user_domain_gives_its_own_profile() -> None:
    """Issue 37: what a domain means is its DomainProfile: a user's domain whose answers are
    worked solutions claims the last number, given by the scorer or by the row."""
    from defan_pytest.scoring.profile import DomainProfile

    q = "A tank holds 40 litres and loses 5 a day. After how many days is it empty?"
    r = "In 8 days, or 192 hours."
    worked = DomainProfile(worked_solutions=True)
    # any domain: the first candidate; a worked solution: its last number (SCORING.md step 3)
    assert Scorer(nlp=None).score(q, "8", "numeric", r, domain="my_tanks").claim == "8"
    assert Scorer(nlp=None, profiles={"my_tanks": worked}).score(q, "8", "numeric", r, domain="my_tanks").claim == "192"
    row = ScoreInput(q, "8", "numeric", r, domain="my_tanks", profile=worked)
    assert Scorer(nlp=None).score_many([row])[0].claim == "192"
    assert Scorer(nlp=None).score(q, "8", "numeric", r, domain="math").claim == "192"  # DefAn's math profile


def test_the_text_layer_names_no_benchmark() -> None:
    """Issue 37: scoring/text/ holds language knowledge only; the benchmark's words (Nobel,
    Oscar, FIFA, QS, OIC) are DefAn's domain profiles' (defan_pytest/dataset/profiles.py)."""
    import io
    import tokenize

    import defan_pytest.scoring.text as text_pkg

    found = []
    for path in sorted(Path(text_pkg.__file__).parent.glob("*.py")):
        with open(path, encoding="utf-8") as f:
            for tok in tokenize.generate_tokens(io.StringIO(f.read()).readline):
                if tok.type == tokenize.STRING:
                    words = set(tok.string.lower().replace("|", " ").split())
                    hits = words & {"nobel", "oscar", "oscars", "fifa", "qs", "oic"}
                    found.extend((path.name, tok.start[0], w) for w in hits)
    assert not found, found
