"""Finding the label position in generated tokens and summing the first-token mass of each label."""

from __future__ import annotations

import math

import pytest

from llmdisc.discrimination.providers.label_positions import (
    LabelPosition,
    TokenChoice,
    TokenPosition,
    first_token_masses,
    locate_label_position,
    scores_from_positions,
)


def _positions(*tokens: str) -> list[TokenPosition]:
    return [TokenPosition(TokenChoice(t, -0.1), ((TokenChoice(t, -0.1)),)) for t in tokens]


@pytest.mark.parametrize("tokens, expected", [
    (('{"', "verdict", '":', ' "', "RE", "AL"), LabelPosition(4, "")),
    (('{', ' "', "verdict", '"', ":", ' "SY', "N"), LabelPosition(5, ' "')),   # quote merged with the label
    (('{"verdict":"', "REAL"), LabelPosition(1, "")),                          # no whitespace at all
    (('\n', '{"verdict": "REAL"}'), LabelPosition(1, '{"verdict": "')),        # one token holds it all
])
def test_the_label_position_is_found_whatever_the_tokenisation(tokens, expected):
    assert locate_label_position(_positions(*tokens), prefilled=False) == expected


def test_answers_that_do_not_reach_or_open_the_verdict_say_why():
    assert "does not open with" in locate_label_position(_positions('{"', "confidence"), prefilled=False)
    assert "ended before its verdict value" in locate_label_position(_positions('{"', "verdict", '": "'),
                                                                     prefilled=False)
    assert "no token log-probabilities" in locate_label_position([], prefilled=False)
    assert locate_label_position(_positions("SY"), prefilled=True) == LabelPosition(0, "")


def test_first_token_mass_counts_every_token_that_begins_a_label_once():
    candidates = [TokenChoice("SY", -1.0), TokenChoice("S", -2.0), TokenChoice("SY", -1.0), TokenChoice("REAL\"", -3.0),
                  TokenChoice("REALLY", -0.5), TokenChoice("Synthetic", -0.7), TokenChoice("", -0.1)]
    masses, problems = first_token_masses(candidates)
    assert masses["SYNTHETIC"] == pytest.approx(math.exp(-1.0) + math.exp(-2.0))  # case matters; duplicates once
    assert masses["REAL"] == pytest.approx(math.exp(-3.0))  # REAL" is the label and its quote; REALLY is not
    assert problems == []


def test_an_infinite_log_probability_is_a_problem_not_a_number():
    top = (TokenChoice("RE", -0.5), TokenChoice("SY", -math.inf))
    scores = scores_from_positions([TokenPosition(TokenChoice("RE", -0.5), top)], prefilled=True, top_k=2, model="m")
    assert scores.invalid_reason.startswith("non-finite log-probability") and math.isnan(scores.logprobs["REAL"])


def test_the_chosen_token_counts_even_when_the_service_left_it_out_of_its_top_list():
    top = (TokenChoice("SY", -1.0), TokenChoice("x", -2.0))
    scores = scores_from_positions([TokenPosition(TokenChoice("RE", -3.0), top)], prefilled=True, top_k=2, model="m")
    assert scores.invalid_reason is None and scores.logprobs == pytest.approx({"REAL": -3.0, "SYNTHETIC": -1.0})
