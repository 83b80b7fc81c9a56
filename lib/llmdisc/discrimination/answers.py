"""The discriminator's answer: its schema (sent to providers) and a parser that never raises.

The LLM answers with one JSON object (docs/protocol.md §1) of the five :data:`ANSWER_FIELDS`.
:data:`ANSWER_JSON_SCHEMA` caps every length, since small models loop to the token limit without caps, and uses
only keywords that Ollama, Gemini, llama.cpp grammars and OpenAI's non-strict ``json_schema`` all accept (OpenAI
*strict* mode rejects ``maxLength``). Caps steer generation only: :func:`parse_answer` does not reject an
over-long answer.

Parsing decisions (each pinned by a test):

* JSON is looked for in the whole text, then a fenced block, then the first balanced ``{…}`` holding a
  ``verdict``. Trailing commas are removed and a single-key wrapper (``{"answer": {...}}``) is unwrapped.
* ``verdict`` is normalised ("Real." → REAL); ``confidence`` accepts ``85``, ``85.0`` and ``"85"`` only.
* All five fields are required (``null`` counts as missing); a list field given as one string becomes a
  one-item list. Extra keys are ignored.
* When the answer is invalid, ``verdict`` and ``confidence`` are None; the raw text is always kept.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

VERDICTS = ("REAL", "SYNTHETIC")
REASONING_MAX_CHARS = 600
LIST_MAX_ITEMS = 4
"""Cap on the number of ``red_flags`` / ``supporting_evidence`` items."""
ITEM_MAX_CHARS = 120
"""Cap on each list item (characters). With these caps a grammar-constrained answer ends after about 1,000
tokens even when a small model loops inside a list (see ``GenerateConfig.max_tokens``)."""

_Item = Annotated[str, StringConstraints(max_length=ITEM_MAX_CHARS)]


class VerdictAnswer(BaseModel):
    """The answer the discriminator must return (the pydantic form of :data:`ANSWER_JSON_SCHEMA`)."""

    model_config = ConfigDict(extra="forbid")

    verdict: Literal["REAL", "SYNTHETIC"]
    """REAL: the sample was collected from real observations; SYNTHETIC: a model generated it."""
    confidence: int = Field(ge=0, le=100)
    """Confidence in the verdict, percent: 0 = no confidence, 50 = a coin flip, 100 = certain."""
    reasoning: str = Field(max_length=REASONING_MAX_CHARS)
    """Free-text explanation referring to specific observations."""
    red_flags: list[_Item] = Field(max_length=LIST_MAX_ITEMS)
    """Patterns that suggest a synthetic origin."""
    supporting_evidence: list[_Item] = Field(max_length=LIST_MAX_ITEMS)
    """Patterns that suggest a real origin."""


def _list_schema() -> dict[str, Any]:
    return {"type": "array", "items": {"type": "string", "maxLength": ITEM_MAX_CHARS},
            "maxItems": LIST_MAX_ITEMS}


ANSWER_FIELDS = ("verdict", "confidence", "reasoning", "red_flags", "supporting_evidence")

ANSWER_JSON_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "verdict": {"type": "string", "enum": list(VERDICTS)},
        "confidence": {"type": "integer", "minimum": 0, "maximum": 100},
        "reasoning": {"type": "string", "maxLength": REASONING_MAX_CHARS},
        "red_flags": _list_schema(),
        "supporting_evidence": _list_schema(),
    },
    "required": list(ANSWER_FIELDS),
    "additionalProperties": False,
}
"""JSON Schema sent to each provider's constrained-output mechanism (same content as
:class:`VerdictAnswer`)."""


@dataclass(frozen=True)
class ParsedAnswer:
    """The outcome of parsing one raw answer; never an exception."""

    verdict: str | None
    """``REAL`` or ``SYNTHETIC`` when valid, else None (so is ``confidence``, 0–100)."""
    confidence: int | None
    reasoning: str | None
    red_flags: list[str]
    supporting_evidence: list[str]
    invalid_reason: str | None
    """None when valid, else a named reason (``no_json``, ``missing_field:confidence``, …)."""
    raw_text: str
    method: str = ""
    """How the JSON object was found: ``strict``, ``fenced``, ``embedded`` (``+repaired``, ``+unwrapped``)."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Keys outside the schema that the model added (ignored for scoring)."""

    @property
    def valid(self) -> bool:
        """True when the answer has a recognised verdict and an integer confidence in 0–100."""
        return self.invalid_reason is None


_FENCE = re.compile(r"```(?:json|JSON)?[ \t]*\n?(.*?)```", re.DOTALL)
_STRING = r'"(?:\\.|[^"\\])*(?:"|\\?\Z)'  # a JSON string; an unclosed one runs to the end of the text
_STRING_OR_BRACKET = re.compile(_STRING + r"|[{}\[\]]", re.DOTALL)
_STRING_OR_TRAILING_COMMA = re.compile(f"({_STRING})" + r"|,(\s*[}\]])", re.DOTALL)
_MAX_OBJECT_STARTS = 256


def _scan_balanced(text: str, start: int) -> int | None:
    """Return the index just past the ``}`` closing the ``{`` at ``start`` (string-aware), or None."""
    depth = 0
    for token in _STRING_OR_BRACKET.finditer(text, start):
        if token.group() in ("{", "["):
            depth += 1
        elif token.group() in ("}", "]"):
            depth -= 1
            if depth == 0:
                return token.end()
    return None


def _remove_trailing_commas(text: str) -> str:
    """Drop commas directly before ``}`` or ``]`` outside strings (a string, closed or not, is kept as is)."""
    return _STRING_OR_TRAILING_COMMA.sub(lambda m: m.group(1) or m.group(2), text)


