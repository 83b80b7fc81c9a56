"""The README's results block is the summary of findings generated from results/tables; it must not drift."""

from __future__ import annotations

import pandas as pd

from llmdisc.pipeline.readme import readme_block, render_results_block, update_readme


def test_readme_numbers_match_the_results_tables():
    # Fails whenever results/tables/llm_cells.csv and the README disagree (regenerate: make reproduce).
    assert readme_block() == render_results_block(), "README results table drifted; run `make reproduce`"


def _findings_lines(text: str) -> list[str]:
    """The findings' lines after its heading, heading marks aside."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.lstrip("#").strip() == "What the run found")
    end = next(i for i, line in enumerate(lines[start:], start) if line.startswith("Cells with fewer than"))
    return lines[start + 1:end + 1]


def _tables(tmp_path, n=20):
    rows = []
    for source, auc, low, high, p in (("ctgan", 0.05, 0.0, 0.12, 0.0004), ("gaussian_copula", 0.45, 0.27, 0.63, 0.6),
                                      ("shuffled_columns", 0.0, 0.0, 0.05, 0.001), ("real_vs_real", 0.5, 0.32, 0.68,
                                                                                   0.9)):
        rows.append({"dataset_key": "adult", "source": source, "auc": auc, "auc_low": low, "auc_high": high,
                     "perm_p": p, "n_real": n, "n_syn": n})
    pd.DataFrame(rows).to_csv(tmp_path / "joint_cells.csv", index=False)
    pd.DataFrame(rows).assign(auc=0.5, auc_low=0.3, auc_high=0.7, perm_p=0.9).to_csv(
        tmp_path / "likelihood_cells.csv", index=False)


def test_block_is_the_landing_pages_first_section_word_for_word(tmp_path):
    from llmdisc.pipeline.landing import SiteMap, landing_page

    _tables(tmp_path)
    block = render_results_block(tmp_path)
    page = landing_page(tmp_path, SiteMap(), [])
    assert _findings_lines(block) == _findings_lines(page)
    assert page.index("What the run found") < page.index("Research questions")  # the page leads with it
    # the joint statistic passes its controls and tells the ctgan release apart (Holm: 2 release cells); the
    # instruments with no table get no column, the verdicts a sentence; every figure is D with its score interval
    assert "| dataset | group | table likelihood | joint structure |" in block
    assert ("| adult | ctgan | 0.00 [0.00, 0.34], p (Holm) 1.000 | 0.90 [0.63, 0.97], less structured, "
            "p (Holm) < 0.001 |") in block
    assert "**Generated verdicts (the paper's reading)**: not in this run" in block
    assert ("adult: its controls pass (columns shuffled D 1.00 [0.80, 1.00], less structured; real vs real D 0.00, "
            "shown below 0.57); it tells 1 of its 2 releases apart (Holm p < 0.05); not told apart: gaussian_copula "
            "D 0.10 [0.00, 0.42], less structured, where a release differing by D 0.57 would have been seen 4 times "
            "in 5") in block
    # the likelihood sits at chance on the shuffled columns: it cannot say anything of the releases
    assert ("adult: cannot say — its positive control (columns shuffled) reaches D 0.00 [0.00, 0.34] (20 samples "
            "a group), and its lower bound is not above the D 0.57") in block


def test_too_few_samples_show_their_n_and_header_only_tables_say_not_measured(tmp_path):
    _tables(tmp_path, n=4)
    pd.DataFrame(columns=["dataset_key", "synthetic_method", "condition", "provider", "model", "n_real", "n_syn",
                          "auc", "auc_ci_low", "auc_ci_high", "auc_p_value"]).to_csv(
        tmp_path / "llm_probability_cells.csv", index=False)
    block = render_results_block(tmp_path)
    assert "n = 4 / 4: too few" in block and "0.05 [0.00, 0.12]" not in block
    assert "**Can the LLM's verdict tell them apart?** Not measured here" in block
    assert "adult: too few samples (no release cell with 10 samples a class)" in block


def test_update_rewrites_only_the_block(tmp_path, monkeypatch):
    readme = tmp_path / "README.md"
    readme.write_text("intro\n<!-- results:start -->\nold\n<!-- results:end -->\noutro\n")
    monkeypatch.setenv("LLMDISC_ROOT", str(tmp_path))
    assert update_readme(readme) is True
    text = readme.read_text()
    assert text.startswith("intro\n") and text.endswith("\noutro\n") and "old" not in text
    assert update_readme(readme) is False


def test_block_names_the_config_and_date_and_keeps_protocols_apart(tmp_path):
    from llmdisc.manifest import write_manifest

    base = {"dataset_key": "adult", "synthetic_method": "ctgan", "condition": "C1", "provider": "ollama",
            "model": "m", "metadata_source": "source", "scoring": "probability", "config_name": "paper", "n_real": 12,
            "n_syn": 12, "auc": 0.9, "auc_ci_low": 0.8, "auc_ci_high": 1.0, "auc_p_value": 0.001}
    pd.DataFrame([{**base, "prompt_variant": "paper", "sampling": "fixed"},
                  {**base, "prompt_variant": "neutral", "metadata_source": "real", "sampling": "fresh",
                   "auc": 0.6, "auc_ci_low": 0.4, "auc_ci_high": 0.8}]).to_csv(
        tmp_path / "llm_probability_cells.csv", index=False)
    write_manifest(tmp_path, "07_figures", name="llm_manifest.json", parameters={"config_name": "paper"})
    created = __import__("json").loads((tmp_path / "llm_manifest.json").read_text())["created"][:10]
    block = render_results_block(tmp_path)
    assert f"written by the run of `configs/paper.yaml` on {created}" in block
    protocol_rows = [line for line in block.splitlines() if line.startswith("| adult | ctgan · ")]
    assert len(protocol_rows) == 2  # one row per protocol, never pooled
    # AUC 0.9 and 0.6 on 12 a class: D 0.80 and 0.20 with their score intervals (the table's own are not read)
    assert any("paper prompt" in row and "0.80 [0.37, 0.94], called synthetic more often" in row
               for row in protocol_rows)
    assert any("neutral prompt" in row and "0.20 [0.00, 0.57], called synthetic more often" in row
               for row in protocol_rows)


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


def test_the_classifier_sentence_counts_ours_and_the_papers_releases_apart(tmp_path):
    pd.DataFrame({"dataset_key": ["census-codes"] * 4,
                  "synthesizer": ["ctgan", "tvae", "paper_ctgan", "paper_tvae"],
                  "c2st_auc_hist_gb": [0.97, 0.99, 0.61, 0.502]}).to_csv(tmp_path / "baselines_headline.csv",
                                                                      index=False)
    block = render_results_block(tmp_path)
    sentence = next(line for line in block.splitlines() if "tell the releases from real rows" in line)
    assert ("Partly, by a gradient-boosted C2ST on thousands of rows: every one of our 2 releases (D 0.94–0.98); "
            "1 of the paper's own 2 releases (D 0.00–0.22)") in sentence
    assert "this run gives the C2STs no shuffled-columns or real-vs-real control" in block


def test_the_joint_design_study_is_a_table_under_the_findings_with_its_controls_and_cost(tmp_path):
    _tables(tmp_path)
    assert "How the joint-structure design was chosen" not in render_results_block(tmp_path)  # no study, no table
    pd.DataFrame([
        {"model": "smollm2", "dataset_key": "adult", "design": "base", "n_real": 6, "auc_control": 1.0,
         "auc_control_low": 1.0, "auc_control_high": 1.0, "auc_real_vs_real": 0.556, "tokens_run_per_sample": 6649.4},
        {"model": "qwen", "dataset_key": "adult", "design": "reference_rows=0", "n_real": 6, "auc_control": 0.9167,
         "auc_control_low": 0.738, "auc_control_high": 1.0, "auc_real_vs_real": float("nan"),
         "tokens_run_per_sample": 4667.4}]).to_csv(tmp_path / "joint_design.csv", index=False)
    block = render_results_block(tmp_path)
    # D with its score interval at 6 a group (never [1, 1]) and the direction: shuffled samples less structured
    assert "| smollm2 | adult | base | 6 | 1.00 [0.38, 1.00], less structured | 0.11 | 6,649 |" in block
    assert "| qwen | adult | reference_rows=0 | 6 | 0.83 [0.16, 0.97], less structured | – | 4,667 |" in block
    assert block.index("What the run found") < block.index("How the joint-structure design was chosen")
    # the cheapest design that separates the control, per dataset of the embedded model (the qwen row is not its)
    embedded = "smollm2-135m-instruct-q4_1"
    pd.DataFrame([
        {"model": embedded, "dataset_key": "adult", "design": "base", "n_real": 6, "auc_control": 1.0,
         "auc_control_low": 1.0, "auc_control_high": 1.0, "auc_real_vs_real": 0.5, "tokens_run_per_sample": 6649.4},
        {"model": embedded, "dataset_key": "adult", "design": "serialisation=csv", "n_real": 6, "auc_control": 0.95,
         "auc_control_low": 0.91, "auc_control_high": 1.0, "auc_real_vs_real": 0.5, "tokens_run_per_sample": 3556.8},
        {"model": embedded, "dataset_key": "adult", "design": "k=1", "n_real": 6, "auc_control": 0.85,
         "auc_control_low": 0.89, "auc_control_high": 1.0, "auc_real_vs_real": 0.5, "tokens_run_per_sample": 100.0},
        {"model": embedded, "dataset_key": "census-codes", "design": "base", "n_real": 6, "auc_control": 0.78,
         "auc_control_low": 0.47, "auc_control_high": 1.0, "auc_real_vs_real": 0.8, "tokens_run_per_sample": 3294.2},
        {"model": "qwen", "dataset_key": "census-codes", "design": "base", "n_real": 6, "auc_control": 0.99,
         "auc_control_low": 0.95, "auc_control_high": 1.0, "auc_real_vs_real": 0.5, "tokens_run_per_sample": 10.0},
    ]).to_csv(tmp_path / "joint_design.csv", index=False)
    # k=1 is cheaper but reaches only D 0.70; census-codes' base is not told apart at 6 a group
    assert ("with D ≥ 0.8: on adult, `serialisation=csv` (3,557 tokens a sample, D 0.90); none on census-codes."
            in render_results_block(tmp_path))
    pd.read_csv(tmp_path / "joint_design.csv").assign(model="qwen").to_csv(tmp_path / "joint_design.csv", index=False)
    assert "Cheapest design" not in render_results_block(tmp_path)  # the embedded model not measured: no sentence


def test_a_control_seen_but_weaker_than_needed_keeps_the_releases_told_apart_and_says_nothing_of_the_rest(tmp_path):
    _tables(tmp_path)
    joint = pd.read_csv(tmp_path / "joint_cells.csv")
    joint.loc[joint["source"] == "shuffled_columns", "auc"] = 0.25  # D 0.50 [0.14, 0.73]: seen, below 0.57
    joint.to_csv(tmp_path / "joint_cells.csv", index=False)
    block = render_results_block(tmp_path)
    assert ("adult: it tells 1 of its 2 releases apart (Holm p < 0.05; it sees its positive control and reads real "
            "vs real at chance); of the other 1 it cannot say — its positive control (columns shuffled) reaches "
            "D 0.50 [0.14, 0.73], less structured") in block


def _words_before_reference() -> list[str]:
    import re

    from llmdisc.paths import project_root

    text = (project_root() / "README.md").read_text(encoding="utf-8").split("\n## Reference")[0]
    text = re.sub(r"\]\([^)]*\)", "]", text)  # a link's address is not read
    return re.sub(r"<!--.*?-->", " ", text).split()


def test_a_reader_finishes_the_readme_before_its_reference_sections_in_1200_words():
    words = _words_before_reference()
    assert 300 < len(words) <= 1200, len(words)


def test_every_link_of_the_readme_and_the_docs_resolves_to_a_file_and_anchor():
    import re

    from llmdisc.paths import project_root

    root = project_root()
    for page in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text(encoding="utf-8")):
            if target.startswith(("http://", "https://", "#")):
                continue
            path, _, anchor = target.partition("#")
            resolved = (page.parent / path).resolve()
            assert resolved.exists(), f"{page.name}: {target}"
            if anchor:
                text = resolved.read_text(encoding="utf-8")
                headings = {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
                            for h in re.findall(r"^#+ (.*)$", text, re.M)}
                assert f'id="{anchor}"' in text or anchor in headings, f"{page.name}: {target}"


def test_the_c2st_controls_say_which_classifier_sees_joint_structure(tmp_path):
    rows = [{"dataset_key": "adult", "synthesizer": s, "c2st_auc_hist_gb": hg, "c2st_auc_logistic": lg,
             "paper_c2st_auc": pp}
            for s, hg, lg, pp in (("ctgan", 0.97, 0.70, 0.64), ("shuffled_columns", 0.80, 0.51, 0.49),
                                  ("real_holdout", 0.51, 0.50, 0.52))]
    pd.DataFrame(rows).to_csv(tmp_path / "baselines_headline.csv", index=False)
    block = render_results_block(tmp_path)
    assert ("adult: gradient-boosted D 0.60 (told apart; real vs real 0.02), logistic (all columns) D 0.02 (not "
            "told apart; real vs real 0.00), the paper's logistic (numeric columns, first rows) D 0.02 (not told "
            "apart; real vs real 0.04)") in block
    assert "Only the gradient-boosted sees it on every dataset" in block
    # the controls are rows of the side-by-side table too, in the C2ST's column
    assert "| adult | positive control (columns shuffled) | 0.60, told apart |" in block
    assert "| adult | negative control (real vs real) | 0.02, not told apart |" in block
    pd.DataFrame(rows[:1]).to_csv(tmp_path / "baselines_headline.csv", index=False)
    assert "this run gives the C2STs no shuffled-columns or real-vs-real control" in render_results_block(tmp_path)


def test_a_stage_re_run_after_the_run_is_named_with_its_date(tmp_path):
    import json

    _tables(tmp_path)
    for name, stage, created in (("llm_manifest.json", "07_figures", "2026-12-04T20:00:00+00:00"),
                                 ("paper_manifest.json", "08_paper_reproduction", "2026-12-06T07:00:00+00:00"),
                                 ("human_manifest.json", "06_human_pilot", "2026-12-04T19:00:00+00:00")):
        (tmp_path / name).write_text(json.dumps({"stage": stage, "created": created,
                                                 "parameters": {"config_name": "default"}}))
    block = render_results_block(tmp_path)
    assert ("written by the run of `configs/default.yaml` on 2026-12-04, with notebook 08 (2026-12-06) re-run on "
            "its own since") in block
    assert "notebook 06" not in block


def test_the_joint_reading_is_given_beside_the_samples_variety_and_its_change_once_adjusted(tmp_path):
    _tables(tmp_path)
    joint = pd.read_csv(tmp_path / "joint_cells.csv").assign(score="contrast", real_variety=0.41, other_variety=0.47,
                                                             variety_slope=38.0, variety_r=0.62, n_reference=20)
    assert "variety" not in render_results_block(tmp_path)  # a table without a fitted slope's interval: no line
    # a slope whose interval covers 0: no adjusted rows; each group told apart is read against its variety
    joint.assign(variety_slope_low=-5.0, variety_slope_high=81.0).to_csv(tmp_path / "joint_cells.csv", index=False)
    assert ("adult: real samples' variety 0.41; C's slope on variety, +38 [-5, +81] nats per unit of variety over "
            "the 20 real reference samples (r +0.62), covers 0, so its readings are left unadjusted; told apart: "
            "ctgan D 0.90 [0.63, 0.97], less structured, variety 0.47 (not less varied: variety does not explain "
            "it);") in render_results_block(tmp_path)
    joint = joint.assign(variety_slope_low=12.0, variety_slope_high=64.0)
    adjusted = joint.assign(score="contrast_adjusted")
    adjusted.loc[adjusted["source"] == "ctgan", ["auc", "perm_p"]] = (0.4, 0.3)  # no longer told apart
    pd.concat([joint, adjusted]).to_csv(tmp_path / "joint_cells.csv", index=False)
    block = render_results_block(tmp_path)
    assert ("adult: real samples' variety 0.41, C rising +38 [+12, +64] nats per unit of variety over the 20 real "
            "reference samples (r +0.62); ctgan (variety 0.47): D 0.90 [0.63, 0.97], less structured raw, D 0.20 "
            "[0.00, 0.50], not told apart adjusted.") in block
    # the headline reading is the raw C's, not the adjusted one's
    assert "| adult | ctgan | 0.00 [0.00, 0.34], p (Holm) 1.000 | 0.90 [0.63, 0.97], less structured" in block
