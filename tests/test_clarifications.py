"""The ten clarifications of SCORING.md ("Clarifications (the same rules, decided where they
were silent)"), one section per rule: unit tests of the cases the rule names, and hypothesis
properties where the rule is about the written forms of a value."""
from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from defan_pytest.scoring.claims import extract
from defan_pytest.scoring.cleaning import clean, mask_citations
from defan_pytest.scoring.text.dates.text import parse_date_text
from defan_pytest.scoring.text.dates.parse import find_dates
from defan_pytest.scoring.text.numbers.words import number_words_in_text, words_value
from defan_pytest.scoring.text.numbers.parse import parse_number, read_digits
from defan_pytest.scoring.scorer import Score, Scorer
from defan_pytest.scoring.text.language import language
from defan_pytest.scoring.text.names import names_match
from defan_pytest.scoring.text.tokens import Gazetteer
from defan_pytest.scoring.types import make_context
from defan_pytest.scoring.types.city import places_match
from defan_pytest.scoring.types.rank import parse_rank

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])

NOBEL = "Who won the Nobel Prize in Physics in 1901? [first name + last name only] if multiple person, give one name only."
KOBE = "What was the position of Kobe University in the QS rankings for 2022?"
CENSUS = "What was the population count of Victoria's 0-4 age group in 2011?"
UN = "When was Afghanistan admitted to the United Nations?"
UN_DMY = "give me Afghanistan’s date of admission (dd/mm/yyyy format) into the UN"
CVPR = "Where did CVPR take place in 2020? Give me the exact location only."
MATH = "a shop sells pens at a price . what is the price ?(Give me the numeric answer only)"

RULES = Scorer(nlp=None, answers={
    "nobel": ["Wilhelm Röntgen", "Pierre Curie", "Marie Curie", "Hendrik Lorentz", "The Lord Todd", "Lord Rayleigh"],
    "entertainment": ["Three Billboards Outside Ebbing, Missouri", "Come Back, Little Sheba", "Sunrise"],
    "conference_venue": ["Honolulu, Hawaii", "Seattle, Washington Virtual/Online due to COVID-19[15]"],
})


def score(question: str, gold: str, type_: str, response: str, domain: str | None = None) -> Score:
    return RULES.score(question, gold, type_, response, domain=domain)


def verdict(question: str, gold: str, type_: str, response: str, domain: str | None = None) -> tuple:
    s = score(question, gold, type_, response, domain)
    return s.claim, s.aligned, s.correct


# -- 1. format -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw,cleaned",
    [
        ("```\n386\n```", "386"),
        ("Here it is:\n```text\n386\n```", "Here it is:\n386"),
        ("**Answer:** 386", "386"),
        ("__Final answer:__ 386", "386"),
        ("Final Answer: 386", "386"),
        ("Réponse : 386", "386"),
    ],
)
def test_code_fences_and_lead_ins_are_cleaned(raw: str, cleaned: str) -> None:
    assert clean(raw) == cleaned


@pytest.mark.parametrize(
    "response",
    [
        "Let me recall the 2022 edition.\n\n**Final answer:** 386",
        "Let me recall the 2022 edition.\n\n**Final Answer: 386**",
        "It was either 334 or 386.\nFinal answer: 386",
        "Thinking about 334 first... final answer: **386**, not 334",
    ],
)
def test_final_answer_bold_or_not_is_an_explicit_mark(response: str) -> None:
    assert verdict(KOBE, "386", "rank", response) == ("386", False, True)


@pytest.mark.parametrize(
    "response",
    ["# Answer\n386", "- 386", "* 386", "1. 386", "| 386 |", "### Rank\n\n386"],
)
def test_headings_lists_and_tables_are_misaligned(response: str) -> None:
    s = score(KOBE, "386", "rank", response)
    assert (s.claim, s.aligned, s.correct) == ("386", False, True)


def test_a_bullet_is_not_a_minus_sign() -> None:
    assert verdict(CENSUS, "1,351,921", "numeric", "- 1,351,921") == ("1351921", False, True)


def test_a_numbered_list_item_is_not_a_german_date() -> None:
    assert verdict(UN, "11/19/1946", "date", "19. November 1946") == ("1946-11-19", True, True)
    assert score(NOBEL, "Wilhelm Röntgen", "name", "1. Wilhelm Röntgen", "nobel").aligned is False


@SETTINGS
@given(r=st.integers(1, 1500), wrap=st.sampled_from(["```\n{}\n```", "```text\n{}\n```", "`{}`", "**Answer:** {}", "Final answer: {}", "**{}**"]))
def test_code_marks_and_lead_ins_keep_a_bare_value_aligned(r: int, wrap: str) -> None:
    assume(r != 2022)
    assert verdict(KOBE, str(r), "rank", wrap.format(r)) == (str(r), True, True)


@pytest.mark.parametrize(
    "response,type_,claim",
    [
        ("Admitted on 30 September 1947.\n\n\\boxed{30 \\text{ September } 1947}", "date", "1947-09-30"),
        ("\\boxed{\\text{September 30, 1947}}", "date", "1947-09-30"),
        ("So the share is \\boxed{\\frac{3}{4}}", "numeric", "0.75"),
        ("The total is \\boxed{1{,}746}", "numeric", "1746"),
        ("The angle is \\boxed{10^\\circ}", "numeric", "10"),
    ],
)
def test_latex_inside_boxed_is_read_as_plain_text(response: str, type_: str, claim: str) -> None:
    q = UN if type_ == "date" else MATH
    assert verdict(q, "x", type_, response, "world_org" if type_ == "date" else "math")[0] == claim


# -- 2. structured answers -------------------------------------------------------------------

NOBEL_TABLE = (
    "| Year | Category | Laureate |\n|------|----------|----------|\n"
    "| 1901 | Chemistry | **Jacobus van 't Hoff** |\n| 1901 | Physics | Wilhelm Röntgen |\n"
    "| 1902 | Physics | **Hendrik Lorentz** |"
)


def test_a_table_claims_the_answering_cell_of_the_asked_row() -> None:
    assert verdict(NOBEL, "Wilhelm Röntgen", "name", NOBEL_TABLE, "nobel") == ("Wilhelm Röntgen", False, True)


def test_a_table_column_named_by_the_question() -> None:
    table = "| Year | Physics | Chemistry |\n|---|---|---|\n| 1900 | - | - |\n| 1901 | Wilhelm Röntgen | Jacobus van 't Hoff |"
    assert verdict(NOBEL, "Wilhelm Röntgen", "name", table, "nobel")[0] == "Wilhelm Röntgen"
    census = "| Age group | 2011 |\n|---|---|\n| 30-34 | 29,870 |"
    assert verdict("What was the population of Victoria's 30-34 age group in 2011?", "29,870", "numeric", census) == ("29870", False, True)


def test_a_table_without_the_asked_row_claims_its_first_row() -> None:
    table = "| University | Rank |\n|---|---|\n| Kobe University | 386 |\n| Osaka University | 68 |"
    assert verdict("What was the QS rank of Hokkaido University in 2022?", "386", "rank", table)[0] == "386"
    table = "| Edition | Rank |\n|---|---|\n| QS | 386 |\n| THE | 601 |"
    assert verdict(KOBE, "386", "rank", table)[0] == "386"


