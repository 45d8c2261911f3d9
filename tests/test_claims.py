"""Steps 1 to 3 of SCORING.md: cleaning, alignment and claim extraction."""
from __future__ import annotations

import pytest

from defan_pytest.scoring.claims import extract
from defan_pytest.scoring.cleaning import clean, latex_plain
from defan_pytest.scoring.text.tokens import Gazetteer
from defan_pytest.scoring.types import make_context

KOBE = "What was the position of Kobe University in the QS rankings for 2022?"
CENSUS = "What was the population count of Australia's 0-4 age group in 2011?"
NOBEL = (
    "Who was awarded the Nobel Prize in Physics for the year 1901? [first name + last name only] "
    "if multiple person, give one name only."
)
GAYNOR_FILM = "Which movie earned Janet Gaynor the Oscar in 1928? give the movie name only."
GAYNOR_BORN = "When was Janet Gaynor born (mm/dd/yyyy)?"
UN_DMY = "give me Afghanistan’s date of admission (dd/mm/yyyy format) into the UN"
CVPR = "Where did CVPR take place in 2024? Give me the exact location only."
MATH = "a school has 40 students and 3 teachers . how many people ?(Give me the numeric answer only)"


def run(question: str, type_: str, response: str, *, empty: bool = False, names=(), math=False):
    ctx = make_context(question, type_, empty_gold=empty, gazetteer=Gazetteer(names), is_math=math)
    return extract(response, ctx)


@pytest.mark.parametrize(
    "raw,cleaned",
    [
        ("  386  ", "386"),
        ("<think>Let me recall... maybe 334?</think>\n386", "386"),
        ("<think>\nunfinished reasoning 334", ""),
        ("reasoning only</think> 386", "386"),
        ('"Wilhelm Röntgen"', "Wilhelm Röntgen"),
        ("“Seattle”", "Seattle"),
        ("**386**", "386"),
        ("*386*", "386"),
        ("`386`", "386"),
        ("```\n386\n```", "386"),
        ("386.", "386"),
        ("Washington D.C.", "Washington D.C"),
        ("Answer: 386", "386"),
        ("**Answer:** 386.", "386"),
        ("Final answer: 240", "240"),
        ("\\boxed{240}", "\\boxed{240}"),
        ("42.85", "42.85"),
        ("", ""),
    ],
)
def test_clean(raw: str, cleaned: str) -> None:
    assert clean(raw) == cleaned


def test_clean_removes_only_one_final_full_stop() -> None:
    assert clean("386..") == "386.."
    assert clean("Sir J. J. Thomson.") == "Sir J. J. Thomson"


@pytest.mark.parametrize(
    "type_,question,response,aligned,claim",
    [
        # numeric
        ("numeric", CENSUS, "1,351,921", True, "1351921"),
        ("numeric", CENSUS, "1.54 million", True, "1540000"),
        ("numeric", CENSUS, "$1,200", True, "1200"),
        ("numeric", CENSUS, "68.25%", False, None),  # a percentage answers no count question (clarification 15)
        ("numeric", CENSUS, "-3", True, "-3"),
        ("numeric", MATH, "3 days", False, "3"),
        # rank
        ("rank", KOBE, "334", True, "334"),
        ("rank", KOBE, "334th", True, "334"),
        ("rank", KOBE, "#334", True, "334"),
        ("rank", KOBE, "=47", True, "47"),
        ("rank", KOBE, "47=", True, "47"),
        ("rank", KOBE, "601-650", True, "601-650"),
        ("rank", KOBE, "801–1000", True, "801-1000"),
        # date
        ("date", GAYNOR_BORN, "10/06/1906", True, "1906-10-06"),
        ("date", GAYNOR_BORN, "6 October 1906", True, "1906-10-06"),
        ("date", GAYNOR_BORN, "October 6, 1906", True, "1906-10-06"),
        ("date", GAYNOR_BORN, "1906-10-06", True, "1906-10-06"),
        ("date", GAYNOR_BORN, "1906", False, "1906"),  # a year where no year was asked
        ("date", "In which year did X join the UN?", "1946", True, "1946"),
        # name
        ("name", NOBEL, "Wilhelm Röntgen", True, "Wilhelm Röntgen"),
        ("name", NOBEL, "Pierre Curie and Marie Curie", False, "Pierre Curie"),
        ("name", NOBEL, "Curie; Becquerel", False, "Curie"),
        # city
        ("city", CVPR, "Seattle", True, "Seattle"),
        ("city", CVPR, "Seattle, WA, USA", True, "Seattle, WA, USA"),
        ("city", CVPR, "Seattle and Portland", False, "Seattle"),
    ],
)
def test_alignment_and_claim(type_, question, response, aligned, claim) -> None:
    ext = run(question, type_, response)
    assert (ext.aligned, ext.claim) == (aligned, claim)


