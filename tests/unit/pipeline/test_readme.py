"""The README's results table is generated from results/tables and must not drift from it."""

from __future__ import annotations

import pandas as pd

from llmdisc.pipeline.readme import readme_block, render_results_block, update_readme


def test_readme_numbers_match_the_results_tables():
    # Fails whenever results/tables/llm_cells.csv and the README disagree (regenerate: make reproduce).
    assert readme_block() == render_results_block(), "README results table drifted; run `make reproduce`"


def test_block_renders_percent_with_intervals_and_exclusions(tmp_path):
    pd.DataFrame([{
        "dataset": "adult", "synthetic_method": "ctgan", "condition": "C1", "provider": "local", "model": "m",
        "n_valid_real": 3, "n_valid_syn": 4, "p_real": 2 / 3, "p_syn": 0.25, "drs": 0.25, "drs_ci_low": 0.0,
        "drs_ci_high": 0.5, "n_excluded": 1, "n_total": 8,
    }]).to_csv(tmp_path / "llm_cells.csv", index=False)
    block = render_results_block(tmp_path)
    assert "| adult | ctgan | C1 | local / m | 3 / 4 | 66.7 | 25.0 | 25.0 [0.0, 50.0] |" in block
    assert "excluded as invalid or failed: 1 of 8" in block


def test_update_rewrites_only_the_block(tmp_path, monkeypatch):
    readme = tmp_path / "README.md"
    readme.write_text("intro\n<!-- results:start -->\nold\n<!-- results:end -->\noutro\n")
    monkeypatch.setenv("LLMDISC_ROOT", str(tmp_path))
    assert update_readme(readme) is True
    text = readme.read_text()
    assert text.startswith("intro\n") and text.endswith("\noutro\n") and "old" not in text
    assert update_readme(readme) is False


def test_a_run_without_generated_verdicts_says_so_and_keeps_the_probability_table(tmp_path):
    # configs/small.yaml scores the labels only: notebook 07 writes llm_cells.csv with its header and no rows.
    pd.DataFrame(columns=["dataset", "synthetic_method", "condition", "provider", "model", "n_valid_real",
                          "n_valid_syn", "p_real", "p_syn", "drs", "drs_ci_low", "drs_ci_high", "n_excluded",
                          "n_total"]).to_csv(tmp_path / "llm_cells.csv", index=False)
    pd.DataFrame([{"dataset_key": "adult", "synthetic_method": "tvae", "condition": "C1", "provider": "local",
                   "model": "m", "n_real": 4, "n_syn": 4, "auc": 0.75, "auc_ci_low": 0.4, "auc_ci_high": 1.0,
                   "auc_p_value": 0.3, "batch_drs": 0.5, "batch_drs_ci_low": 0.0, "batch_drs_ci_high": 0.75,
                   "context_drs": 0.25, "raw_drs": 0.0}]).to_csv(tmp_path / "llm_probability_cells.csv", index=False)
    block = render_results_block(tmp_path)
    assert "No trial of the last run generated a verdict" in block
    assert "| dataset | synthesizer | condition |" not in block and "excluded as invalid" not in block
    assert "| adult | tvae | C1 | local / m | 4 / 4 | 0.75 [0.40, 1.00] |" in block


def _two_protocol_cells(tables_dir):
    base = {"dataset": "adult", "synthetic_method": "ctgan", "condition": "C1", "provider": "ollama", "model": "m",
            "metadata_source": "source", "scoring": "verdict", "config_name": "paper", "n_valid_real": 5,
            "n_valid_syn": 5, "p_real": 1.0, "p_syn": 0.0, "drs": 0.0, "drs_ci_low": 0.0, "drs_ci_high": 0.0,
            "n_excluded": 0, "n_total": 10}
    pd.DataFrame([{**base, "prompt_variant": "paper", "sampling": "fixed"},
                  {**base, "prompt_variant": "neutral", "metadata_source": "real", "sampling": "fresh",
                   "p_syn": 1.0, "drs": 1.0, "drs_ci_low": 1.0, "drs_ci_high": 1.0}]).to_csv(
        tables_dir / "llm_cells.csv", index=False)


def test_block_names_the_config_and_date_and_keeps_protocols_apart(tmp_path):
    from llmdisc.manifest import write_manifest

    _two_protocol_cells(tmp_path)
    write_manifest(tmp_path, "07_figures", name="llm_manifest.json", parameters={"config_name": "paper"})
    created = __import__("json").loads((tmp_path / "llm_manifest.json").read_text())["created"][:10]
    block = render_results_block(tmp_path)
    assert f"written by the run of `configs/paper.yaml` on {created}" in block
    assert "| local / m" not in block
    assert ("| adult | ctgan | C1 | ollama / m (paper prompt, source metadata, fixed samples, verdict, config paper) "
            "| 5 / 5 | 100.0 | 0.0 | 0.0 [0.0, 0.0] |") in block
    assert "(neutral prompt, real metadata, fresh samples, verdict, config paper) | 5 / 5 | 100.0 | 100.0 |" in block


def test_only_a_config_with_readme_true_rewrites_the_block(tmp_path, monkeypatch):
    from llmdisc.pipeline.config import load_config
    from llmdisc.paths import project_root

    configs = {name: load_config(project_root() / "configs" / f"{name}.yaml")
               for name in ("default", "small", "tiny", "paper")}
    assert [name for name, config in configs.items() if config.readme] == ["default"]
    readme = tmp_path / "README.md"
    readme.write_text("intro\n<!-- results:start -->\nold\n<!-- results:end -->\noutro\n")
    monkeypatch.setenv("LLMDISC_ROOT", str(tmp_path))
    for name in ("small", "tiny", "paper"):
        assert update_readme(readme, config=configs[name]) is False
    assert "old" in readme.read_text()
    assert update_readme(readme, config=configs["default"]) is True
    assert "old" not in readme.read_text()
