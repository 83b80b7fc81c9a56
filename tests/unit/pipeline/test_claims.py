"""The claims table answers the paper from the committed tables: every number it prints is re-read here from the
table and row it names, and its verdicts move when the numbers do."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from llmdisc.paths import project_root
from llmdisc.pipeline.claims import claims, claims_markdown
from llmdisc.pipeline.readme import readme_block, render_claims_block

TABLES = project_root() / "results" / "tables"


def _value(quote) -> float:
    frame = pd.read_csv(TABLES / f"{quote.table}.csv")
    for key, value in quote.where:
        frame = frame[frame[key].astype(str) == value]
    assert len(frame) == 1, quote
    return float(frame[quote.column].iloc[0])


def test_every_number_a_claim_prints_is_the_number_in_the_table_it_names():
    found = claims(TABLES)
    assert [c.paper.split(":")[0] for c in found] == [
        "Gemini tells the releases apart", "LLaMA cannot tell real from synthetic",
        "Metadata lowers Gemini's DRS on Census", "The releases look real to a classifier",
        "Humans reach DRS 66.4 and do not agree with the models (Spearman ρ -0.018)"]
    block = readme_block(name="claims")
    for claim in found:
        assert claim.quotes, claim.paper
        row = next(line for line in block.splitlines() if line.startswith(f"| {claim.paper} |"))
        for quote in claim.quotes:
            assert _value(quote) == pytest.approx(quote.value), quote
            assert quote.text in row, (quote, row)
        for table in claim.tables:
            assert f"results/tables/{table}.csv" in row


def test_the_readme_block_is_the_rendering_of_the_committed_tables():
    assert readme_block(name="claims") == render_claims_block(), "README claims drifted; run `make reproduce`"


def test_the_paper_s_printed_numbers_and_the_verdicts_the_records_support():
    by_start = {c.paper.split(":")[0]: c for c in claims(TABLES)}
    metadata = by_start["Metadata lowers Gemini's DRS on Census"]
    assert "p 0.005" in metadata.paper and "p 0.037" in metadata.paper  # as the paper printed them
    assert metadata.verdict == "does not hold"
    assert "DRS 100" in metadata.measured and "occupation 7,804 > 526" in metadata.measured
    assert by_start["The releases look real to a classifier"].verdict == "does not hold"
    assert by_start["LLaMA cannot tell real from synthetic"].verdict.startswith("holds")
    assert by_start["Gemini tells the releases apart"].verdict == "cannot be tested without a capable model"


def _copy(tmp_path: Path) -> Path:
    shutil.copytree(TABLES, tmp_path / "tables")
    return tmp_path / "tables"


def test_verdicts_follow_the_numbers_not_the_text(tmp_path):
    tables = _copy(tmp_path)
    # a C2ST that cannot tell the paper's releases apart: the claim that they look real then holds
    head = pd.read_csv(tables / "baselines_headline.csv")
    paper = head["synthetic_method"].str.startswith("paper_")
    head.loc[paper, "c2st_auc_hist_gb"] = 0.52
    head.to_csv(tables / "baselines_headline.csv", index=False)
    # LLaMA answering both labels: the one-label reading no longer holds
    data = pd.read_csv(tables / "paper_datasets_from_trials.csv")
    data.loc[data["model"] == "llama-3.1-8b-instant", "Pred_REAL_rate"] = 55.0
    data.to_csv(tables / "paper_datasets_from_trials.csv", index=False)
    # a block that gives nothing away and cells of many distinct answers: the metadata drop holds
    rule = pd.read_csv(tables / "paper_metadata_rule.csv").assign(rule_drs=0.0)
    rule.to_csv(tables / "paper_metadata_rule.csv", index=False)
    eff = pd.read_csv(tables / "paper_effective_n.csv").assign(effective_n=12.0)
    eff.to_csv(tables / "paper_effective_n.csv", index=False)
    by_start = {c.paper.split(":")[0]: c for c in claims(tables)}
    assert by_start["The releases look real to a classifier"].verdict == "holds"
    assert "0.52, 0.52, 0.52" in by_start["The releases look real to a classifier"].measured
    assert by_start["LLaMA cannot tell real from synthetic"].verdict.startswith("does not hold")
    assert by_start["Metadata lowers Gemini's DRS on Census"].verdict == "holds"


def test_without_the_paper_s_records_the_table_says_how_to_get_them(tmp_path):
    tables = _copy(tmp_path)
    for path in tables.glob("paper_*.csv"):
        path.unlink()
    for path in tables.glob("human_*.csv"):
        path.unlink()
    assert claims_markdown(tables) == [
        "_The paper's records are not in `results/tables/`: run `make reference` and notebook 08._"]
    # a claim whose tables are partly there is left out, the others stay
    tables = _copy(tmp_path / "again")
    (tables / "paper_metadata_rule.csv").unlink()
    assert len(claims(tables)) == 4