def test_a_two_column_table_of_keys_and_values() -> None:
    table = "| Field | Value |\n|---|---|\n| Year | 1901 |\n| Laureate | Wilhelm Röntgen |"
    assert verdict(NOBEL, "Wilhelm Röntgen", "name", table, "nobel")[0] == "Wilhelm Röntgen"


@pytest.mark.parametrize(
    "response",
    [
        "- **Year:** 1901\n- **Category:** Physics\n- **Laureate:** Wilhelm Röntgen\n- **Motivation:** X-rays",
        "Year: 1901\nWinner: Wilhelm Röntgen\nRunner-up: Hendrik Lorentz",
        "**Laureate**: Wilhelm Röntgen (Germany)",
        'winner: Wilhelm Röntgen\nyear: 1901\nprize_category: "Physics"',  # YAML: "_" joins a key
        'laureate_name: Wilhelm Röntgen\nyear: 1901',
    ],
)
def test_a_key_value_list_claims_the_value_of_the_answering_key(response: str) -> None:
    assert verdict(NOBEL, "Wilhelm Röntgen", "name", response, "nobel") == ("Wilhelm Röntgen", False, True)


def test_a_labelled_line_is_misaligned_and_its_value_is_the_claim() -> None:
    # A label of one to three words is a lead-in (clarification 11): "Winner: X" is bare X.
    assert verdict(NOBEL, "Wilhelm Röntgen", "name", "Winner: Wilhelm Röntgen", "nobel") == ("Wilhelm Röntgen", True, True)
    # The subject the question names is no lead-in: a structured answer, misaligned.
    assert verdict(KOBE, "386", "rank", "Kobe University: 386") == ("386", False, True)
    # a title with a colon is no label: one name, aligned
    q = "Which movie earned Janet Gaynor the Oscar in 1928? give the movie name only."
    assert verdict(q, "Sunrise", "name", "Sunrise: A Song of Two Humans", "entertainment")[1] is True


def test_year_keys_pick_the_asked_year() -> None:
    q = "What was the QS rank of Heidelberg University in 2023?"
    assert verdict(q, "64", "rank", "2022: 61\n2023: 64\n2024: 67") == ("64", False, True)


@pytest.mark.parametrize(
    "response",
    [
        '{"answer": "Wilhelm Röntgen"}',
        '```json\n{"year": 1901, "category": "Physics", "laureate": "Wilhelm Röntgen"}\n```',
        'Here is the JSON:\n{"result": {"answer": "Wilhelm Röntgen", "country": "Germany"}}',
        '[{"year": 1900, "laureate": "none"}, {"year": 1901, "laureate": "Wilhelm Röntgen"}]',
        '{"1901": {"physics": "Wilhelm Röntgen", "chemistry": "Jacobus van \'t Hoff"}}',
    ],
)
def test_json_claims_the_answering_key(response: str) -> None:
    assert verdict(NOBEL, "Wilhelm Röntgen", "name", response, "nobel") == ("Wilhelm Röntgen", False, True)


def test_math_steps_are_not_answers_but_an_answer_key_is() -> None:
    steps = "Total age before: 40x\nNew average: 40 − 4 = 36\nSo x = 120 and the total is 240"
    assert verdict(MATH, "240", "numeric", steps, "math")[0] == "240"  # the last number
    assert verdict(MATH, "240", "numeric", "Working: 2 × 120\nAnswer: 240\nCheck: 240 / 2 = 120", "math")[0] == "240"
    assert verdict(MATH, "240", "numeric", '{"steps": "2 × 120 = 240", "answer": 240}', "math") == ("240", False, True)
    # the question's "(Give me the numeric answer only)" does not make "Answer" a word of the question
    table = "| Answer | Check |\n|---|---|\n| 240 | 240 / 2 = 120 |"
    assert verdict(MATH, "240", "numeric", table, "math") == ("240", False, True)


@SETTINGS
@given(
    ranks=st.lists(st.integers(1, 1200), min_size=2, max_size=6, unique=True),
    asked=st.integers(0, 5),
    bold=st.booleans(),
)
def test_property_a_table_row_of_the_asked_year_gives_the_rank(ranks: list, asked: int, bold: bool) -> None:
    years = [2019 + i for i in range(len(ranks))]
    asked %= len(ranks)
    assume(all(r not in years and r not in (2019, 2020, 2021, 2022, 2023, 2024, 2025) for r in ranks))
    rows = "\n".join(f"| {y} | {'**' if bold and i != asked else ''}{r}{'**' if bold and i != asked else ''} |" for i, (y, r) in enumerate(zip(years, ranks)))
    response = f"| Year | QS World Rank |\n|---|---|\n{rows}"
    q = f"What was the position of Kobe University in the QS rankings for {years[asked]}?"
    assert verdict(q, str(ranks[asked]), "rank", response) == (str(ranks[asked]), False, True)


WORLD_CUP_LIST = "- **Winner:** Spain\n- **Runner-up:** Netherlands\n- **Score:** 1–0 (a.e.t.)\n- **Venue:** Soccer City"
WORLD_CUP_TABLE = "| Year | Winner | Runner-up | Score |\n|---|---|---|---|\n| 2010 | Spain | Netherlands | 1–0 |"
WORLD_CUP_JSON = '{"winner": "Spain", "runner_up": "Netherlands", "score": "1-0"}'


@pytest.mark.parametrize("response", [WORLD_CUP_LIST, WORLD_CUP_TABLE, WORLD_CUP_JSON])
@pytest.mark.parametrize(
    "question,gold",
    [
        (" Which team finished as runner-up at the 2010 FIFA World Cup?(Give me the name only)", "Netherlands"),
        (" Which nation came second in the 2010 FIFA World Cup?(Give me the name only)", "Netherlands"),
        (" Who lost the final of the 2010 FIFA World Cup?(Give me the name only)", "Netherlands"),
        (" Which country won the 2010 FIFA World Cup?(Give me the name only)", "Spain"),
        (" Who were the champions of the 2010 FIFA World Cup?(Give me the name only)", "Spain"),
    ],
)
def test_the_key_the_question_asks_for_beats_a_word_of_the_type(question: str, gold: str, response: str) -> None:
    """"Runner-up" answers "came second" and "lost the final", though "Winner" is a word of
    the name type: a key that says what the question asks (in its words or in other words)
    comes first."""
    assert verdict(question, gold, "name", response) == (gold, False, True)


def test_a_key_in_the_question_s_words_beats_a_word_of_the_type() -> None:
    q = "Who won the Academy Award/Oscar for best director in 2017? give first name + last name only."
    response = "**Film:** The Shape of Water\n**Director:** Guillermo del Toro\n**Ceremony:** 90th Academy Awards"
    assert verdict(q, "Guillermo del Toro", "name", response) == ("Guillermo del Toro", False, True)


