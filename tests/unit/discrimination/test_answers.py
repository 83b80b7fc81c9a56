"""Answer schema and parser: strict, fenced and embedded JSON; named reasons for every malformed kind."""

from __future__ import annotations

import json
import random

import pytest

from llmdisc.discrimination.answers import (
    ANSWER_FIELDS,
    ANSWER_JSON_SCHEMA,
    ITEM_MAX_CHARS,
    LIST_MAX_ITEMS,
    REASONING_MAX_CHARS,
    ParsedAnswer,
    VerdictAnswer,
    parse_answer,
)

GOOD = {"verdict": "SYNTHETIC", "confidence": 85, "reasoning": "Ages end in 0 too often.",
        "red_flags": ["age heaping at 40"], "supporting_evidence": []}


def answer(**changes: object) -> str:
    value = dict(GOOD)
    for key, new in changes.items():
        if new is ...:
            value.pop(key)
        else:
            value[key] = new
    return json.dumps(value)


class TestSchema:
    def test_caps_every_string_and_array(self):
        props = ANSWER_JSON_SCHEMA["properties"]
        assert props["reasoning"]["maxLength"] == REASONING_MAX_CHARS
        for name in ("red_flags", "supporting_evidence"):
            assert props[name]["maxItems"] == LIST_MAX_ITEMS
            assert props[name]["items"] == {"type": "string", "maxLength": ITEM_MAX_CHARS}
        assert props["verdict"]["enum"] == ["REAL", "SYNTHETIC"]
        assert props["confidence"] == {"type": "integer", "minimum": 0, "maximum": 100}
        assert ANSWER_JSON_SCHEMA["required"] == list(ANSWER_FIELDS)
        assert ANSWER_JSON_SCHEMA["additionalProperties"] is False

    def test_uses_only_keywords_every_provider_accepts(self):
        allowed = {"type", "properties", "required", "additionalProperties", "enum", "minimum", "maximum",
                   "maxLength", "items", "maxItems"}

        def keywords(node: object) -> set[str]:
            if not isinstance(node, dict):
                return set()
            found = set(node)
            for key, value in node.items():
                if key == "properties":
                    found |= set().union(*(keywords(v) for v in value.values()))
                elif isinstance(value, dict):
                    found |= keywords(value)
            return found

        assert keywords(ANSWER_JSON_SCHEMA) <= allowed

    def test_matches_the_pydantic_model(self):
        def strip(node: object) -> object:
            if isinstance(node, dict):
                return {k: strip(v) for k, v in node.items() if k not in ("title", "description")}
            return node

        assert strip(VerdictAnswer.model_json_schema()) == ANSWER_JSON_SCHEMA

    def test_a_valid_parse_satisfies_the_model(self):
        parsed = parse_answer(answer())
        model = VerdictAnswer(verdict=parsed.verdict, confidence=parsed.confidence, reasoning=parsed.reasoning,
                              red_flags=parsed.red_flags, supporting_evidence=parsed.supporting_evidence)
        assert model.verdict == "SYNTHETIC" and model.confidence == 85


class TestValidAnswers:
    def test_strict_json(self):
        parsed = parse_answer(answer())
        assert parsed == ParsedAnswer(verdict="SYNTHETIC", confidence=85, reasoning=GOOD["reasoning"],
                                      red_flags=["age heaping at 40"], supporting_evidence=[],
                                      invalid_reason=None, raw_text=answer(), method="strict")
        assert parsed.valid

    def test_fenced_json_in_prose(self):
        text = "Here is my analysis.\n```json\n" + answer(verdict="REAL") + "\n```\nHope this helps."
        parsed = parse_answer(text)
        assert parsed.valid and parsed.verdict == "REAL" and parsed.method == "fenced" and parsed.raw_text == text

    def test_embedded_object_after_reasoning_with_braces(self):
        # A {...} without a verdict comes first; the parser takes the one that holds the verdict.
        text = 'Thinking about {"age": 40} first. Final: ' + answer() + " done"
        parsed = parse_answer(text)
        assert parsed.valid and parsed.method == "embedded" and parsed.confidence == 85

    def test_a_stray_open_brace_does_not_hide_a_later_object(self):
        text = "Consider {the age column, which... Final answer: " + answer(verdict="REAL")
        parsed = parse_answer(text)
        assert parsed.valid and parsed.verdict == "REAL" and parsed.method == "embedded"

    def test_braces_inside_strings_do_not_confuse_the_scanner(self):
        text = "Answer: " + answer(reasoning="values like {x} and } appear")
        assert parse_answer(text).reasoning == "values like {x} and } appear"

    @pytest.mark.parametrize("raw, expected", [
        ("real", "REAL"), ("Real.", "REAL"), (" synthetic ", "SYNTHETIC"), ("**SYNTHETIC**", "SYNTHETIC"),
        ('"REAL"', "REAL"), ("Synthetic!", "SYNTHETIC")])
    def test_verdict_is_normalised(self, raw, expected):
        parsed = parse_answer(answer(verdict=raw))
        assert parsed.valid and parsed.verdict == expected

    @pytest.mark.parametrize("raw, expected", [(0, 0), (100, 100), (85.0, 85), ("85", 85), (" 7 ", 7)])
    def test_integral_confidences_are_accepted(self, raw, expected):
        parsed = parse_answer(answer(confidence=raw))
        assert parsed.valid and parsed.confidence == expected

    def test_trailing_commas_are_repaired(self):
        text = '{"verdict": "REAL", "confidence": 60, "reasoning": "ok, fine", "red_flags": ["a",], ' \
               '"supporting_evidence": [],}'
        parsed = parse_answer(text)
        assert parsed.valid and parsed.red_flags == ["a"] and parsed.method == "strict+repaired"
        assert parsed.reasoning == "ok, fine"

    def test_wrapper_object_is_unwrapped(self):
        parsed = parse_answer(json.dumps({"answer": GOOD}))
        assert parsed.valid and parsed.verdict == "SYNTHETIC" and parsed.method == "strict+unwrapped"

    def test_list_fields_given_as_strings_become_lists(self):
        parsed = parse_answer(answer(red_flags="too uniform", supporting_evidence=""))
        assert parsed.valid and parsed.red_flags == ["too uniform"] and parsed.supporting_evidence == []

    def test_numbers_in_lists_become_text_and_extra_keys_are_kept_aside(self):
        parsed = parse_answer(answer(red_flags=[40, "x"], extra_note="hi"))
        assert parsed.valid and parsed.red_flags == ["40", "x"] and parsed.extra == {"extra_note": "hi"}

    def test_over_long_answers_still_count(self):
        parsed = parse_answer(answer(reasoning="x" * (REASONING_MAX_CHARS + 50)))
        assert parsed.valid


