"""The prompts: the paper's texts (flaws included) and a neutral variant (docs/protocol.md §4, §8 row 3).

Templates are package files (``llmdisc/discrimination/templates/*.txt``), read as UTF-8 and filled with ``str.format``.

* ``paper`` reproduces the published ``prompt_builder.py`` byte for byte: the system prompt names
  CTGAN, TVAE and GaussianCopula; the table header reads "first {n} rows shown out of {n_total}"
  (the rows are in fact a random sample); "Dataset Info" gives the full row count, which fingerprints
  UCI Adult (30,162 rows).
* ``neutral`` (our default) drops all three: no synthesizer names, a header saying the rows were drawn
  at random, and no dataset size.

The same inputs give byte-identical prompts (pure functions of their arguments). The paper's Gemini
caller appended "IMPORTANT: Respond ONLY with valid JSON." to the user text; we do not: prompts are
provider-independent and the answer's schema goes to each provider's constrained-output mechanism.
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
    """Return the text of ``llmdisc/discrimination/templates/<name>.txt`` exactly as stored (UTF-8).

    Args:
        name: Template name without extension (``system_paper``, ``user_c1_neutral``, …).

    Raises:
        ConfigError: no such template.
    """
    path = resources.files("llmdisc.discrimination") / "templates" / f"{name}.txt"
    if not path.is_file():
        raise ConfigError(f"prompt template {name!r} is missing from llmdisc/discrimination/templates; fix: reinstall the "
                          "package (pip install -e .) or restore lib/llmdisc/discrimination/templates/")
    return path.read_text(encoding="utf-8")


def render_table(sample: pd.DataFrame) -> str:
    """Render a sample as the Markdown table the LLM (and the human labeller) sees.

    Args:
        sample: The rows to show, with their column names.

    Returns:
        ``sample.to_markdown(index=False)`` (the paper's rendering, via ``tabulate``): no index column,
        numbers right-aligned, text left-aligned, no trailing newline.
    """
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
    """Build the request for one trial.

    Args:
        sample: The rows shown (usually 20), columns in the table's order.
        condition: ``C1`` (table only) or ``C2`` (table + metadata).
        variant: ``paper`` or ``neutral``.
        metadata_text: The metadata block (:func:`llmdisc.discrimination.metadata.metadata_block`); required for C2,
            refused for C1 (it would not be shown).
        n_total: Row count of the table the sample came from; required by the ``paper`` variant (it
            prints it twice), ignored by ``neutral``.

    Returns:
        A :class:`~llmdisc.discrimination.providers.base.PromptRequest` with the system text, the user text and
        :data:`llmdisc.discrimination.answers.ANSWER_JSON_SCHEMA`.

    Raises:
        ConfigError: unknown condition or variant; C2 without metadata; C1 with metadata; paper without
            n_total.
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
        n_rows=len(sample),
        n_total=n_total,
        table_str=render_table(sample),
        n_cols=sample.shape[1],
        col_names=", ".join(str(c) for c in sample.columns),
        metadata_str=metadata_text,
    )
    return PromptRequest(system=system_prompt(variant), user=user, json_schema=ANSWER_JSON_SCHEMA)


def prompt_hash(request: PromptRequest) -> str:
    """Return the sha256 (hex) identifying a request; equal hashes mean byte-identical prompts.

    Same as :func:`llmdisc.discrimination.providers.base.request_hash` (system, user and schema, canonical JSON).
    """
    return request_hash(request)


_TOKEN_PIECES = re.compile(r"[^\W\d_]+|\d{1,3}|[^\w\s]+|_+|\s{2,}")
TOKENS_PER_PIECE = 1.23
"""SmolLM2 tokens per regex piece, measured on 32 Adult prompts (paper/neutral × C1/C2 × 4 samples,
system and user texts): 1.22–1.26, so :func:`estimate_tokens` was within −3 %…+1 % of that tokenizer."""


def estimate_tokens(text: str) -> int:
    """Estimate the number of tokens of a prompt without loading a tokenizer.

    Splits the text into pieces: runs of letters, groups of up to 3 digits, runs of punctuation, runs of
    underscores and runs of 2+ whitespace characters (the padding of Markdown tables), as BPE
    tokenizers of the Llama family do roughly; then multiplies by :data:`TOKENS_PER_PIECE` and rounds up.
    Calibrated against the SmolLM2-135M tokenizer (the embedded model's GGUF vocabulary, via llama.cpp's
    ``/tokenize``); other models' tokenizers (Llama 3.1, Gemini) differ by some tens of percent, so use it
    to compare prompts and budget context, not as a billing figure.

    Args:
        text: Any prompt text.

    Returns:
        The estimated token count (0 for an empty text).
    """
    return math.ceil(TOKENS_PER_PIECE * len(_TOKEN_PIECES.findall(text)))
