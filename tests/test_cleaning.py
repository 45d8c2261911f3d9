"""Step 1 of SCORING.md and clarification 11 (wrappers): HTML tags, emoji and decorative
symbols are formatting marks removed in cleaning; a lead-in is a label of one to three words
and a colon at the very start, in any language; an unclosed reasoning block holds no answer.
Also the marks that are never candidates (knowledge-cutoff statements, ``N/A``, list letters)."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from defan_pytest.scoring.claims import extract
from defan_pytest.scoring.cleaning import KNOWLEDGE_CUTOFF, clean, mask_citations, strip_label, strip_symbols
from defan_pytest.scoring.text.tokens import Gazetteer
from defan_pytest.scoring.types import make_context

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

KOBE = "What was the position of Kobe University in the QS rankings for 2022?"
CENSUS = "In 2001, what was the number of people aged 0-4 residing in Victoria?"
WORLD_CUP = "Which team won the 1938 FIFA World Cup?(Give me the name only)"
CVPR = "What was the venue of CVPR in 2019? Give me the exact location only."


def run(question: str, type_: str, response: str, *, names=(), finish_reason=None, math=False, integer_gold=None):
    ctx = make_context(question, type_, gazetteer=Gazetteer(names), finish_reason=finish_reason, is_math=math,
                       integer_gold=integer_gold)
    return extract(response, ctx)


# -- HTML, emoji, decorative symbols ---------------------------------------------------------


@pytest.mark.parametrize(
    "raw,cleaned",
    [
        ("<b>Brazil</b><br>", "Brazil"),
        ("<p>386</p>", "386"),
        ('<span class="answer">Paris</span>', "Paris"),
        ("<strong>Italy</strong>", "Italy"),
        ("<answer>42</answer>", "42"),
        ("Argentina 🇦🇷⚽", "Argentina"),
        ("🏆 Italy 🏆", "Italy"),
        ("<think>The final was Italy against Hungary.</think>\n\n**Hungary** 🏆", "Hungary"),
        ("★ 386 ★", "386"),
        ("👍🏽 Paris", "Paris"),
        ("Seattle ✅", "Seattle"),
        ("Tom &amp; Jerry", "Tom & Jerry"),
    ],
)
def test_html_emoji_and_symbols_are_removed(raw: str, cleaned: str) -> None:
    assert clean(raw) == cleaned


@pytest.mark.parametrize(
    "text",
    [
        "26°",  # an ordinal sign, not decoration
        "√1.5625 = 1.25",  # a math sign
        "x ≥ 3 → 4",
        "a<b and c>d",  # no tag: comparison signs in a worked solution
        "410:e",
    ],
)
def test_signs_that_are_not_decoration_are_kept(text: str) -> None:
    assert strip_symbols(text) == text


def test_unclosed_think_holds_no_answer() -> None:
    assert clean("<think>\nThe hosts beat Czechoslovakia, so the answer should be") == ""
    e = run(WORLD_CUP, "name", "<think>Italy won it in Paris", names=["Italy"])
    assert (e.claim, e.aligned) == (None, False)


def test_answer_only_inside_a_closed_think_is_no_claim() -> None:
    e = run(WORLD_CUP, "name", "<think>Italy beat Hungary 4-2.</think>", names=["Italy"])
    assert (e.claim, e.aligned) == (None, False)


_VALUES = st.sampled_from(["386", "Paris", "Argentina", "1,351,921", "West Germany", "42.85"])
_EMOJI = st.sampled_from(["🏆", "🇦🇷", "⚽", "✅", "★", "🎉", "👍🏽", "❤️", "✨", "🥇"])
_TAGS = st.sampled_from([("<b>", "</b>"), ("<p>", "</p>"), ("<strong>", "</strong>"), ("<i>", "</i>"), ("", "<br>"),
                         ('<span style="color:red">', "</span>"), ("", "")])


@SETTINGS
@given(_VALUES, st.lists(_EMOJI, max_size=3), st.lists(_EMOJI, max_size=3), _TAGS, st.booleans())
def test_any_emoji_or_html_wrapping_of_a_bare_value_keeps_it_bare(value, before, after, tags, bold) -> None:
    inner = f"**{value}**" if bold else value
    raw = f"{tags[0]}{' '.join(before)} {inner} {' '.join(after)}{tags[1]}"
    assert clean(raw) == value


@SETTINGS
@given(st.sampled_from(["386", "386th", "#386"]), st.lists(_EMOJI, max_size=3), _TAGS)
def test_a_wrapped_rank_is_aligned_and_claims_its_value(value, emoji, tags) -> None:
    e = run(KOBE, "rank", f"{tags[0]}{value} {''.join(emoji)}{tags[1]}")
    assert (e.claim, e.aligned) == ("386", True)


# -- lead-ins --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw,rest",
    [
        ("A: Paris", "Paris"),
        ("Antwort: 386", "386"),
        ("Réponse : Paris", "Paris"),
        ("Respuesta: 386", "386"),
        ("**Location:** Long Beach, CA", "Long Beach, CA"),
        ("**Location**: Long Beach, CA", "Long Beach, CA"),
        ("Population: 296,615", "296,615"),
        ("Final answer: 12", "12"),
        ("Ответ: 386", "386"),
        ("答案： 386", "386"),
        ("assistant: West Germany", "West Germany"),
        ("Câu trả lời: West Germany", "West Germany"),  # three words
        ("85 and over: 36", "36"),  # a label that starts with a number has a word after it
    ],
)
def test_a_short_label_and_a_colon_at_the_start_is_a_lead_in(raw: str, rest: str) -> None:
    assert strip_label(raw) == rest


@pytest.mark.parametrize(
    "raw",
    [
        "410:e",  # a colon inside a written form
        "85:e",
        "10:30",
        "2022: 61",  # a row of a list of years, not a label
        "University of Jyvaskyla: 320",  # the subject the question names, not a label
        "Universität Hamburg: 205th",
        "The Lord of the Rings: The Return of the King",
        "This is a very long label: 3",  # more than three words
        "386",
    ],
)
def test_no_lead_in(raw: str) -> None:
    assert strip_label(raw) is None


def test_a_lead_in_keeps_the_value_bare() -> None:
    # The census gold is a whole number: "296,615" groups thousands in any language (clarification 4).
    e = run(CENSUS, "numeric", "Population: 296,615", integer_gold=True)
    assert (e.claim, e.aligned) == ("296615", True)
    e = run(CVPR, "city", "**Location:** Long Beach, CA")
    assert e.aligned and e.claim is not None and e.claim.startswith("Long Beach")
    e = run(KOBE, "rank", "Kobe University: 386")
    assert (e.claim, e.aligned) == ("386", False)


@pytest.mark.parametrize("label", ["assistant", "Odpověď", "Jibu", "Câu trả lời", "A", "Svar", "Sagot", "Cevap"])
def test_a_lead_in_in_any_language_before_a_name_is_no_part_of_it(label: str) -> None:
    # The label goes first: a name type would otherwise read "Jibu: West Germany" as one name.
    e = run(WORLD_CUP, "name", f"{label}: West Germany")
    assert (e.claim, e.aligned) == ("West Germany", True)


GAYNOR_FILM = "Which movie earned Janet Gaynor the Oscar in 1928? give the movie name only."


def test_a_title_s_head_before_a_colon_is_no_lead_in() -> None:
    # Where the question asks for a title, "Sunrise:" heads the title; "Film:" still labels it.
    e = run(GAYNOR_FILM, "name", "Sunrise: A Song of Two Humans")
    assert (e.claim, e.aligned) == ("Sunrise: A Song of Two Humans", True)
    e = run(GAYNOR_FILM, "name", "Film: 7th Heaven")
    assert (e.claim, e.aligned) == ("7th Heaven", True)
    # A known answer with a colon stays whole whatever the question.
    e = run(WORLD_CUP, "name", "Star Wars: Episode IV", names=["Star Wars: Episode IV"])
    assert e.claim == "Star Wars: Episode IV"


_LABEL_WORDS = st.sampled_from(
    ["A", "Answer", "Antwort", "Réponse", "Respuesta", "Resposta", "Risposta", "Svar", "Odpowiedź", "Ответ",
     "Rank", "Rang", "Position", "Result", "Final answer", "My answer", "Short answer", "Cevap", "Jawaban"]
)


@SETTINGS
@given(_LABEL_WORDS, st.sampled_from(["386", "386th", "#386", "=386"]), st.booleans(), st.sampled_from([":", " :", "："]))
def test_any_lead_in_word_and_a_value_gives_the_value(label, value, bold, colon) -> None:
    head = f"**{label}{colon}**" if bold else f"{label}{colon}"
    e = run(KOBE, "rank", f"{head} {value}")
    assert (e.claim, e.aligned) == ("386", True)


@SETTINGS
@given(
    st.sampled_from(["Brazil", "West Germany", "Argentina"]),
    st.sampled_from(["assistant", "Jibu", "Odpověď", "Câu trả lời", "Antwort", "A"]),
    st.booleans(),
)
def test_property_a_one_to_three_word_label_never_joins_the_name(team, label, bold) -> None:
    head = f"**{label}:**" if bold else f"{label}:"
    e = run(WORLD_CUP, "name", f"{head} {team}")
    assert (e.claim, e.aligned) == (team, True)


# -- chat template tokens --------------------------------------------------------------------


@pytest.mark.parametrize("token", ["<|im_end|>", "<|eot_id|>", "<|end|>", "<|endoftext|>", "</s>", "<end_of_turn>"])
def test_an_end_of_turn_token_at_the_end_is_formatting(token: str) -> None:
    assert clean(f"West Germany{token}") == "West Germany"
    assert clean(f"Edinburgh, Scotland{token}\n{token}\n") == "Edinburgh, Scotland"
    e = run(CVPR, "city", f"Location: Edinburgh, Scotland{token}")
    assert (e.claim, e.aligned) == ("Edinburgh, Scotland", True)


def test_text_after_an_end_of_turn_token_is_a_new_turn() -> None:
    e = run("how much is 12 × 56 ÷ 21 ?", "numeric",
            "12 × 56 = 672; 672 ÷ 21 = 32<|im_end|>\n<|im_start|>user\nThanks! Now what if it was 15", math=True)
    assert (e.claim, e.aligned) == ("32", False)
    e = run(WORLD_CUP, "name", "Brazil<|eot_id|>Who won in 2002? Germany")
    assert (e.claim, e.aligned) == ("Brazil", False)


@SETTINGS
@given(st.sampled_from(["<|im_end|>", "<|eot_id|>", "<end_of_turn>"]), st.integers(1, 9999), st.text(st.sampled_from("ab \n7"), max_size=20))
def test_property_nothing_after_an_end_token_changes_a_bare_rank(token, r, after) -> None:
    e = run(KOBE, "rank", f"{r}{token}{after}")
    assert e.claim == str(r)
    assert e.aligned is (not after.strip())


# -- marks that are never candidates ---------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "As of my last update in October 2023",
        "As of my knowledge cutoff in September 2021",
        "my knowledge cutoff is 2023",
        "according to my training data up to 2021",
        "knowledge cutoff: January 2022",
    ],
)
def test_knowledge_cutoff_statements_are_masked(text: str) -> None:
    assert KNOWLEDGE_CUTOFF.search(text) is not None
    assert not any(c.isdigit() for c in mask_citations(text))


def test_a_knowledge_cutoff_year_is_not_a_candidate() -> None:
    q = "What was the count of Northern Territory's 10-14  age range population in 2021?"
    r = "As of my last update in October 2023, I don't have access to the exact 2021 census figure for the 10-14 age group."
    assert run(q, "numeric", r).claim is None
    r = "As of my last update in October 2023, the attendance at the 2010 final in Johannesburg was 84,490."
    assert run("What was the attendance of the 2010 final?", "numeric", r).claim == "84490"


def test_na_is_a_refusal_not_a_none_statement() -> None:
    q = "Who was the Nobel Prize recipient for Economics in the year 1901?"
    e = make_context(q, "name", empty_gold=True, gazetteer=Gazetteer())
    assert (extract("N/A", e).claim, extract("N/A", e).aligned) == (None, False)
    assert extract("N/A.", e).claim is None


def test_option_letters_are_list_markers() -> None:
    assert mask_citations("A) West Germany\nB) England").split() == ["West", "Germany", "England"]
    assert mask_citations("A. West Germany\nB. England").split() == ["West", "Germany", "England"]
    assert mask_citations("A. Einstein") == "A. Einstein"  # an initial, not a list
