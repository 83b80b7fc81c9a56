"""List- and one-value parameters given as text or lists (``llmdisc.parameters``), one test per vocabulary.

Each vocabulary is checked three ways: the stage that owns it holds the same values (so a new synthesizer or
provider cannot be forgotten here), one item given as a string is one item (not its characters), and a value
outside it is refused with an error naming the value and every valid one.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import llmdisc
from llmdisc.errors import ConfigError
from llmdisc.parameters import VOCABULARIES, as_choice, as_items, cli_items


def _owned_by_the_stage(name: str) -> tuple[str, ...]:
    """The vocabulary as the stage that uses it defines it."""
    from llmdisc.data.datasets import ENCODINGS, dataset_key
    from llmdisc.discrimination.cache import CACHE_MODES
    from llmdisc.discrimination.metadata import METADATA_SOURCES
    from llmdisc.discrimination.prompts import PROMPT_VARIANTS
    from llmdisc.discrimination.providers.registry import PROVIDERS
    from llmdisc.discrimination.samples import SAMPLING_MODES

    return {
        "synthesizers": llmdisc.SYNTHESIZERS,
        "releases": llmdisc.RELEASES,
        "paper_releases": llmdisc.PAPER_RELEASES,
        "conditions": llmdisc.CONDITIONS,
        "dataset_keys": tuple(dataset_key(d, e) for d, encodings in ENCODINGS.items() for e in encodings),
        "datasets": tuple(ENCODINGS),
        "providers": PROVIDERS,
        "prompt_variants": PROMPT_VARIANTS,
        "metadata_sources": METADATA_SOURCES,
        "sampling_modes": SAMPLING_MODES,
        "cache_modes": CACHE_MODES,
    }[name]


@pytest.mark.parametrize("name", sorted(VOCABULARIES))
def test_each_vocabulary_agrees_with_its_stage_and_is_enforced(name: str) -> None:
    valid = VOCABULARIES[name]
    assert sorted(valid) == sorted(_owned_by_the_stage(name))
    first, last = valid[0], valid[-1]
    assert as_items(first, name, name) == (first,)  # one string is one item, not its characters
    assert as_items(f" {first} ,{last}, ", name, name) == tuple(dict.fromkeys((first, last)))
    assert as_items([last, first], name, name) == tuple(dict.fromkeys((last, first)))
    assert as_choice(f" {last} ", name, name) == last
    bad = first + "x"
    for check in (lambda: as_items(f"{first},{bad}", name, name), lambda: as_choice(bad, name, name)):
        with pytest.raises(ConfigError) as info:
            check()
        message = str(info.value)
        assert f"{name}: {bad!r} is not one of {', '.join(valid)}" in message and "fix:" in message


def test_tuple_of_a_string_no_longer_slips_through_the_trial_config() -> None:
    from llmdisc.discrimination.trial_runs import TrialRunConfig

    config = TrialRunConfig(synthesizers="ctgan", conditions="C1").effective()
    assert config.synthesizers == ("ctgan",) and config.conditions == ("C1",)
    config = TrialRunConfig(synthesizers="tvae, ctgan", conditions=["C2", "C1"]).effective()
    assert config.synthesizers == ("tvae", "ctgan") and config.conditions == ("C2", "C1")
    with pytest.raises(ConfigError, match=re.escape("synthesizers: 'c' is not one of gaussian_copula, ctgan, tvae")):
        TrialRunConfig(synthesizers=tuple("ctgan"))
    with pytest.raises(ConfigError, match=re.escape("conditions: 'C' is not one of C1, C2")):
        TrialRunConfig(conditions=tuple("C1"))
    for field, value, vocabulary in (("provider", "gemeni", "local, ollama, gemini, openai, replay"),
                                     ("dataset_key", "census", "adult, census-codes, census-labels"),
                                     ("variant", "Neutral", "paper, neutral"),
                                     ("metadata_source", "synthetic", "source, real, sample"),
                                     ("sampling", "random", "fresh, fixed")):
        with pytest.raises(ConfigError, match=re.escape(f"{field}: {value!r} is not one of {vocabulary}")):
            TrialRunConfig(**{field: value})


def test_free_items_empty_values_and_wrong_types() -> None:
    assert as_items("../shared/reference/results/human", "labels_dir") == ("../shared/reference/results/human",)
    assert as_items([Path("a"), "b", "a"], "labels_dir") == ("a", "b")  # paths as text, repeats dropped
    assert as_items([], "labels_dir", allow_empty=True) == ()
    assert as_items("", "labels_dir", allow_empty=True) == ()
    with pytest.raises(ConfigError, match="synthesizers is empty; fix: give at least one of gaussian_copula"):
        as_items(" , ", "synthesizers", "synthesizers")
    with pytest.raises(ConfigError, match="synthesizers=3 is a int; fix: give a list or a comma-separated string"):
        as_items(3, "synthesizers", "synthesizers")
    with pytest.raises(ConfigError, match=r"conditions: item 1 is a int; fix: give text items"):
        as_items(["C1", 1], "conditions", "conditions")
    with pytest.raises(ConfigError, match="names several values; fix: give one of paper, neutral"):
        as_choice("paper,neutral", "variant", "prompt_variants")
    with pytest.raises(ConfigError, match="unknown vocabulary 'synths'"):
        as_items("ctgan", "synthesizers", "synths")
    with pytest.raises(ConfigError, match=re.escape("(did you mean 'C1'?)")):
        as_items("c1", "conditions", "conditions")


def test_a_command_line_list_takes_spaces_commas_or_both() -> None:
    assert cli_items(["04, 05", "06", "04"]) == ("04", "05", "06")  # stripped, the repeat dropped
    assert cli_items(["c2st,", " ", "joint"]) == ("c2st", "joint")  # empty items skipped
    assert cli_items(None) == () and cli_items([]) == ()