def test_unit_word_makes_a_number_misaligned() -> None:
    ext = run(CENSUS, "numeric", "1,351,921 people")
    assert not ext.aligned and ext.claim == "1351921"


def test_sentence_around_right_answer_is_misaligned() -> None:
    ext = run(KOBE, "rank", "Kobe University is highly ranked university in the world and was ranked 386th in 2022.")
    assert not ext.aligned and ext.claim == "386"


@pytest.mark.parametrize(
    "response",
    [
        "I'm sorry, I don't have access to real-time rankings.",
        "Kobe University is located in Japan.",
        "Kobe University was not ranked in the QS World University Rankings for 2022.",
    ],
)
def test_refusals_hedges_and_off_topic_have_no_rank_claim(response: str) -> None:
    ext = run(KOBE, "rank", response)
    assert not ext.aligned and ext.claim is None


def test_empty_gold_short_none_statement_is_aligned() -> None:
    q = "Who won the Nobel Prize in Physics in 1940?"
    for r in ("None", "No prize was awarded in 1940", "Not awarded"):
        ext = run(q, "name", r, empty=True)
        assert ext.aligned and ext.claim == "none", r
    ext = run(q, "name", "Albert Einstein", empty=True, names=["Albert Einstein"])
    assert ext.aligned and ext.claim == "Albert Einstein"


# -- step 3: marks win ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "response,claim",
    [
        ("Let me think. It might be 334 or 386. The answer is 386.", "386"),
        ("It might be 334.\nAnswer: 386", "386"),
        ("Candidates were 195 and 334, but **386** is right.", "386"),
        ("Several sources disagree (334, 467).\n386", "386"),  # a last line that is a bare value
        ("First **334**, then corrected to **386**", "386"),  # the last mark wins
    ],
)
def test_marked_answers_win(response: str, claim: str) -> None:
    assert run(KOBE, "rank", response).claim == claim


def test_boxed_and_last_number_in_math() -> None:
    assert run(MATH, "numeric", "40 + 3 = 43, so \\boxed{43}", math=True).claim == "43"
    # no mark: the last number, even one the question contains
    assert run(MATH, "numeric", "There are 3 teachers and 40 students, 40 + 3 = 43", math=True).claim == "43"
    assert run(MATH, "numeric", "We add the 3 teachers to 40 students: 40", math=True).claim == "40"


def test_marked_initials_are_not_cut() -> None:
    ext = run(NOBEL, "name", "The answer is J. J. Thomson.", names=["J. J. Thomson"])
    assert ext.claim == "J. J. Thomson"


# -- step 3: candidates and what the question contains ------------------------------------


def test_numbers_the_question_contains_are_left_out() -> None:
    r = "In 2011, the 0-4 age group in Australia numbered 1,351,921."
    assert run(CENSUS, "numeric", r).claim == "1351921"
    r = "As of the 2011 Census (9 August 2011) there were 1.35 million children aged 0–4."
    assert run(CENSUS, "numeric", r).claim == "1350000"


def test_no_claim_when_every_candidate_is_in_the_question() -> None:
    assert run(CENSUS, "numeric", "The 2011 census counted the 0-4 group.").claim is None


def test_unit_or_label_rule_keeps_a_question_number() -> None:
    q = "a job takes 3 days for one man . how long ?"
    assert run(q, "numeric", "3 days").claim == "3"