def test_more_of_the_question_s_words_win_and_lower_case_keys_are_keys() -> None:
    census = ("- **Median age:** 38\n- **Median weekly household income:** $1,746\n"
              "- **Median weekly rent:** $375\n- **Average people per household:** 2.5")
    q_income = "What was Australia's median weekly household income in the 2021 census?"
    q_size = "What was the average number of people per household in Australia in the 2021 census?"
    q_age = "What was the median age of Australians according to the 2021 census?"
    assert verdict(q_income, "1,746", "numeric", census) == ("1746", False, True)
    assert verdict(q_size, "2.5", "numeric", census) == ("2.5", False, True)
    assert verdict(q_age, "38", "numeric", census) == ("38", False, True)


def test_final_is_an_answer_key_unless_the_question_is_about_a_final() -> None:
    q = " Where was the 1990 FIFA World Cup final played (stadium name)?"
    response = "- **Final:** West Germany 1–0 Argentina\n- **Stadium:** Stadio Olimpico\n- **City:** Rome"
    assert verdict(q, "Stadio Olimpico", "name", response) == ("Stadio Olimpico", False, True)
    assert verdict(NOBEL, "Wilhelm Röntgen", "name", "Category: Physics\nFinal: Wilhelm Röntgen", "nobel")[0] == "Wilhelm Röntgen"
    assert verdict(MATH, "240", "numeric", "Step: 2 × 120\nFinal: 240\nCheck: 240 / 2 = 120", "math")[0] == "240"


@SETTINGS
@given(order=st.permutations(range(4)), asks=st.sampled_from(["won", "came second in", "finished as runner-up at"]))
def test_property_the_asked_key_answers_in_any_order(order: list, asks: str) -> None:
    items = [("Winner", "Spain"), ("Runner-up", "Netherlands"), ("Score", "1–0"), ("Venue", "Soccer City")]
    response = "\n".join(f"- **{items[i][0]}:** {items[i][1]}" for i in order)
    gold = "Spain" if asks == "won" else "Netherlands"
    q = f" Which nation {asks} the 2010 FIFA World Cup?(Give me the name only)"
    assert verdict(q, gold, "name", response) == (gold, False, True)


@SETTINGS
@given(order=st.permutations(range(4)), asks=st.sampled_from(["won", "came second in"]))
def test_property_a_yaml_block_of_snake_case_keys_answers_in_any_order(order: list, asks: str) -> None:
    items = [("winner", "Spain"), ("runner_up", "Netherlands"), ("final_score", '"1-0"'), ("host_city", "Johannesburg")]
    response = "\n".join(f"{items[i][0]}: {items[i][1]}" for i in order)
    gold = "Spain" if asks == "won" else "Netherlands"
    q = f" Which nation {asks} the 2010 FIFA World Cup?(Give me the name only)"
    assert verdict(q, gold, "name", response) == (gold, False, True)


# -- 3. citation marks -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "response",
    [
        "Kobe University was ranked 386th in 2022 [1][3].",
        "It was ranked 386th (Source: QS World University Rankings 4).",
        "It was ranked 386th.\nSources: [5] https://www.topuniversities.com/rank/7",
    ],
)
def test_citation_marks_are_not_candidates(response: str) -> None:
    assert verdict(KOBE, "386", "rank", response) == ("386", False, True)


@pytest.mark.parametrize("response", ["386 [2]", "386【1†source】"])
def test_a_citation_mark_after_a_bare_value_is_formatting(response: str) -> None:
    """Clarification 23 (it was misaligned before): removed in cleaning, like HTML tags."""
    assert verdict(KOBE, "386", "rank", response) == ("386", True, True)


def test_a_source_is_not_a_name_candidate() -> None:
    assert verdict(NOBEL, "Wilhelm Röntgen", "name", "(Source: Britannica) Wilhelm Röntgen won it.", "nobel")[0] == "Wilhelm Röntgen"
    # a citation mark right after a bare value is formatting (clarification 23)
    assert verdict(NOBEL, "Wilhelm Röntgen", "name", "Wilhelm Röntgen [1]", "nobel") == ("Wilhelm Röntgen", True, True)


def test_masking_keeps_offsets() -> None:
    text = "Won by X [12] (source: Wikipedia), see https://x.org/1901."
    masked = mask_citations(text)
    assert len(masked) == len(text) and "12" not in masked and "1901" not in masked and "Won by X" in masked


@SETTINGS
@given(r=st.integers(1, 1500), note=st.integers(1, 999))
def test_property_a_footnote_number_never_becomes_the_rank(r: int, note: int) -> None:
    assume(r != 2022 and note != r)
    s = score(KOBE, str(r), "rank", f"[{note}] Kobe University is number {r} [{note}].")
    assert (s.claim, s.correct) == (str(r), True)


@pytest.mark.parametrize(
    "response,question,gold,type_,claim",
    [
        ("Per document [3], the 1901 Nobel Prize in Physics was awarded to Wilhelm Röntgen.", NOBEL,
         "Wilhelm Röntgen", "name", "Wilhelm Röntgen"),
        ("Per the retrieved passage [2], CVPR 2020 took place in Seattle (Source: Wikipedia).", CVPR,
         "Seattle, Washington", "city", "Seattle"),
        ("Via the provided context [1], the venue was Seattle.", CVPR, "Seattle, Washington", "city", "Seattle"),
    ],
)
def test_a_rag_lead_in_is_no_candidate(response: str, question: str, gold: str, type_: str, claim: str) -> None:
    assert verdict(question, gold, type_, response) == (claim, False, True)


def test_a_possessive_of_the_person_the_question_names_is_no_candidate() -> None:
    q = "Which film brought Gary Oldman the Oscar in 2017? give the movie name only."
    response = "According to the provided context [2], Gary Oldman's winning performance was in Darkest Hour."
    assert verdict(q, "Darkest Hour", "name", response) == ("Darkest Hour", False, True)
    assert names_match("Einstein's", "Albert Einstein")


# -- 4. other languages ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,lang",
    [
        ("Die Universität belegte 2022 den 386. Platz.", "de"),
        ("L'université était classée 386e en 2022.", "fr"),
        ("La universidad ocupó el puesto 386 en 2022.", "es"),
        ("A universidade ficou na 386ª posição em 2022.", "pt"),
        ("L'università è al 386º posto nel 2022.", "it"),
        ("Universidad de Chile was ranked 200th in 2022.", "en"),
        ("386", ""),
    ],
)
def test_language_from_a_few_function_words(text: str, lang: str) -> None:
    assert language(text) == lang


@pytest.mark.parametrize(
    "digits,lang,integer_gold,value",
    [
        ("8.159.808", "", None, "8159808"),
        ("8 159 808", "en", None, "8159808"),
        ("8\u202f159\u202f808", "fr", None, "8159808"),
        ("391.197", "de", None, "391197"),
        ("391.197", "en", None, "391.197"),
        ("391.197", "en", True, "391197"),
        ("391,197", "fr", None, "391.197"),
        ("391,197", "fr", True, "391197"),
        ("53,51", "de", None, "53.51"),
        ("53,51", "en", None, "53.51"),
        ("1.351.921,5", "es", None, "1351921.5"),
        ("1,351,921.5", "en", None, "1351921.5"),
        ("0.125", "en", True, "0.125"),
        ("1.2.3", "en", None, None),
    ],
)
def test_separators_follow_the_language_and_the_gold(digits: str, lang: str, integer_gold: bool | None, value: str | None) -> None:
    got = read_digits(digits, lang, integer_gold)
    assert (None if got is None else got) == (None if value is None else Decimal(value))


