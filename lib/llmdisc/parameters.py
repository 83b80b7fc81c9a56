"""Notebook and configuration parameters given as text or as lists, checked against their vocabulary.

papermill's ``-p`` passes a string where YAML passes a list, and ``tuple("ctgan")`` would iterate characters:
:func:`as_items` accepts a list, one string or a comma-separated string; :func:`as_choice` takes one value. Both
check against :data:`VOCABULARIES` (``docs/ARCHITECTURE.md``, "Vocabulary").
"""

from __future__ import annotations

import os
from typing import Any, Iterable, Sequence

from llmdisc import CONDITIONS, PAPER_RELEASES, RELEASES, SYNTHESIZERS
from llmdisc.errors import ConfigError

DATASET_KEYS = ("adult", "census-codes", "census-labels")
DATASETS = ("adult", "census")
"""Real tables notebooks 01 and 02 read (the key adds the encoding)."""
PROVIDERS = ("local", "ollama", "gemini", "openai", "replay")
PROMPT_VARIANTS = ("paper", "neutral")
METADATA_SOURCES = ("source", "real", "sample")
SAMPLING_MODES = ("fresh", "fixed")
CACHE_MODES = ("fill", "offline", "refresh")

VOCABULARIES: dict[str, tuple[str, ...]] = dict(
    synthesizers=SYNTHESIZERS, releases=RELEASES, paper_releases=PAPER_RELEASES, conditions=CONDITIONS,
    dataset_keys=DATASET_KEYS, datasets=DATASETS, providers=PROVIDERS, prompt_variants=PROMPT_VARIANTS,
    metadata_sources=METADATA_SOURCES, sampling_modes=SAMPLING_MODES, cache_modes=CACHE_MODES)


def _vocabulary(vocabulary: Sequence[str] | str | None) -> tuple[str, ...] | None:
    if vocabulary is None:
        return None
    if isinstance(vocabulary, str):
        if vocabulary not in VOCABULARIES:
            raise ConfigError(f"unknown vocabulary {vocabulary!r}; fix: use one of {sorted(VOCABULARIES)}")
        return VOCABULARIES[vocabulary]
    return tuple(vocabulary)


def _check(items: Iterable[str], name: str, valid: tuple[str, ...] | None) -> None:
    if valid is None:
        return
    for item in items:
        if item not in valid:
            near = [v for v in valid if v.lower() == item.lower()]
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise ConfigError(f"{name}: {item!r} is not one of {', '.join(valid)}{hint}; "
                              f"fix: give {name} as one of them, a comma-separated string or a list of them")


def as_items(value: Any, name: str, vocabulary: Sequence[str] | str | None = None, *,
             allow_empty: bool = False) -> tuple[str, ...]:
    """A list-valued parameter as a tuple of stripped items, each checked against its vocabulary.

    Args:
        value: a list or tuple, one item (``"ctgan"``) or comma-separated items; None and ``""`` mean no item.
        name: the parameter's name, for the message.
        vocabulary: the valid items (a sequence, or a name in :data:`VOCABULARIES`); None accepts any item.
        allow_empty: accept zero items.

    Returns:
        The items in the order given, stripped, duplicates and empty items dropped.

    Raises:
        ConfigError: an item outside the vocabulary or not text, or no item when ``allow_empty`` is False.
    """
    valid = _vocabulary(vocabulary)
    if value is None:
        raw: list[Any] = []
    elif isinstance(value, str):
        raw = value.split(",")
    elif isinstance(value, (list, tuple)):
        raw = list(value)
    else:
        raise ConfigError(f"{name}={value!r} is a {type(value).__name__}; fix: give a list or a "
                          "comma-separated string" + (f" of {', '.join(valid)}" if valid else ""))
    raw = [os.fspath(item) if isinstance(item, os.PathLike) else item for item in raw]
    for item in raw:
        if not isinstance(item, str):
            raise ConfigError(f"{name}: item {item!r} is a {type(item).__name__}; fix: give text items")
    items = list(dict.fromkeys(item.strip() for item in raw if item.strip()))
    if not items and not allow_empty:
        raise ConfigError(f"{name} is empty; fix: give at least one" + (f" of {', '.join(valid)}" if valid else ""))
    _check(items, name, valid)
    return tuple(items)


def cli_items(values: Sequence[str] | None) -> tuple[str, ...]:
    """A command-line list option's items (``--only 04 05``, ``--only 04,05`` or both) as :func:`as_items` gives
    them; no values give ``()``."""
    return as_items([part for value in values or () for part in value.split(",")], "items", allow_empty=True)


def as_choice(value: Any, name: str, vocabulary: Sequence[str] | str) -> str:
    """A one-value parameter (``dataset_key``, ``provider``, ``variant``, …), stripped and checked.

    Returns the stripped value; ``vocabulary`` as in :func:`as_items`.

    Raises:
        ConfigError: not text, several values, or a value outside the vocabulary.
    """
    valid = _vocabulary(vocabulary)
    if not isinstance(value, str):
        raise ConfigError(f"{name}={value!r} is a {type(value).__name__}; fix: give one of {', '.join(valid or ())}")
    text = value.strip()
    if "," in text:
        raise ConfigError(f"{name}={value!r} names several values; fix: give one of {', '.join(valid or ())}")
    _check([text], name, valid)
    return text