def test_rank_stated_as_rank_comes_before_other_numbers() -> None:
    r = "Kobe University is in the top 400; in 2022 it was ranked 342nd."
    assert run(KOBE, "rank", r).claim == "342"
    assert run(KOBE, "rank", "It is within the top 400 universities.").claim == "400"
    assert run(KOBE, "rank", "It sits in the 601-650 band in 2022.").claim == "601-650"
    assert run(KOBE, "rank", "In the 2023 edition it was #386").claim == "386"


def test_dates_in_sentences_and_day_first_questions() -> None:
    assert run(GAYNOR_BORN, "date", "She was born on October 6, 1906 in Philadelphia.").claim == "1906-10-06"
    assert run(UN_DMY, "date", "19/11/1946").claim == "1946-11-19"  # day > 12
    assert run(UN_DMY, "date", "05/11/1946").claim == "1946-11-05"  # the question asks dd/mm
    assert run(GAYNOR_BORN, "date", "05/11/1946").claim == "1946-05-11"  # month first
    assert run(GAYNOR_BORN, "date", "She was born in 1906.").claim == "1906"


def test_name_in_sentence_excludes_the_person_the_question_names() -> None:
    r = "Janet Gaynor won the Academy Award for 7th Heaven."
    assert run(GAYNOR_FILM, "name", r, names=["7th Heaven", "Sunrise"]).claim == "7th Heaven"
    # without the answer list, the capitalized-phrase rule still finds it
    r = "Janet Gaynor won the Academy Award for Street Angel."
    assert run(GAYNOR_FILM, "name", r).claim == "Street Angel"


def test_none_statement_in_sentence() -> None:
    q = "Who won the Nobel Prize in Physics in 1940?"
    ext = run(q, "name", "The Nobel Prize in Physics was not awarded in 1940 because of the war.", empty=True)
    assert ext.claim == "none" and not ext.aligned


def test_place_in_sentence_with_region() -> None:
    r = "CVPR 2024 was held in Seattle, Washington, from June 17 to 21."
    assert run(CVPR, "city", r, names=["Seattle, Washington"]).claim == "Seattle, Washington"
    assert run(CVPR, "city", "It took place in Long Beach, California.").claim == "Long Beach, California"
    assert run(CVPR, "city", "The conference was held online.").claim == "online"


def test_needs_ner_only_when_rules_leave_a_name_open() -> None:
    ctx = make_context(NOBEL, "name", gazetteer=Gazetteer(["Wilhelm Röntgen"]))
    assert not extract("It was Wilhelm Röntgen.", ctx, ner_available=True).needs_ner
    assert not extract("Wilhelm Röntgen", ctx, ner_available=True).needs_ner
    assert extract("Many critics think Someone Unknown won it.", ctx, ner_available=True).needs_ner
    assert not extract("Many critics think Someone Unknown won it.", ctx, ner_available=False).needs_ner
    # stated as the answer ("it went to X", "I believe it was X"): the rule settles it
    for r in ("It went to Someone Unknown.", "I believe it was Someone Unknown, but I'm not certain."):
        ext = extract(r, ctx, ner_available=True)
        assert not ext.needs_ner and ext.claim == "Someone Unknown"


def test_capitalized_phrase_stops_at_a_sentence_end() -> None:
    r = "I don't have information about the 2023 Nobel Prize in Literature. Please check the website."
    assert run(NOBEL, "name", r).claim is None


def test_hedged_year_and_year_inside_a_date() -> None:
    un = "When was Sweden admitted to the United Nations?"
    assert run(un, "date", "I believe Sweden joined around 1946, but I'm not sure.").claim == "1946"
    oic = "When did Senegal become a member state of the OIC?"
    assert run(oic, "numeric", "December 1969").claim == "1969"
    assert run(CENSUS, "numeric", "In the 9 August 2011 census: 1 351 921").claim == "1351921"


def test_a_slash_outside_math_is_two_numbers() -> None:
    assert run(CENSUS, "numeric", "Roughly 1/2 of them").claim == "1"
    assert run(KOBE, "rank", "Somewhere 2022/601, I think").claim == "601"