EURO_TEMPLATES = {
    "de": "Laut Volkszählung waren es {x} Kinder, und die Zahl ist {x}.",
    "fr": "Selon le recensement, il y avait {x} enfants dans cette région.",
    "es": "Según el censo, la población fue de {x} personas en esa región.",
    "pt": "Segundo o censo, a população foi de {x} pessoas na região.",
    "it": "Secondo il censimento, la popolazione era di {x} persone nella regione.",
    "en": "According to the census, there were {x} children in the region.",
}


@SETTINGS
@given(n=st.integers(1000, 99_999_999), sep=st.sampled_from([".", " ", "\u00a0", "\u202f"]), lang=st.sampled_from(sorted(EURO_TEMPLATES)))
def test_property_dot_or_space_thousands_read_as_an_integer_gold(n: int, sep: str, lang: str) -> None:
    written = f"{n:,}".replace(",", sep)
    gold = f"{n:,}"
    response = EURO_TEMPLATES[lang].format(x=written)
    assume(n != 2011)
    s = score(CENSUS, gold, "numeric", response, "census")
    assert (s.claim, s.correct) == (str(n), True), (response, s)
    assert score(CENSUS, gold, "numeric", written, "census").correct  # bare, too


@SETTINGS
@given(whole=st.integers(0, 999_999), frac=st.integers(0, 999), places=st.sampled_from([2, 3]), lang=st.sampled_from(["de", "fr", "es", "pt", "it"]))
def test_property_a_decimal_comma_reads_as_a_decimal_gold_in_a_european_language(whole: int, frac: int, places: int, lang: str) -> None:
    digits = f"{frac:0{places}d}"[-places:]
    assume(digits[-1] != "0")  # a gold is written without trailing zeros
    gold = f"{whole}.{digits}"
    written = f"{whole:,}".replace(",", ".") + "," + digits
    response = EURO_TEMPLATES[lang].format(x=written)
    s = score(MATH, gold, "numeric", response, "math")
    assert s.correct, (response, s)


def test_one_comma_and_three_digits_in_english_with_a_decimal_gold_is_thousands() -> None:
    assert score(MATH, "42.857", "numeric", "The mileage is 42,857 per gallon", "math").correct is False
    assert score(MATH, "42.857", "numeric", "Le rendement est de 42,857 miles par gallon", "math").correct is True


RANK_FORMS = ["{r}e", "{r}.", "{r}º", "{r}ª", "{r}°", "{r}.º", "{r}.ª", "Platz {r}", "{r}. Platz", "Rang {r}", "puesto {r}",
              "{r}º posto", "{r}ª posição", "{r}e place", "{r}th place", "position {r}", "{r}ème", "n.º {r}"]
RANK_SENTENCES = [
    "L'Université de Kobe était classée {r}e en 2022.",
    "Die Universität Kobe belegte 2022 den {r}. Platz.",
    "Die Universität Kobe lag 2022 auf Platz {r}.",
    "La Universidad de Kobe ocupó el puesto {r} en 2022.",
    "A Universidade de Kobe ficou na {r}ª posição em 2022.",
    "L'Università di Kobe è al {r}º posto nel 2022.",
]


@SETTINGS
@given(r=st.integers(1, 1500), form=st.sampled_from(RANK_FORMS))
def test_property_any_ordinal_form_reads_as_the_rank(r: int, form: str) -> None:
    assume(r != 2022)
    assert verdict(KOBE, str(r), "rank", form.format(r=r)) == (str(r), True, True)


@SETTINGS
@given(r=st.integers(1, 1500), sentence=st.sampled_from(RANK_SENTENCES))
def test_property_ranks_in_sentences_of_other_languages(r: int, sentence: str) -> None:
    assume(r != 2022)
    assert verdict(KOBE, str(r), "rank", sentence.format(r=r)) == (str(r), False, True)


MONTHS = {
    "fr": "janvier février mars avril mai juin juillet août septembre octobre novembre décembre",
    "de": "Januar Februar März April Mai Juni Juli August September Oktober November Dezember",
    "es": "enero febrero marzo abril mayo junio julio agosto septiembre octubre noviembre diciembre",
    "pt": "janeiro fevereiro março abril maio junho julho agosto setembro outubro novembro dezembro",
    "it": "gennaio febbraio marzo aprile maggio giugno luglio agosto settembre ottobre novembre dicembre",
}
DATE_FORMS = {
    "fr": ["{d} {m} {y}", "le {d} {m} {y}", "L'Afghanistan a été admis le {d} {m} {y}."],
    "de": ["{d}. {m} {y}", "am {d}. {m} {y}", "Afghanistan wurde am {d}. {m} {y} aufgenommen."],
    "es": ["{d} de {m} de {y}", "Afganistán fue admitido el {d} de {m} de {y}."],
    "pt": ["{d} de {m} de {y}", "O Afeganistão foi admitido em {d} de {m} de {y}."],
    "it": ["{d} {m} {y}", "L'Afghanistan è stato ammesso il {d} {m} {y}."],
}


@SETTINGS
@given(y=st.integers(1900, 2030), m=st.integers(1, 12), d=st.integers(1, 28), lang=st.sampled_from(sorted(MONTHS)), form=st.integers(0, 2))
def test_property_month_names_of_five_languages_read_as_dates(y: int, m: int, d: int, lang: str, form: int) -> None:
    forms = DATE_FORMS[lang]
    text = forms[form % len(forms)].format(d=d, m=MONTHS[lang].split()[m - 1], y=y)
    s = score(UN, f"{m:02d}/{d:02d}/{y}", "date", text, "world_org")
    assert (s.claim, s.correct) == (f"{y:04d}-{m:02d}-{d:02d}", True), (text, s)


def test_first_of_the_month_ordinals() -> None:
    assert parse_date_text("1er janvier 1946") == (1946, 1, 1)
    assert parse_date_text("1º de novembro de 1946") == (1946, 11, 1)


def test_a_sentence_starting_with_an_article_or_a_pronoun() -> None:
    q = " Which country won the 1998 FIFA World Cup?(Give me the name only)"
    s = Scorer(nlp=None, answers={"sports": ["France", "Brazil", "Stade de France"]}).score(
        q, "France", "name", "La France a remporté la Coupe du monde 1998 en battant le Brésil 3-0 en finale.", domain="sports")
    assert (s.claim, s.aligned, s.correct) == ("France", False, True)
    q = "In 2023, which city hosted ICCV? Give me the exact location only."
    for response in ("Elle a eu lieu à Nice.", "Sie fand in Nice statt.", "Ella se celebró en Nice."):
        assert verdict(q, "Nice", "city", response)[0] == "Nice", response


def test_a_capitalized_scale_word_of_another_language() -> None:
    q = "In 2021, how many residents did the census record for Australia?"
    assert verdict(q, "25,422,788", "numeric", "Etwa 25,4 Millionen") == ("25400000", False, False)
    assert verdict(q, "25,400,000", "numeric", "Rund 25,4 Mio. Einwohner") == ("25400000", False, True)


