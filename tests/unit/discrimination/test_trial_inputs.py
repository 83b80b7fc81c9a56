"""From a TrialSpec and the tables to the request: source table, metadata source, freshness, caching."""

from __future__ import annotations

import re
from importlib.util import find_spec
from pathlib import Path

import pandas as pd
import pytest

from llmdisc.discrimination.metadata import metadata_block
from llmdisc.discrimination.prompts import estimate_tokens, load_template, render_table
from llmdisc.discrimination.samples import build_trial_queue
from llmdisc.discrimination.trial_inputs import (
    MetadataCache,
    PreparedPrompt,
    prepare_prompt,
    token_overview,
    trial_metadata_text,
)
from llmdisc.errors import ConfigError, DataError


def _demo(name: str) -> pd.DataFrame:
    # sdmetrics ships a real table and a CTGAN copy (215 rows each); find_spec avoids its slow import.
    spec = find_spec("sdmetrics")
    assert spec is not None and spec.submodule_search_locations
    folder = Path(next(iter(spec.submodule_search_locations))) / "demos" / "single_table"
    return pd.read_csv(folder / f"student_placements_{name}.csv")


@pytest.fixture(scope="module")
def real() -> pd.DataFrame:
    return _demo("real")


@pytest.fixture(scope="module")
def synthetic(real: pd.DataFrame) -> pd.DataFrame:
    # Cut to a different size so that n_total tells the tables apart.
    return _demo("synthetic")[list(real.columns)].head(180)


def _spec(label: str = "REAL", condition: str = "C2", sampling: str = "fresh", index: int = 0):
    queue = build_trial_queue(["adult"], ["ctgan"], [condition], index + 1, run_seed=3, sampling=sampling)
    return next(s for s in queue if s.true_label == label and s.index == index)


def test_real_trials_show_real_rows_and_synthetic_trials_synthetic_rows(real, synthetic):
    for label, table in (("REAL", real), ("SYNTHETIC", synthetic)):
        prepared = prepare_prompt(_spec(label, "C1"), real=real, synthetic=synthetic, variant="paper",
                                  metadata_source="real")
        assert isinstance(prepared, PreparedPrompt)
        shown = table.iloc[prepared.row_ids].reset_index(drop=True)
        assert render_table(shown) in prepared.request.user
        assert prepared.n_total == len(table)
        assert f"first 20 rows shown out of {len(table)}" in prepared.request.user
        assert prepared.sample_seed == _spec(label, "C1").sample_seed


class TestMetadataSources:
    def test_source_describes_the_table_the_sample_came_from(self, real, synthetic):
        user = prepare_prompt(_spec("SYNTHETIC"), real=real, synthetic=synthetic, variant="paper",
                              metadata_source="source").request.user
        assert metadata_block(synthetic) in user and "Shape: 180 rows × 17 columns" in user

    def test_real_shows_the_real_tables_statistics_for_both_labels(self, real, synthetic):
        for label in ("REAL", "SYNTHETIC"):
            user = prepare_prompt(_spec(label), real=real, synthetic=synthetic, variant="paper",
                                  metadata_source="real").request.user
            assert metadata_block(real) in user

    def test_sample_describes_only_the_shown_rows(self, real, synthetic):
        prepared = prepare_prompt(_spec("SYNTHETIC"), real=real, synthetic=synthetic, variant="paper",
                                  metadata_source="sample")
        shown = synthetic.iloc[prepared.row_ids].reset_index(drop=True)
        assert metadata_block(shown) in prepared.request.user
        assert "Shape: 20 rows × 17 columns" in prepared.request.user

    def test_neutral_prompts_never_show_a_row_count(self, real, synthetic):
        for source in ("source", "real", "sample"):
            user = prepare_prompt(_spec("REAL"), real=real, synthetic=synthetic, variant="neutral",
                                  metadata_source=source).request.user
            assert "Shape: 17 columns" in user and "Total rows" not in user
            assert not re.search(r"(?<![\d.])(215|180) rows", user)  # the sample size (20) may show

    def test_c1_has_no_metadata(self, real, synthetic):
        user = prepare_prompt(_spec("REAL", "C1"), real=real, synthetic=synthetic, variant="neutral",
                              metadata_source="source").request.user
        assert "METADATA" not in user


def test_paper_fixed_source_reproduces_the_papers_c2_prompt(real, synthetic):
    # The paper: df.sample(20, random_state=42).sort_index(), metadata of the whole df, its template.
    prepared = prepare_prompt(_spec("SYNTHETIC", sampling="fixed"), real=real, synthetic=synthetic,
                              variant="paper", metadata_source="source")
    paper_sample = synthetic.sample(n=20, random_state=42).sort_index()
    expected = load_template("user_c2_paper").format(
        n_rows=20, n_total=180, table_str=paper_sample.to_markdown(index=False), n_cols=17,
        metadata_str=metadata_block(synthetic))
    assert prepared.request.user == expected
    assert prepared.row_ids == list(paper_sample.index) and prepared.sample_seed == 42