@pytest.mark.parametrize(
    "latex,plain",
    [
        ("30 \\text{ September } 1947", "30 September 1947"),
        ("\\mathrm{Long\\ Beach}", "Long Beach"),
        ("\\dfrac{3}{4}", "3/4"),
        ("1{,}746", "1,746"),
        ("90^{\\circ}", "90°"),
        ("42.86\\%", "42.86%"),
        ("386", "386"),
    ],
)
def test_latex_in_a_mark_reads_as_plain_text(latex: str, plain: str) -> None:
    assert latex_plain(latex) == plain


def test_a_boxed_latex_answer_is_a_mark_not_a_bare_value() -> None:
    # \boxed{X} is an explicit mark (step 3), not a wrapper cleaning removes.
    e = run(GAYNOR_BORN, "date", "\\boxed{6 \\text{ October } 1906}")
    assert (e.claim, e.aligned) == ("1906-10-06", False)


def test_marks_are_read_from_the_last_and_at_most_a_bounded_number(monkeypatch: pytest.MonkeyPatch) -> None:
    # A runaway answer with 60,000 bold numbers: the claim is still the last mark, and only a
    # bounded number of marks is read (each reading can cost a date parse).
    from defan_pytest.scoring import claims
    from defan_pytest.scoring.scorer import Scorer

    read: list[str] = []
    original = claims.mark_value

    def counting(kind: object, x: str, ctx: object) -> object:
        read.append(x)
        return original(kind, x, ctx)  # type: ignore[arg-type]

    monkeypatch.setattr(claims, "mark_value", counting)
    response = " ".join(f"**{i}**" for i in range(60000))
    score = Scorer(nlp=None).score("How many people lived in Kobe in 2010?", "1,351,921", "numeric", response)
    assert score.claim == "59999"
    assert read[0] == "59999" and len(read) <= claims.MAX_MARKS_READ * len(claims._MARK_PATTERNS)
    read.clear()
    words = " ".join(f"**Word{i} x**" for i in range(60000))
    Scorer(nlp=None).score("How many people lived in Kobe in 2010?", "1,351,921", "numeric", words)
    assert 0 < len(read) <= claims.MAX_MARKS_READ * len(claims._MARK_PATTERNS)


# -- clarification 12: where the answer ends ----------------------------------------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

PROPS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
WORLD_CUP = "Which team emerged victorious in the 1998 FIFA World Cup?(Give me the name only)"
TEAMS = ["France", "Brazil", "Italy", "West Germany", "Argentina", "Uruguay"]


@pytest.mark.parametrize(
    "response",
    [
        "The winner of the 1998 FIFA World Cup was\nUser: Who won the 2002 FIFA World Cup?\nAssistant: Brazil",
        "Sure! Here is the answer.\n\n### Instruction:\nWho won the 2002 FIFA World Cup?\n\n### Response:\nBrazil",
        "The 1998 champion was\nQ: Who won the 2002 FIFA World Cup?\nA: Brazil",
        "The 1998 FIFA World Cup\n\nQuestion: Who won the 2002 FIFA World Cup?\nAnswer: Brazil",
        "The 1998 FIFA World Cup winner\nWhich team emerged victorious in the 2002 FIFA World Cup?\nBrazil",
    ],
)
def test_a_new_turn_and_everything_after_it_is_ignored(response: str) -> None:
    e = run(WORLD_CUP, "name", response, names=TEAMS)
    assert (e.claim, e.aligned) == (None, False)


def test_the_rows_own_question_restated_is_no_new_turn() -> None:
    e = run(WORLD_CUP, "name", "**Answer**\nWhich team emerged victorious in the 1998 FIFA World Cup?\nFrance", names=TEAMS)
    assert (e.claim, e.aligned) == ("France", False)


def test_the_answer_before_a_new_turn_is_kept_but_misaligned() -> None:
    e = run(KOBE, "rank", "386\n\nQuestion: What was the position of Osaka University in 2022?\nAnswer: 80")
    assert (e.claim, e.aligned) == ("386", False)
    # An echo of the prompt on the first line is the response's own start, not a new turn.
    e = run(KOBE, "rank", "Q: What was the position of Kobe University in 2022?\nA: 386")
    assert e.claim == "386"


_TURN_LABELS = st.sampled_from(["Question:", "Q:", "User:", "### Instruction:", "### Instruction", "Human:", "**Question:**"])