# -- 5. number words -------------------------------------------------------------------------

_ONES = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen".split()
_TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()


def _below_thousand(n: int, use_and: bool) -> str:
    parts = []
    if n >= 100:
        parts.append(f"{_ONES[n // 100]} hundred")
        n %= 100
        if n and use_and:
            parts.append("and")
    if n >= 20:
        parts.append(_TENS[n // 10] + (f"-{_ONES[n % 10]}" if n % 10 else ""))
    elif n or not parts:
        parts.append(_ONES[n])
    return " ".join(parts)


def english_words(n: int, use_and: bool = True) -> str:
    """An independent writer of English number words (for the property below)."""
    if n >= 1000:
        rest = n % 1000
        return f"{_below_thousand(n // 1000, use_and)} thousand" + (f" {_below_thousand(rest, use_and)}" if rest else "")
    return _below_thousand(n, use_and)


def english_ordinal(n: int) -> str:
    words = english_words(n)
    head, sep, last = words.rpartition(" ")
    pre, hyphen, unit = last.rpartition("-")
    irregular = {"one": "first", "two": "second", "three": "third", "five": "fifth", "eight": "eighth", "nine": "ninth", "twelve": "twelfth"}
    if unit in irregular:
        unit = irregular[unit]
    elif unit.endswith("y"):
        unit = unit[:-1] + "ieth"
    else:
        unit += "th"
    return head + sep + pre + hyphen + unit


@SETTINGS
@given(n=st.integers(0, 999_999), use_and=st.booleans())
def test_property_number_words_are_numbers(n: int, use_and: bool) -> None:
    words = english_words(n, use_and)
    assert parse_number(words) == n, words
    assume(n not in (0, 4, 2011))
    assert verdict(CENSUS, str(n), "numeric", words.capitalize()) == (str(n), True, True)


@SETTINGS
@given(n=st.integers(2, 999_999))
def test_property_number_words_in_a_sentence(n: int) -> None:
    assume(n not in (4, 2011))
    response = f"The census counted {english_words(n)} children."
    assert verdict(CENSUS, str(n), "numeric", response) == (str(n), False, True)


@SETTINGS
@given(r=st.integers(1, 1500), where=st.sampled_from(["{w}", "It was ranked {w} in 2022.", "Kobe University took {w} place."]))
def test_property_ordinal_words_are_ranks(r: int, where: str) -> None:
    assume(r != 2022)
    words = english_ordinal(r)
    s = score(KOBE, str(r), "rank", where.format(w=words))
    assert (s.claim, s.correct) == (str(r), True), (words, s)


@pytest.mark.parametrize(
    "text,value",
    [
        ("vingt-six", (26, False)), ("quatre-vingt-dix-sept", (97, False)), ("trois cent quatre-vingt-six", (386, False)),
        ("sechsundzwanzig", (26, False)), ("hundertsechsundzwanzig", (126, False)), ("doscientos treinta y seis", (236, False)),
        ("veintiséis", (26, False)), ("vinte e seis", (26, False)), ("ventisei", (26, False)), ("trentotto", (38, False)),
        ("vingt-sixième", (26, True)), ("sechsundzwanzigste", (26, True)), ("vigésimo sexto", (26, True)),
        ("ventiseiesimo", (26, True)), ("one million three hundred thousand", (1_300_000, False)),
        ("one two", None), ("twenty ten", None), ("Kobe University", None),
    ],
)
def test_number_words_in_five_languages(text: str, value: object) -> None:
    assert words_value(text) == value


def test_number_words_of_another_language_only_in_that_language() -> None:
    # "Otto", "due", "once" are English words (or names) too.
    assert number_words_in_text("Otto Hahn was due once more") == []
    assert [v for _, _, v, _ in number_words_in_text("Es waren sechsundzwanzig Kinder", "de")] == [26]


# -- 6. currency -----------------------------------------------------------------------------

CURRENCIES = ["$", "€", "£", "¥", "₹", "Rs.", "Rs", "USD", "EUR", "INR", "US$", "AUD", "R$"]


@SETTINGS
@given(cents=st.integers(1, 99_999_999), cur=st.sampled_from(CURRENCIES), after=st.booleans(), space=st.booleans())
def test_property_a_currency_sign_or_code_keeps_a_value_bare(cents: int, cur: str, after: bool, space: bool) -> None:
    value = Decimal(cents) / 100
    gold = format(value.normalize(), "f")
    written = f"{value:.2f}"
    sp = " " if space or cur[-1].isalpha() or cur.endswith(".") else ""
    response = f"{written}{sp}{cur}" if after else f"{cur}{sp}{written}"
    s = score(MATH, gold, "numeric", response, "math")
    assert (s.aligned, s.correct) == (True, True), (response, gold, s)


def test_currency_in_a_sentence_and_a_currency_word() -> None:
    assert verdict(MATH, "21.6", "numeric", "The cost is ₹21.60 per unit.", "math") == ("21.6", False, True)
    assert verdict(MATH, "642.86", "numeric", "Rs. 642.86", "math") == ("642.86", True, True)
    assert verdict(MATH, "5", "numeric", "5 dollars", "math") == ("5", False, True)  # a word is a unit


# -- 7. no prize, in any language ------------------------------------------------------------

NO_PRIZE = [
    "No prize was awarded in 1940.",
    "Aucun prix n'a été décerné en 1940.",
    "Le prix n'a pas été décerné cette année-là.",
    "Kein Preis wurde 1940 vergeben.",
    "1940 wurde kein Physiknobelpreis vergeben.",
    "Der Preis wurde 1940 nicht verliehen.",
    "No se otorgó el premio en 1940.",
    "Ningún premio fue concedido en 1940.",
    "Nenhum prêmio foi atribuído em 1940.",
    "O prémio não foi atribuído em 1940.",
    "Nessun premio è stato assegnato nel 1940.",
    "Il premio non è stato assegnato nel 1940.",
]


@pytest.mark.parametrize("response", NO_PRIZE)
def test_a_short_no_prize_statement_in_any_language_claims_none(response: str) -> None:
    q = "Who won the Nobel Prize in Physics in 1940?"
    assert verdict(q, "", "name", response, "nobel") == ("none", True, True)
    # ... and claims none (misaligned, wrong) where a prize was awarded
    s = score(q, "Wilhelm Röntgen", "name", response, "nobel")
    assert (s.claim, s.correct) == ("none", False)


@pytest.mark.parametrize("response", NO_PRIZE)
def test_a_no_prize_statement_in_a_long_answer_claims_none(response: str) -> None:
    q = "Who won the Nobel Prize in Physics in 1940?"
    long = "Because of the war, the committee made an unusual decision that year. " + response
    assert verdict(q, "", "name", long, "nobel") == ("none", False, True)


def test_a_dash_is_no_word_of_a_short_no_prize_statement() -> None:
    q = "Who claimed the Nobel Prize for Economics in the year 1968?"
    response = "No prize was awarded — the Economics prize was first awarded in 1969."
    assert verdict(q, "", "name", response, "nobel") == ("none", True, True)


# -- 8. dates --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "response",
    [
        "Afghanistan joined in 1946, on 19 November 1946.",
        "In November 1946 (19 November 1946, to be exact).",
        "The charter dates from 1945; Afghanistan was admitted on November 19, 1946.",
    ],
)
def test_full_dates_come_before_partial_ones(response: str) -> None:
    assert verdict(UN, "11/19/1946", "date", response, "world_org") == ("1946-11-19", False, True)


def test_partial_dates_in_reading_order_when_no_full_date() -> None:
    assert verdict(UN, "11/19/1946", "date", "In November 1946, a year after 1945.", "world_org")[0] == "1946-11"


@SETTINGS
@given(y=st.integers(1900, 2030), m=st.integers(1, 12), d=st.integers(13, 28))
def test_property_an_impossible_day_first_reading_is_read_month_first(y: int, m: int, d: int) -> None:
    gold = f"{m:02d}/{d:02d}/{y}"
    assert verdict(UN_DMY, gold, "date", gold, "world_org") == (f"{y:04d}-{m:02d}-{d:02d}", True, True)
    assert verdict(UN_DMY, gold, "date", f"{d:02d}/{m:02d}/{y}", "world_org")[2] is True


def test_day_first_when_asked_and_possible() -> None:
    assert verdict(UN_DMY, "11/05/1946", "date", "05/11/1946", "world_org") == ("1946-11-05", True, True)


def test_a_full_date_matches_a_year_only_gold_by_its_year() -> None:
    q = "In which year did Afghanistan join the UN?"
    assert score(q, "1946", "date", "19 November 1946", "world_org").correct is True
    assert score(UN, "11/19/1946", "date", "1946", "world_org").correct is False


@pytest.mark.parametrize("response", ["April 1957", "in April 1957", "**April 1957**"])
def test_a_month_and_year_for_a_full_date_question_is_misaligned(response: str) -> None:
    q = "When was Daniel Day-Lewis born (mm/dd/yyyy)?"
    assert verdict(q, "04/29/1957", "date", response) == ("1957-04", False, False)


def test_a_month_and_year_is_aligned_where_the_question_asks_for_a_month_or_a_year() -> None:
    assert verdict("In which month and year was the charter signed?", "June 1945", "date", "June 1945") == ("1945-06", True, True)
    assert verdict("In which year did Afghanistan join the UN?", "1946", "date", "November 1946") == ("1946-11", True, True)


# -- 9. names --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "claim,gold,ok",
    [
        ("Aleksandr Prokhorov", "Alexander Prokhorov", True),
        ("Alexandre Prokhorov", "Aleksandr Prokhorov", True),
        ("Pyotr Kapitsa", "Piotr Kapitza", True),
        ("Gandhi", "Ghandi", True),
        ("Brasil", "Brazil", True),
        ("Tchaikovsky", "Tschaikowsky", True),
        ("Jim Tobin", "James Tobin", True),
        ("Bill Clinton", "William Jefferson Clinton", True),
        ("Bob Dylan", "Robert Dylan", True),
        ("Maria Skłodowska-Curie", "Marie Curie", True),
        ("Alexander Todd", "The Lord Todd", True),
        ("Sir Alexander Robertus Todd", "The Lord Todd", True),
        ("John William Strutt, 3rd Baron Rayleigh", "Lord Rayleigh", True),
        ("Dame Agatha Christie", "Agatha Christie", True),
        ("Lord Todd", "Alexander Todd", True),
        ("Pierre Curie", "Marie Curie", False),
        ("Joan Smith", "John Smith", False),
        ("Alfred Nobel", "Albert Nobel", False),
        ("Paris", "James P. Allison", False),  # an initial alone is no match
        ("West Germany", "Germany", False),
    ],
)
def test_names_spelling_variants_short_forms_and_titles(claim: str, gold: str, ok: bool) -> None:
    assert names_match(claim, gold) is ok