def test_fresh_queue_gives_one_distinct_prompt_per_trial_and_fixed_repeats(real, synthetic):
    cache = MetadataCache()
    for sampling, expected_distinct in (("fresh", None), ("fixed", 4)):
        queue = build_trial_queue(["adult"], ["ctgan"], ["C1", "C2"], 10, run_seed=0, sampling=sampling)
        hashes = [prepare_prompt(spec, real=real, synthetic=synthetic, variant="neutral", metadata_source="real",
                                 metadata_cache=cache).prompt_hash for spec in queue]
        assert len(set(hashes)) == (expected_distinct or len(queue))
    # Across both queues the real table's block was computed once and reused for every other C2 trial.
    assert cache.misses == 1 and cache.hits == 2 * 20 - 1


def test_paired_trials_show_the_same_rows_under_c1_and_c2(real, synthetic):
    queue = build_trial_queue(["adult"], ["ctgan"], ["C1", "C2"], 3, run_seed=5, paired=True)
    rows = {(s.true_label, s.index, s.condition): prepare_prompt(
        s, real=real, synthetic=synthetic, variant="neutral", metadata_source="real").row_ids for s in queue}
    for label in ("REAL", "SYNTHETIC"):
        for index in range(3):
            assert rows[(label, index, "C1")] == rows[(label, index, "C2")]


def test_same_spec_gives_the_same_prompt_with_or_without_the_cache(real, synthetic):
    spec = _spec("SYNTHETIC")
    plain = prepare_prompt(spec, real=real, synthetic=synthetic, variant="paper", metadata_source="source")
    cached = prepare_prompt(spec, real=real, synthetic=synthetic, variant="paper", metadata_source="source",
                            metadata_cache=MetadataCache())
    assert plain == cached


def test_cache_tells_tables_and_row_count_modes_apart(real, synthetic):
    cache = MetadataCache()
    assert cache.block(real) == metadata_block(real)
    assert cache.block(synthetic) == metadata_block(synthetic)
    assert cache.block(real, include_row_count=False) == metadata_block(real, include_row_count=False)
    assert cache.block(real) == metadata_block(real)
    assert (cache.misses, cache.hits) == (3, 1)


class TestBadInput:
    def test_unknown_metadata_source(self, real, synthetic):
        with pytest.raises(ConfigError, match=r"metadata_source='whole' is not known; fix: use one of 'source', "
                                              r"'real', 'sample'"):
            prepare_prompt(_spec(), real=real, synthetic=synthetic, variant="paper", metadata_source="whole")

    def test_tables_with_different_columns(self, real, synthetic):
        with pytest.raises(DataError, match=r"the real and ctgan tables of adult have different columns .* fix: "
                                            r"regenerate the synthetic table"):
            prepare_prompt(_spec(), real=real, synthetic=synthetic.drop(columns=["salary"]), variant="paper",
                           metadata_source="real")

    def test_source_table_smaller_than_a_sample(self, real, synthetic):
        with pytest.raises(DataError, match=r"the table has 10 rows, fewer than the 20 rows a sample needs"):
            prepare_prompt(_spec("SYNTHETIC"), real=real, synthetic=synthetic.head(10), variant="paper",
                           metadata_source="real")

    def test_unknown_variant(self, real, synthetic):
        with pytest.raises(ConfigError, match=r"prompt variant 'fancy' is not known"):
            prepare_prompt(_spec(), real=real, synthetic=synthetic, variant="fancy", metadata_source="real")


def test_trial_metadata_text_is_the_block_inside_the_c2_prompt(real, synthetic):
    for source in ("source", "real", "sample"):
        for label in ("REAL", "SYNTHETIC"):
            spec = _spec(label, "C2")
            text = trial_metadata_text(spec, real=real, synthetic=synthetic, variant="paper", metadata_source=source)
            user = prepare_prompt(spec, real=real, synthetic=synthetic, variant="paper",
                                  metadata_source=source).request.user
            assert f"--- STATISTICAL METADATA ---\n{text}\n\n**Dataset Info:**" in user
    # The paper's source metadata differs by label (label-revealing); real metadata does not.
    blocks = {(source, label): trial_metadata_text(_spec(label), real=real, synthetic=synthetic, variant="neutral",
                                                   metadata_source=source)
              for source in ("source", "real") for label in ("REAL", "SYNTHETIC")}
    assert blocks[("source", "REAL")] != blocks[("source", "SYNTHETIC")]
    assert blocks[("real", "REAL")] == blocks[("real", "SYNTHETIC")]


def test_token_overview_measures_every_rendered_prompt(real, synthetic):
    specs = build_trial_queue(["adult"], ["ctgan"], ["C1", "C2"], 1, run_seed=0)
    table = token_overview(specs, real=real, synthetic=synthetic, variants=["paper", "neutral"],
                           metadata_sources=["source", "sample"])
    # 2 C1 specs x 2 variants + 2 C2 specs x 2 variants x 2 sources
    assert len(table) == 4 + 8
    assert set(table.loc[table["condition"] == "C1", "metadata_source"]) == {"-"}
    first = table.iloc[0]
    prepared = prepare_prompt(specs[0], real=real, synthetic=synthetic, variant="paper", metadata_source="real")
    assert first["prompt_hash"] == prepared.prompt_hash
    assert first["user_tokens"] == estimate_tokens(prepared.request.user)
    assert (table["total_tokens"] == table["system_tokens"] + table["user_tokens"]).all()
    c2 = table[table["condition"] == "C2"]
    assert (c2["user_tokens"].min() > table.loc[table["condition"] == "C1", "user_tokens"].max())