def _loads(text: str) -> tuple[Any, bool] | None:
    """json.loads, retrying once with trailing commas removed; returns (value, repaired) or None."""
    try:
        return json.loads(text), False
    except (json.JSONDecodeError, RecursionError):
        pass
    try:  # a text without trailing commas just fails again
        return json.loads(_remove_trailing_commas(text)), True
    except (json.JSONDecodeError, RecursionError):
        return None


def _has_verdict(value: Any) -> bool:
    return isinstance(value, dict) and ("verdict" in value or (
        len(value) == 1 and isinstance(next(iter(value.values())), dict)
        and "verdict" in next(iter(value.values()))))


def _find_json(text: str) -> tuple[Any, str] | str:
    """Locate the answer's JSON value; return (value, method) or an invalid reason."""
    stripped = text.strip()
    if not stripped:
        return "empty"
    whole = _loads(stripped)
    if whole is not None:
        return whole[0], "strict" + ("+repaired" if whole[1] else "")
    for match in _FENCE.finditer(text):
        fenced = _loads(match.group(1).strip())
        if fenced is not None:
            return fenced[0], "fenced" + ("+repaired" if fenced[1] else "")
    first: tuple[Any, str] | None = None
    unbalanced = False
    # A stray unclosed "{" in prose must not hide a later complete object, so every "{" is tried;
    # the cap keeps pathological inputs ("{" * 10**5) linear-ish.
    for start in [m.start() for m in re.finditer(r"\{", text)][:_MAX_OBJECT_STARTS]:
        end = _scan_balanced(text, start)
        if end is None:
            unbalanced = True
            continue
        parsed = _loads(text[start:end])
        if parsed is None or not isinstance(parsed[0], dict):
            continue
        candidate = (parsed[0], "embedded" + ("+repaired" if parsed[1] else ""))
        if _has_verdict(parsed[0]):
            return candidate
        first = first or candidate
    if first is not None:
        return first
    return "truncated_json" if unbalanced else "malformed_json" if "{" in text else "no_json"


def _normalise_verdict(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    cleaned = value.strip().strip("\"'`*_.,;:!?()[] \t\n").upper()
    return cleaned if cleaned in VERDICTS else None


def _read_confidence(value: Any) -> int | str:
    """Return the confidence as int, or the invalid reason."""
    if not (isinstance(value, int) and not isinstance(value, bool)
            or isinstance(value, float) and value.is_integer()
            or isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*", value)):
        return "confidence_not_integer"
    number = int(value)
    return number if 0 <= number <= 100 else "confidence_out_of_range"


def _read_list(name: str, value: Any) -> list[str] | str:
    """The list's items as strings (numbers turned into text; None: no items), or the invalid reason."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, list) and all(isinstance(item, (str, int, float)) and not isinstance(item, bool)
                                       for item in value):
        return [item if isinstance(item, str) else str(item) for item in value]
    return f"{name}_not_list_of_strings"


def _invalid(raw: str, reason: str, method: str = "", reasoning: str | None = None,
             red_flags: list[str] | None = None, evidence: list[str] | None = None,
             extra: dict[str, Any] | None = None) -> ParsedAnswer:
    return ParsedAnswer(verdict=None, confidence=None, reasoning=reasoning, red_flags=red_flags or [],
                        supporting_evidence=evidence or [], invalid_reason=reason, raw_text=raw,
                        method=method, extra=extra or {})


def parse_answer(text: str) -> ParsedAnswer:
    """Parse a model's raw answer into a :class:`ParsedAnswer`; never raises.

    ``text`` None is treated as empty. An invalid answer's ``invalid_reason`` names the first problem found, in the
    order verdict, confidence, reasoning, red_flags, supporting_evidence.
    """
    raw = text if isinstance(text, str) else ("" if text is None else str(text))
    found = _find_json(raw)
    if isinstance(found, str):
        return _invalid(raw, found)
    value, method = found
    if not isinstance(value, dict):
        return _invalid(raw, f"json_not_object:{type(value).__name__}", method)
    if "verdict" not in value and len(value) == 1 and isinstance(next(iter(value.values())), dict):
        value = next(iter(value.values()))  # {"answer": {...}} and similar single-key wrappers
        method += "+unwrapped"
    extra = {k: v for k, v in value.items() if k not in ANSWER_FIELDS}
    fields = {k: value.get(k) for k in ANSWER_FIELDS}
    reasoning = fields["reasoning"] if isinstance(fields["reasoning"], str) else None
    flags, evidence = (_read_list(name, fields[name]) for name in ("red_flags", "supporting_evidence"))
    partial = {"method": method, "reasoning": reasoning, "extra": extra,
               "red_flags": flags if isinstance(flags, list) else [],
               "evidence": evidence if isinstance(evidence, list) else []}
    for name in ANSWER_FIELDS:
        if fields[name] is None:
            return _invalid(raw, f"missing_field:{name}", **partial)
    verdict = _normalise_verdict(fields["verdict"])
    if verdict is None:
        shown = fields["verdict"] if isinstance(fields["verdict"], str) else json.dumps(fields["verdict"])
        return _invalid(raw, f"verdict_not_recognised:{shown.strip()[:40]}", **partial)
    confidence = _read_confidence(fields["confidence"])
    if isinstance(confidence, str):
        return _invalid(raw, confidence, **partial)
    if reasoning is None:
        return _invalid(raw, "reasoning_not_string", **partial)
    for problem in (flags, evidence):
        if isinstance(problem, str):
            return _invalid(raw, problem, **partial)
    assert isinstance(flags, list) and isinstance(evidence, list)
    return ParsedAnswer(verdict=verdict, confidence=confidence, reasoning=reasoning, red_flags=flags,
                        supporting_evidence=evidence, invalid_reason=None, raw_text=raw, method=method,
                        extra=extra)