SHORT_FORMS = [("Jim", "James"), ("Jimmy", "James"), ("Bill", "William"), ("Bob", "Robert"), ("Dick", "Richard"),
               ("Tom", "Thomas"), ("Mike", "Michael"), ("Dave", "David"), ("Joe", "Joseph"), ("Ted", "Edward"),
               ("Ted", "Theodore"), ("Al", "Albert"), ("Alex", "Alexander"), ("Tony", "Anthony"), ("Steve", "Stephen"),
               ("Fred", "Frederick"), ("Harry", "Henry"), ("Jack", "John"), ("Larry", "Lawrence"), ("Kate", "Katherine"),
               ("Peggy", "Margaret"), ("Nick", "Nicholas"), ("Ken", "Kenneth"), ("Chuck", "Charles"), ("Max", "Maximilian")]


@SETTINGS
@given(pair=st.sampled_from(SHORT_FORMS), surname=st.sampled_from(["Tobin", "Curie", "Lorentz", "Hodgkin", "Bragg"]))
def test_property_a_short_form_is_the_same_first_name(pair: tuple, surname: str) -> None:
    short, full = pair
    assert names_match(f"{short} {surname}", f"{full} {surname}")
    assert names_match(f"{full} {surname}", f"{short} {surname}")
    assert not names_match(f"{short} {surname}", f"Marie {surname}")


@pytest.mark.parametrize(
    "title",
    ["Three Billboards Outside Ebbing, Missouri", "Come Back, Little Sheba", "Goodbye, Mr. Chips",
     "Crouching Tiger, Hidden Dragon", "Robert Cecil, 1st Viscount Cecil of Chelwood", "Earl Wilbur Sutherland, Jr."],
)
def test_a_title_or_name_with_a_comma_is_one_name(title: str) -> None:
    q = "Which film won the Academy Award for Best Picture? give the movie name only."
    s = score(q, title, "name", title, "unknown-domain")  # not a known answer: the rule alone
    assert (s.claim, s.aligned, s.correct) == (title.rstrip("."), True, True)  # one final stop is cleaned


def test_two_people_joined_by_a_comma_are_two_names() -> None:
    q = "Who won the Nobel Prize in Physics in 1903? [first name + last name only]"
    assert verdict(q, "Pierre Curie", "name", "Pierre Curie, Marie Curie", "nobel") == ("Pierre Curie", False, True)
    assert verdict(q, "Pierre Curie", "name", "Pierre Curie, Marie Curie", "unknown-domain")[1] is False


@pytest.mark.parametrize(
    "response",
    ["Wilhelm Röntgen, founder of radiology", "Wilhelm Röntgen, the German physicist who discovered X-rays",
     "Wilhelm Röntgen, German physicist"],
)
def test_a_descriptive_clause_makes_the_name_misaligned_and_the_name_is_the_claim(response: str) -> None:
    assert verdict(NOBEL, "Wilhelm Röntgen", "name", response, "nobel") == ("Wilhelm Röntgen", False, True)
    assert verdict(NOBEL, "Wilhelm Röntgen", "name", response, "unknown-domain") == ("Wilhelm Röntgen", False, True)


def test_a_foreign_sentence_is_no_name() -> None:
    response = "Der Nobelpreis für Physik 1901 ging an Wilhelm Röntgen."
    assert verdict(NOBEL, "Wilhelm Röntgen", "name", response, "nobel") == ("Wilhelm Röntgen", False, True)


# -- 10. places ------------------------------------------------------------------------------

