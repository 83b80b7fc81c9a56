"""The prompts: the paper's texts (flaws included) and a neutral variant (docs/protocol.md §4, §8 row 3).

Templates are package files (``llmdisc/discrimination/templates/*.txt``) filled with ``str.format``; ``paper``
reproduces the published ``prompt_builder.py`` byte for byte. Entry point: :func:`build_prompt`. The paper's Gemini
caller appended "IMPORTANT: Respond ONLY with valid JSON." to the user text; we do not: prompts are
provider-independent and the schema goes to each provider's constrained-output mechanism.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache
from importlib import resources

import pandas as pd

from llmdisc import CONDITIONS
from llmdisc.discrimination.answers import ANSWER_JSON_SCHEMA
from llmdisc.discrimination.providers.base import PromptRequest, request_hash
from llmdisc.errors import ConfigError

PROMPT_VARIANTS = ("paper", "neutral")
"""``paper``: the published texts; ``neutral``: without synthesizer names, "first n rows", dataset size."""


@lru_cache(maxsize=None)
def load_template(name: str) -> str:
    """The text of ``llmdisc/discrimination/templates/<name>.txt`` (e.g. ``system_paper``) exactly as stored;
    ConfigError when there is no such template."""
    path = resources.files("llmdisc.discrimination") / "templates" / f"{name}.txt"
    if not path.is_file():
        raise ConfigError(f"prompt template {name!r} is missing from llmdisc/discrimination/templates; fix: "
                          "reinstall the package (pip install -e .) or restore "
                          "lib/llmdisc/discrimination/templates/")
    return path.read_text(encoding="utf-8")


def render_table(sample: pd.DataFrame) -> str:
    """Render a sample as the Markdown table the LLM (and the human labeller) sees: the paper's
    ``sample.to_markdown(index=False)``, no trailing newline."""
    return sample.to_markdown(index=False)


def system_prompt(variant: str = "neutral") -> str:
    """Return the system prompt of a variant (the same for C1 and C2)."""
    _check_variant(variant)
    return load_template(f"system_{variant}")


def _check_variant(variant: str) -> None:
    if variant not in PROMPT_VARIANTS:
        raise ConfigError(f"prompt variant {variant!r} is not known; fix: use 'paper' or 'neutral'")


def build_prompt(sample: pd.DataFrame, *, condition: str, variant: str = "neutral",
                 metadata_text: str | None = None, n_total: int | None = None) -> PromptRequest:
    """Build the :class:`~llmdisc.discrimination.providers.base.PromptRequest` of one trial (with
    :data:`~llmdisc.discrimination.answers.ANSWER_JSON_SCHEMA`).

    Args:
        metadata_text: The metadata block (:func:`llmdisc.discrimination.metadata.metadata_block`); required for C2,
            refused for C1.
        n_total: Row count of the table the sample came from; required by ``paper``, ignored by ``neutral``.

    ConfigError for an unknown condition or variant, C2 without metadata, C1 with it, paper without n_total.
    """
    _check_variant(variant)
    if condition not in CONDITIONS:
        raise ConfigError(f"condition {condition!r} is not known; fix: use 'C1' (table only) or 'C2' "
                          "(table + metadata)")
    if condition == "C2" and metadata_text is None:
        raise ConfigError("condition C2 shows a metadata block but metadata_text is None; fix: pass "
                          "metadata_text=llmdisc.discrimination.metadata.metadata_block(table)")
    if condition == "C1" and metadata_text is not None:
        raise ConfigError("condition C1 shows the table only but metadata_text was given; fix: pass "
                          "metadata_text=None for C1 or use condition='C2'")
    if variant == "paper" and n_total is None:
        raise ConfigError("the paper prompt prints the source table's row count but n_total is None; fix: "
                          "pass n_total=len(source_table)")
    user = load_template(f"user_{condition.lower()}_{variant}").format(
        n_rows=len(sample), n_total=n_total, table_str=render_table(sample), n_cols=sample.shape[1],
        col_names=", ".join(str(c) for c in sample.columns), metadata_str=metadata_text)
    return PromptRequest(system=system_prompt(variant), user=user, json_schema=ANSWER_JSON_SCHEMA)


def prompt_hash(request: PromptRequest) -> str:
    """Return the sha256 (hex) of a request (:func:`~llmdisc.discrimination.providers.base.request_hash`); equal
    hashes mean byte-identical prompts."""
    return request_hash(request)


_TOKEN_PIECES = re.compile(r"[^\W\d_]+|\d{1,3}|[^\w\s]+|_+|\s{2,}")
TOKENS_PER_PIECE = 1.23
"""SmolLM2 tokens per regex piece (1.22–1.26 on 32 Adult prompts; :func:`estimate_tokens` within −3 %…+1 %)."""


def estimate_tokens(text: str) -> int:
    """Estimate the number of tokens of a prompt without loading a tokenizer.

    Counts regex pieces roughly as Llama-family BPE splits (letter runs, up to 3 digits, punctuation runs,
    2+ whitespace) times :data:`TOKENS_PER_PIECE`, rounded up; 0 for an empty text. Calibrated on SmolLM2-135M;
    other tokenizers differ by some tens of percent, so use it to compare prompts, not as a billing figure.
    """
    return math.ceil(TOKENS_PER_PIECE * len(_TOKEN_PIECES.findall(text)))