@PROPS
@given(st.sampled_from(TEAMS), st.sampled_from(TEAMS), _TURN_LABELS, st.sampled_from(["Answer:", "A:", "Assistant:", ""]))
def test_appending_a_new_turn_never_changes_the_claim(value, other, label, answer_label) -> None:
    base = run(WORLD_CUP, "name", f"It was {value}.", names=TEAMS)
    e = run(WORLD_CUP, "name", f"It was {value}.\n\n{label} Who won the 2002 FIFA World Cup?\n{answer_label} {other}", names=TEAMS)
    assert e.claim == base.claim == value
    assert e.aligned is False


@PROPS
@given(st.sampled_from(["Paris", "Argentina", "West Germany", "386", "472nd"]), st.integers(3, 12), st.sampled_from([" ", "\n", " \n"]))
def test_a_repetition_loop_is_misaligned_and_claims_its_value(value, times, sep) -> None:
    type_, question, want = ("rank", KOBE, value.rstrip("nd")) if value[0].isdigit() else ("name", WORLD_CUP, value)
    e = run(question, type_, sep.join([value] * times), names=TEAMS)
    assert (e.claim, e.aligned) == (want, False)


def test_twice_is_not_a_loop() -> None:
    assert run(WORLD_CUP, "name", "Bora Bora").aligned is True


# -- clarification 13: options, hedges, corrections ---------------------------------------------


@pytest.mark.parametrize(
    "type_,question,response,claim",
    [
        ("name", WORLD_CUP, "Hungary - no, wait, West Germany.", "West Germany"),
        ("name", WORLD_CUP, "Brazil — no, wait, France", "France"),
        ("name", WORLD_CUP, "Brazil, sorry, I mean France", "France"),
        ("name", WORLD_CUP, "It was not Brazil but France.", "France"),
        ("numeric", CENSUS, "78011 - no, sorry, I mean 78101", "78101"),
        ("numeric", CENSUS, "468,056. Actually, 486,056.", "486056"),
        ("rank", KOBE, "268 - sorry, I mean 286", "286"),
        ("numeric", MATH, "The answer is 120. Actually, 125.", "125"),
    ],
)
def test_a_retracted_value_is_not_a_candidate_and_the_correction_is_a_mark(type_, question, response, claim) -> None:
    e = run(question, type_, response, names=TEAMS + ["Hungary"], math=question is MATH)
    assert (e.claim, e.aligned) == (claim, False)


def test_a_retracted_value_stays_out_even_without_a_correction_value() -> None:
    e = run(KOBE, "rank", "It was 268 - no, wait, I am not sure.")
    assert e.claim is None


@PROPS
@given(
    st.integers(1, 1500),
    st.integers(1, 1500),
    st.sampled_from([" - no, wait, ", " — no, wait, ", ", sorry, I mean ", " - sorry, I mean ", ". Actually, ", ", no wait, ", " - I mean, ",
                     "? No, actually ", "? No — actually, "]),
)
def test_a_retraction_never_yields_the_retracted_value(x, y, phrase) -> None:
    e = run(KOBE, "rank", f"{x}{phrase}{y}")
    assert e.claim == str(y)
    assert e.aligned is False


@pytest.mark.parametrize(
    "response,claim",
    [
        ("A) West Germany\nB) England\nC) Portugal\nD) Soviet Union", "West Germany"),
        ("1. West Germany\n2. England\n3. Portugal", "West Germany"),
        ("Either Brazil or Italy", "Brazil"),
        ("D) France", "France"),
        ("(B) Italy", "Italy"),
    ],
)
def test_options_and_list_markers(response: str, claim: str) -> None:
    e = run(WORLD_CUP, "name", response, names=TEAMS + ["England", "Portugal", "Soviet Union"])
    assert (e.claim, e.aligned) == (claim, False)


@PROPS
@given(st.sampled_from("ABCDE"), st.sampled_from([")", "."]), st.permutations(TEAMS))
def test_a_list_of_options_claims_its_first(letter, mark, teams) -> None:
    lines = [f"{chr(ord(letter) + i) if letter <= 'B' else chr(ord('A') + i)}{mark} {t}" for i, t in enumerate(teams[:3])]
    e = run(WORLD_CUP, "name", "\n".join(lines), names=TEAMS)
    assert (e.claim, e.aligned) == (teams[0], False)