CONFERENCE_GOLDS = ["Honolulu, Hawaii", "Seattle, Washington", "Kauai, Hawaii", "Long Beach, California",
                    "Hilton Head Island, South Carolina", "Jeju Island, South Korea", "Vancouver, British Columbia",
                    "Austin, Texas, United States", "Sydney, Australia", "Edinburgh, United Kingdom"]


@SETTINGS
@given(gold=st.sampled_from(CONFERENCE_GOLDS), qualifier=st.sampled_from(["", ", USA", ", United States"]))
def test_property_the_region_or_country_alone_never_matches(gold: str, qualifier: str) -> None:
    city, *rest = [p.strip() for p in gold.split(",")]
    for part in rest:
        assert not places_match(part + qualifier, gold), (part, gold)
    assert places_match(city, gold)


def test_hawaii_is_not_honolulu() -> None:
    q = "Where was CVPR 2018 held? Give me the exact location only."
    assert verdict(q, "Honolulu, Hawaii", "city", "Hawaii", "conference_venue") == ("Hawaii", True, False)
    assert verdict(q, "Honolulu, Hawaii", "city", "It was held in Hawaii.", "conference_venue") == ("Hawaii", False, False)


@pytest.mark.parametrize(
    "response",
    [
        "CVPR 2020 was planned for Seattle, WA, but moved to a fully virtual format because of COVID-19.",
        "It was held virtually, originally planned for **Seattle**.",
        "Seattle, Washington was the planned host, but the conference took place online.",
        "La conférence s'est tenue en ligne (prévue à Seattle).",
        # Clarification 16: any language's word for it (scoring/text/online_words.py).
        "Konference proběhla virtuálně (původně plánována v Seattlu).",
        "Digitalt, på grund av covid-19-pandemin",
        "Secara maya (dalam talian) kerana COVID-19.",
        "Es va celebrar en línia.",
        "Το συνέδριο πραγματοποιήθηκε διαδικτυακά.",
        "सम्मेलन ऑनलाइन आयोजित किया गया।",
    ],
)
def test_held_virtually_claims_online_even_naming_the_planned_city(response: str) -> None:
    gold = "Seattle, Washington Virtual/Online due to COVID-19[15]"
    assert verdict(CVPR, gold, "city", response, "conference_venue") == ("online", False, True)


@pytest.mark.parametrize("response", ["Ar-lein", "ออนไลน์", "Virtuálně"])
def test_a_bare_online_word_of_any_language_is_aligned(response: str) -> None:
    gold = "Seattle, Washington Virtual/Online due to COVID-19[15]"
    assert verdict(CVPR, gold, "city", response, "conference_venue") == ("online", True, True)


@pytest.mark.parametrize(
    "response",
    [
        "CVPR 2019 was held in Long Beach, California; talks were streamed online.",
        "CVPR 2019 was not held online: it took place in Long Beach, California.",
    ],
)
def test_online_material_is_not_a_virtual_conference(response: str) -> None:
    q = "Where was CVPR 2019 held?"
    assert verdict(q, "Long Beach, California", "city", response, "conference_venue") == ("Long Beach, California", False, True)


@pytest.mark.parametrize(
    "response,claim",
    [
        ("ACL 2017 was in Vancouver, ACL 2020 was supposed to be in Seattle but went virtual, and ACL 2019 took place"
         " in **Florence, Italy**.", "Florence, Italy"),
        ("Florence, Italy, if I remember correctly. ACL 2020 was virtual (it was planned for Seattle).", "Florence, Italy"),
        ("It took place in Florence. The next edition went fully virtual in 2020.", "Florence"),
    ],
)
def test_another_edition_held_online_is_no_online_claim(response: str, claim: str) -> None:
    q = "In 2019, which city hosted ACL? Give me the exact location only."
    assert verdict(q, "Florence, Italy", "city", response, "conference_venue") == (claim, False, True)


@pytest.mark.parametrize(
    "response",
    ["In 2020 it went virtual, though it was planned for Seattle.", "The 2020 edition moved online; Seattle was the plan.",
     "It was held online in 2020 instead of in Seattle."],
)
def test_the_asked_edition_held_online_claims_online(response: str) -> None:
    gold = "Seattle, Washington Virtual/Online due to COVID-19[15]"
    assert verdict(CVPR, gold, "city", response, "conference_venue") == ("online", False, True)


def test_rank_and_date_helpers_accept_the_forms() -> None:
    assert parse_rank("Platz sechsundzwanzig") == 26
    assert [v for _, _, v in find_dates("am 19. November 1946 und le 1er janvier 1947")] == [(1946, 11, 19), (1947, 1, 1)]
    ctx = make_context(NOBEL, "name", gazetteer=Gazetteer(["Wilhelm Röntgen"]))
    assert extract("| Year | Laureate |\n|---|---|\n| 1901 | Wilhelm Röntgen |", ctx).how == "marked"


@pytest.mark.parametrize(
    "response,claim",
    [
        ("No, it was held online.", "online"),
        ("It was not held online; it was in Seattle, Washington.", "Seattle, Washington"),
        ("Instead of being held online, it met in Seattle.", "Seattle"),
        ("No se celebró en línea; fue en Seattle.", "Seattle"),
    ],
)
def test_a_negated_online_statement_is_no_online_claim(response: str, claim: str) -> None:
    gold = "Seattle, Washington Virtual/Online due to COVID-19[15]"
    assert verdict(CVPR, gold, "city", response, "conference_venue")[0] == claim


def test_a_name_in_another_language_is_one_bare_name() -> None:
    q = "Where was the 1950 FIFA World Cup final played? (Give me the name only)"
    s = score(q, "Maracanã Stadium", "name", "Estádio do Maracanã", "sports")
    assert (s.claim, s.aligned) == ("Estádio do Maracanã", True)  # proper nouns are not translated: not correct


# -- 22. Concluding statements ----------------------------------------------------------------

ATTENDANCE = "How many spectators watched the 1966 World Cup final at Wembley?"
WINNER = "Which country won the 1982 FIFA World Cup?"
JOINED = "In which year did Ghana join the UN?"


@pytest.mark.parametrize(
    ("question", "gold", "type_", "response", "claim"),
    [
        (ATTENDANCE, "96,924", "numeric", "England beat West Germany 4–2 after extra time. So the attendance was 96,924.", "96924"),
        (ATTENDANCE, "96,924", "numeric", "The final ended 4-2. Therefore, the crowd numbered 98,000.", "98000"),
        (WINNER, "Italy", "name", "Italy met West Germany in Madrid and won 3–1. Therefore, the winner was Italy.", "Italy"),
        (WINNER, "Italy", "name", "West Germany reached the final in Madrid. In conclusion, Italy", "Italy"),
        (JOINED, "1957", "date", "Ghana became independent in March 1957 and applied at once. Thus: 1957", "1957"),
        (WINNER, "Italy", "name", "The final answer is Italy.", "Italy"),
        # the last concluding statement wins
        (ATTENDANCE, "96,924", "numeric", "So the official figure was 93,000. Hence the attendance was 96,924.", "96924"),
    ],
)
def test_a_concluding_statement_is_an_explicit_mark(question: str, gold: str, type_: str, response: str, claim: str) -> None:
    """Clarification 22: a worked-out answer claims what it concludes, not the first value it
    passed; the response is misaligned."""
    got = verdict(question, gold, type_, response)
    assert got[0] == claim and got[1] is False, got