class TestMalformedAnswers:
    @pytest.mark.parametrize("text, reason", [
        ("", "empty"),
        ("   \n ", "empty"),
        ("I think this data is REAL with high confidence.", "no_json"),
        ('{"verdict": "REAL", "confidence": 80, "reasoning": "The age colu', "truncated_json"),
        ("```json\n{\"verdict\": \"REAL\", \"confidence\": 8", "truncated_json"),
        ("{verdict: REAL, confidence: 80}", "malformed_json"),
        ("[" + json.dumps(GOOD) + "]", "json_not_object:list"),
        ('"REAL"', "json_not_object:str"),
        ("42", "json_not_object:int"),
        (answer(verdict="MAYBE"), "verdict_not_recognised:MAYBE"),
        (answer(verdict="REAL or SYNTHETIC"), "verdict_not_recognised:REAL or SYNTHETIC"),
        (answer(verdict=1), "verdict_not_recognised:1"),
        (answer(confidence=85.5), "confidence_not_integer"),
        (answer(confidence="85%"), "confidence_not_integer"),
        (answer(confidence="high"), "confidence_not_integer"),
        (answer(confidence=True), "confidence_not_integer"),
        (answer(confidence=150), "confidence_out_of_range"),
        (answer(confidence=-3), "confidence_out_of_range"),
        (answer(confidence=...), "missing_field:confidence"),
        (answer(verdict=...), "missing_field:verdict"),
        (answer(reasoning=None), "missing_field:reasoning"),
        (answer(supporting_evidence=...), "missing_field:supporting_evidence"),
        (answer(reasoning=["a", "b"]), "reasoning_not_string"),
        (answer(red_flags=[{"flag": "x"}]), "red_flags_not_list_of_strings"),
        (answer(supporting_evidence=7), "supporting_evidence_not_list_of_strings"),
        (json.dumps({"result": "REAL"}), "missing_field:verdict"),
    ])
    def test_named_reasons(self, text, reason):
        parsed = parse_answer(text)
        assert not parsed.valid
        assert parsed.invalid_reason == reason
        assert parsed.raw_text == text
        assert parsed.verdict is None and parsed.confidence is None

    def test_invalid_answers_keep_what_could_be_read(self):
        parsed = parse_answer(answer(confidence=150))
        assert parsed.reasoning == GOOD["reasoning"] and parsed.red_flags == ["age heaping at 40"]

    def test_first_problem_is_reported_in_field_order(self):
        parsed = parse_answer(answer(verdict="MAYBE", confidence=150))
        assert parsed.invalid_reason == "verdict_not_recognised:MAYBE"

    def test_none_is_treated_as_empty(self):
        parsed = parse_answer(None)  # type: ignore[arg-type]
        assert parsed.invalid_reason == "empty" and parsed.raw_text == ""

    def test_never_raises_on_noise(self):
        rng = random.Random(20261130)
        alphabet = '{}[]":,\\ abcREALSYNTHETIC0123456789.\n`'
        valid = 0
        for _ in range(2000):
            text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 80)))
            parsed = parse_answer(text)
            assert parsed.raw_text == text
            assert parsed.valid == (parsed.invalid_reason is None)
            valid += parsed.valid
        assert valid == 0

    def test_deeply_nested_input_does_not_crash(self):
        text = "[" * 5000 + "]" * 5000  # too deep for json: RecursionError is caught
        assert parse_answer(text).invalid_reason == "no_json"
        assert parse_answer("{" * 3000).invalid_reason == "truncated_json"
