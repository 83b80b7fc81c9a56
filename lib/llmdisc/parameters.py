"""Notebook and configuration parameters given as text or as lists, checked against their vocabulary.

papermill's ``-p name value`` passes a string, YAML and ``-y`` pass lists; a list-valued parameter given one
string must not be iterated character by character (``tuple("ctgan")`` is ``('c', 't', 'g', 'a', 'n')``).
:func:`as_items` turns a list, a tuple, one string or a comma-separated string into a tuple of stripped items
and checks each against its vocabulary; :func:`as_choice` does the same for a parameter that takes one value.
The vocabularies are those of ``docs/ARCHITECTURE.md`` ("Vocabulary"): synthesizers and conditions
(:data:`llmdisc.SYNTHESIZERS`, :data:`llmdisc.CONDITIONS`), :data:`DATASET_KEYS`, :data:`PROVIDERS`,
:data:`PROMPT_VARIANTS`, :data:`METADATA_SOURCES`, :data:`SAMPLING_MODES`, :data:`CACHE_MODES`. The stages
that own a vocabulary re-use these tuples, and ``tests/unit/test_parameters.py`` checks they agree.
"""

from __future__ import annotations

import os
from typing import Any, Iterable, Sequence

from llmdisc import CONDITIONS, PAPER_RELEASES, RELEASES, SYNTHESIZERS
from llmdisc.errors import ConfigError

DATASET_KEYS = ("adult", "census-codes", "census-labels")
"""Dataset keys (``llmdisc.data.dataset_key``)."""
DATASETS = ("adult", "census")
"""Real tables notebooks 01 and 02 read (the key adds the encoding)."""
PROVIDERS = ("local", "ollama", "gemini", "openai", "replay")
"""Provider names (``llmdisc.discrimination.providers.registry.PROVIDERS``)."""
PROMPT_VARIANTS = ("paper", "neutral")
METADATA_SOURCES = ("source", "real", "sample")
SAMPLING_MODES = ("fresh", "fixed")
CACHE_MODES = ("fill", "offline", "refresh")

VOCABULARIES: dict[str, tuple[str, ...]] = {
    "synthesizers": SYNTHESIZERS,
    "releases": RELEASES,
    "paper_releases": PAPER_RELEASES,
    "conditions": CONDITIONS,
    "dataset_keys": DATASET_KEYS,
    "datasets": DATASETS,
    "providers": PROVIDERS,
    "prompt_variants": PROMPT_VARIANTS,
    "metadata_sources": METADATA_SOURCES,
    "sampling_modes": SAMPLING_MODES,
    "cache_modes": CACHE_MODES,
}
"""Vocabulary name -> its values, for :func:`as_items` / :func:`as_choice` called with a name."""


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
        value: a list or tuple of items, one item as a string (``"ctgan"``), or comma-separated items
            (``"ctgan, tvae"``). None and ``""`` mean no item.
        name: the parameter's name, for the message (``synthesizers``).
        vocabulary: the valid items (a sequence, or a name in :data:`VOCABULARIES`); None accepts any
            non-empty item (paths, column names).
        allow_empty: accept zero items (e.g. ``labels_dir: []`` meaning "the default folders").

    Returns:
        The items in the order given, stripped, duplicates dropped (first kept); empty items of a
        comma-separated string (``"a,,b"``, a trailing comma) are skipped.

    Raises:
        ConfigError: an item outside the vocabulary (the message names it and lists the valid ones), an item
            that is not text, or no item when ``allow_empty`` is False.
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
    items: list[str] = []
    for item in raw:
        if isinstance(item, os.PathLike):
            item = os.fspath(item)
        if not isinstance(item, str):
            raise ConfigError(f"{name}: item {item!r} is a {type(item).__name__}; fix: give text items")
        item = item.strip()
        if item and item not in items:
            items.append(item)
    if not items and not allow_empty:
        raise ConfigError(f"{name} is empty; fix: give at least one" + (f" of {', '.join(valid)}" if valid else ""))
    _check(items, name, valid)
    return tuple(items)


def cli_items(values: Sequence[str] | None) -> tuple[str, ...]:
    """A command-line list option's items: ``--only 04 05``, ``--only 04,05`` or both, stripped, repeats dropped
    (first kept), empty items skipped; no values (None or ``[]``) give ``()``."""
    return as_items([part for value in values or () for part in value.split(",")], "items", allow_empty=True)


def as_choice(value: Any, name: str, vocabulary: Sequence[str] | str) -> str:
    """A one-value parameter (``dataset_key``, ``provider``, ``variant``, …), stripped and checked.

    Args:
        value: the value (text).
        name: the parameter's name, for the message.
        vocabulary: the valid values (a sequence, or a name in :data:`VOCABULARIES`).

    Returns:
        The stripped value.

    Raises:
        ConfigError: not text, several values, or a value outside the vocabulary (names it and the valid ones).
    """
    valid = _vocabulary(vocabulary)
    if not isinstance(value, str):
        raise ConfigError(f"{name}={value!r} is a {type(value).__name__}; fix: give one of {', '.join(valid or ())}")
    text = value.strip()
    if "," in text:
        raise ConfigError(f"{name}={value!r} names several values; fix: give one of {', '.join(valid or ())}")
    _check([text], name, valid)
    return text