# -- clarification 14: cut off --------------------------------------------------------------


def length(question: str, type_: str, response: str, names=(), math=False):
    ctx = make_context(question, type_, gazetteer=Gazetteer(names), is_math=math, finish_reason="length")
    return extract(response, ctx)


def test_a_cut_answer_is_misaligned_and_its_last_word_is_no_candidate() -> None:
    e = length(WORLD_CUP, "name", "The 1998 FIFA World Cup final ended with the title going to Fra", names=TEAMS)
    assert (e.claim, e.aligned) == (None, False)
    e = length(WORLD_CUP, "name", "France won it, beating Bra", names=TEAMS)
    assert (e.claim, e.aligned) == ("France", False)
    e = length(KOBE, "rank", "386")
    assert (e.claim, e.aligned) == (None, False)
    e = length(MATH, "numeric", "2/3 T − 1/3 T = 90, which gives T = 27", math=True)
    assert e.claim == "90"


@PROPS
@given(st.integers(1, 1500), st.integers(1, 1500))
def test_a_cut_answer_never_claims_its_last_number(first, last) -> None:
    e = length(KOBE, "rank", f"Kobe University was ranked {first}th, or maybe {last}")
    assert e.aligned is False
    assert e.claim == str(first)
    assert extract(f"Kobe University was ranked {first}th, or maybe {last}", make_context(KOBE, "rank")).claim == str(first)


# -- clarification 20: math results ---------------------------------------------------------


@pytest.mark.parametrize(
    "response,claim",
    [
        ("the answer is 12 + 1 = 13", "13"),
        ("The volume is 2800 m * 10 m * 5 m = 100000 m^3", "100000"),
        ("2000 / 3000 = 0.7", "0.7"),
        ("The remainder is 5.", "5"),
        ("Let x be the number. 9x = 36, so x = 4.\nCheck: 4 × 9 = 36", "4"),
        ("x = 80.\nCheck: 80 ÷ 0.8 = 100, 0.8 × 80 = 64, 100 − 64 = 36 ✓", "80"),
        ("The required run rate is 5.5 runs per over, since 32 runs came in the first 10 overs.", "5.5"),
        ("x = 4, since the other root, -9, is negative.", "4"),
        ("x = 4 or x = -9 (rejected).", "4"),
        ("The answer is 6, because 42 is a multiple of 7.", "6"),
        ("√1.5625 = 1.25, and 1.25 × 1.25 = 1.5625", "1.25"),
        ("6 workers × 8 days = 48 worker-days. After 3 days, 48 − 18 = 30 remain. With 10 workers, 30 / 10 = 3", "3"),
        ("22 (the average of 8, 12, 16, 20, 24, 28, 32 and 36)", "36"),  # no result stated: last number
        ("So the girls are 20.\nCheck: 25 + 20 = 45.\n\n**25**", "25"),  # a mark after the check still counts
        ("400 − 9 = 391, 541 − 14 = 527. इनका म.स. (HCF) = 17 है।", "17"),  # a unit word and a danda end it
        ("-1 + 0.5 = -0.5, and the least integer greater than -0.5 is 0", "0"),  # a number in the subject
        ("The correct quotient is thirty-two.", "32"),  # a result in number words
        ("The numbers are 27 and 29, so the bigger number is twenty-nine.", "29"),
        ('{"reasoning": "12*1 + 10*2 = 32; 40 * 2 = 80; 80 - 32 = 48 = 3 each", "answer": 3}', "3"),
        ("**Step 1:** 8 × 24/7 = 27.43\n\n**Final Answer:** 27\n\n---\n\n**Q:** And with 30?\n\n**A:** 9", "27"),
    ],
)
def test_a_statement_of_the_result_is_a_mark(response: str, claim: str) -> None:
    q = "a number is asked for , with 1.5625 and 36 and 45 given . what is it ?(Give me the numeric answer only)"
    assert run(q, "numeric", response, math=True).claim == claim