def test_a_lead_in_and_the_value_stays_aligned() -> None:
    assert verdict(WINNER, "Italy", "name", "Final answer: Italy") == ("Italy", True, True)


def test_a_concluding_word_without_the_asked_value_is_no_mark() -> None:
    """"So" opening a sentence that states no value of the asked kind (the question's own year)
    marks nothing: the first candidate stays the claim."""
    got = verdict(ATTENDANCE, "96,924", "numeric", "About 96,924 people came. So that was 1966.")
    assert got[0] == "96924"


# -- 23. Tags and citations around a value ---------------------------------------------------

@pytest.mark.parametrize(
    ("question", "gold", "type_", "response", "claim"),
    [
        (WINNER, "Italy", "name", "<final>Italy</final>", "Italy"),
        (JOINED, "1957", "date", "<year>1957</year>", "1957"),
        (UN, "11/19/1946", "date", "11/19/1946 [1]", "1946-11-19"),
        ("Where was ICML 2008 held?", "Helsinki, Finland", "city", "Helsinki [source 2]", "Helsinki"),
        ("Where was ICML 2008 held?", "Helsinki, Finland", "city", "Helsinki^[3]", "Helsinki"),
        (KOBE, "386", "rank", "386th [2][5]", "386"),
        (KOBE, "386", "rank", "[1] 386th", "386"),
    ],
)
def test_one_tag_pair_or_a_citation_mark_keeps_a_bare_value_bare(question: str, gold: str, type_: str, response: str, claim: str) -> None:
    assert verdict(question, gold, type_, response) == (claim, True, True)


def test_a_sources_list_is_more_text_and_holds_no_candidate() -> None:
    got = verdict("Where was ICML 2008 held?", "Helsinki, Finland", "city",
                  "Helsinki\n\nSources:\n[1] Oslo University, conference archive")
    assert got == ("Helsinki", False, True)
    got = verdict(KOBE, "386", "rank", "It was ranked 386th.\n\nReferences:\n- QS 2023 edition, rank 401")
    assert got == ("386", False, True)


def test_several_tagged_fields_are_structured_output() -> None:
    got = verdict("Where was ICML 2008 held?", "Helsinki, Finland", "city", "<city>Helsinki</city><country>Finland</country>")
    assert got[0] == "Helsinki" and got[1] is False


# -- 24. An echoed question -------------------------------------------------------------------

@pytest.mark.parametrize(
    "response",
    [
        f"{JOINED}\nA: 1957",
        f"Q: {JOINED}\n1957",
        f"Question: {JOINED}\nAnswer: 1957",
    ],
)
def test_an_echoed_question_is_ignored_and_the_answer_after_it_is_the_claim(response: str) -> None:
    assert verdict(JOINED, "1957", "date", response) == ("1957", False, True)


def test_an_echoed_question_naming_a_place_claims_the_answer_not_the_echo() -> None:
    q = "Which country hosted the 1978 FIFA World Cup?"
    assert verdict(q, "Argentina", "name", f"Q: {q}\nA: Argentina")[:2] == ("Argentina", False)


# -- 25. None in structured output ------------------------------------------------------------

EMPTY_NOBEL = "Who won the Nobel Peace Prize in 1942?"


@pytest.mark.parametrize(
    "response",
    ['{"answer": null}', '{"laureate": null, "year": 1942}', "Laureate: None", "winner: null", '{"answer": "None"}'],
)
def test_a_null_in_the_key_that_answers_says_there_was_none(response: str) -> None:
    got = verdict(EMPTY_NOBEL, "", "name", response)
    assert got[0] == "none" and got[2] is True, got


def test_a_null_in_a_numeric_answer_is_no_number() -> None:
    """``None`` is never read as a number word (it claimed 9 before)."""
    q = "What was the population of the town in 2011?"
    assert verdict(q, "1,204", "numeric", '{"answer": null}')[0] == "none"
    assert verdict(q, "1,204", "numeric", "None") == ("none", True, False)


# -- 26. Names, more forms --------------------------------------------------------------------

CHEM = "Who won the Nobel Prize in Chemistry in 1935? give one name only"


@pytest.mark.parametrize(
    ("gold", "response", "correct"),
    [
        ("Irène Joliot-Curie", "I. Joliot-Curie", True),
        ("Frédéric Joliot-Curie", "I. Joliot-Curie", False),
        ("James Chadwick", "J. Chadwick", True),
        ("James Chadwick", "R. Chadwick", False),
        ("International Labour Organization", "ILO", True),
        ("American Friends Service Committee", "the Quakers", False),
    ],
)
def test_initials_and_initialisms(gold: str, response: str, correct: bool) -> None:
    assert verdict(CHEM, gold, "name", response)[2] is correct


def test_two_people_with_a_shared_surname_are_two_names() -> None:
    q = "Who directed the film that won Best Picture in 1962? give the name"
    joint = "Robert Wise and Jerome Robbins"  # no shared surname: read as before
    assert verdict(q, joint, "name", "Robert Wise")[2] is True
    # the gold names the two jointly: aligned, the first is the claim
    assert verdict(q, "Anthony Russo and Joe Russo", "name", "Anthony and Joe Russo") == ("Anthony Russo", True, True)
    # the gold names one of them: two names where one is asked, misaligned; the first is the claim
    assert verdict(q, "Anthony Russo", "name", "Anthony and Joe Russo") == ("Anthony Russo", False, True)
    assert verdict(q, "Joe Russo", "name", "It was Anthony and Joe Russo.")[:2] == ("Anthony Russo", False)


def test_a_venue_and_its_city_is_one_name() -> None:
    q = "Where was the 1970 FIFA World Cup final played (stadium name)?"
    assert verdict(q, "Estadio Azteca", "name", "Estadio Azteca, Mexico City") == ("Estadio Azteca, Mexico City", True, True)


# -- virtual conferences: a gold answered as written is right -----------------------------------

@pytest.mark.parametrize(
    "gold",
    ["Porto, Portugal Virtual/Online due to COVID-19[7]", "Lyon, France Virtual/Online", "Virtual/Online"],
)
def test_a_virtual_gold_answered_as_written_claims_online(gold: str) -> None:
    q = "Where was the 2021 Example Conference held?"
    assert verdict(q, gold, "city", gold) == ("online", True, True)
    assert verdict(q, gold, "city", "Porto")[2] is False


@pytest.mark.parametrize(
    ("response", "correct"),
    [("San José, Costa Rica", True), ("San José, Kostarika", True), ("San José, Uruguay", False), ("San José, Perú", False)],
)
def test_a_country_added_to_a_city_is_any_country_cldr_names(response: str, correct: bool) -> None:
    """Issue 37: the countries are CLDR's, in any language (not a hand list of 43: Uruguay
    and Peru were unknown qualifiers before, so "San José, Uruguay" matched)."""
    q = "Where was the 2031 Example Conference held?"
    assert verdict(q, "San José, Costa Rica", "city", response)[2] is correct