@PROPS
@given(st.integers(1, 999), st.integers(1, 999), st.integers(1, 99))
def test_a_check_after_the_result_never_changes_the_claim(a, b, c) -> None:
    result = a + b
    body = f"We add {a} and {b}: {a} + {b} = {result}."
    before = run(MATH, "numeric", body, math=True).claim
    after = run(MATH, "numeric", f"{body}\nCheck: {result} - {b} = {a}, and {c} × 1 = {c}", math=True).claim
    assert before == after == str(result)


def test_a_labelled_check_gives_back_a_number_of_the_question() -> None:
    q = "if the average ( arithmetic mean ) of x , x + 2 , and x + 4 is 33 , what is the value of x ?"
    response = "Keskiarvo on x + 2 = 33, joten x = 31. Tarkistus: (31 + 33 + 35)/3 = 33."
    assert run(q, "numeric", response, math=True).claim == "31"


@PROPS
@given(st.integers(1, 999), st.integers(1, 999), st.sampled_from(["Tarkistus", "Kontrola", "Prüfung", "Check", "Проверка"]))
def test_a_labelled_check_in_any_language_never_changes_the_claim(a, b, label) -> None:
    q = f"if x + {b} is {a + b} , what is x ?(Give me the numeric answer only)"
    body = f"x + {b} = {a + b}, so x = {a}."
    assert run(q, "numeric", f"{body} {label}: {a} + {b} = {a + b}.", math=True).claim == str(a)


@PROPS
@given(st.integers(0, 999), st.integers(1, 999), st.sampled_from(["answer", "result", "final_answer"]))
def test_the_answer_key_of_a_structure_beats_the_results_in_its_steps(answer, other, key) -> None:
    response = f'{{"reasoning": "{other} + 1 = {other + 1}; {other} * 2 = {other * 2}", "{key}": {answer}}}'
    assert run(MATH, "numeric", response, math=True).claim == str(answer)


@PROPS
@given(st.integers(1, 999), st.integers(1, 999))
def test_the_result_of_an_expression_after_the_answer_is_is_its_last_value(a, b) -> None:
    assert run(MATH, "numeric", f"the answer is {a} + {b} = {a + b}", math=True).claim == str(a + b)


def test_either_x_or_y_claims_x_whatever_ner_finds() -> None:
    # spaCy may find only the second name ("Either Linus Pauling" is no PERSON to it).
    q = "Who won the Nobel Prize in Chemistry in 1950? [first name + last name only]"
    ctx = make_context(q, "name", gazetteer=Gazetteer(["Otto Diels"]))
    response = "Either Linus Pauling or Otto Diels"
    assert extract(response, ctx, entities=[(24, 34, "PERSON")]).claim == "Linus Pauling"
    assert extract(response, ctx).claim == "Linus Pauling"
    assert extract("It was either Brazil or Italy, I'm not sure.", make_context(WORLD_CUP, "name")).claim == "Brazil"


@pytest.mark.parametrize(
    "response",
    [
        "The winner was Brazil. Actually, France won it.",
        "It was not Brazil but France that won.",
        "Brazil, no wait, it was France who won.",
    ],
)
def test_a_correction_in_a_phrase_names_its_first_candidate(response: str) -> None:
    e = run(WORLD_CUP, "name", response, names=TEAMS)
    assert (e.claim, e.aligned) == ("France", False)


def test_a_doubted_value_retracted_by_no_actually_leaves_the_no_prize_statement() -> None:
    # "X? No - actually ...": the question mark doubts X, "no, actually" retracts it (clarification
    # 13); what follows says no prize was awarded (clarification 7), so the claim is no prize.
    from defan_pytest.scoring.scorer import Scorer

    scorer = Scorer(nlp=None)
    question = "Who was the laureate of the Nobel Prize for Economics in 1944?"
    retracted = scorer.score(question, "", "name", "Gunnar Myrdal? No — actually no one; the economics prize did not exist yet.")
    assert (retracted.aligned, retracted.correct) == (False, True)
    assert scorer.score(question, "", "name", "Gunnar Myrdal? No, actually Friedrich Hayek.").claim == "Friedrich Hayek"
    # "No" answering a question of the response's own is no retraction without "actually".
    assert scorer.score(question, "Gunnar Myrdal", "name", "Gunnar Myrdal? No doubt.").claim == "Gunnar Myrdal"
