"""Stages 07–08, scoring: per-cell scores of the verdicts, the paper's analyses, its records, the results tables.

Reads trial tables (``results/trials/*.jsonl`` through :func:`llmdisc.discrimination.load_trials`, or the paper's
own records through :mod:`~llmdisc.scoring.reference`), likelihood and joint-structure records, and writes nothing
itself but through :func:`write_table` (``results/tables/<name>.{csv,tex}``). The modules are listed in
docs/ARCHITECTURE.md; start with :mod:`~llmdisc.scoring.metrics` (DRS with its intervals, :func:`score_cells`).
"""

from llmdisc.scoring import cue_tables, cue_validity, cues, paper_samples, reference, tables
from llmdisc.scoring.analyses import (fair_cells, matched_n_sample, mcnemar_exact, paired_condition_tests,
                                      permutation_test, permutation_tests, seed_stability)
from llmdisc.scoring.auc import AUCTest, auc_test, auc_with_interval
from llmdisc.scoring.calibration import brier_score, expected_calibration_error, reliability_bins
from llmdisc.scoring.metadata_rule import metadata_rule_table
from llmdisc.scoring.cue_validity import verified_cues
from llmdisc.scoring.cues import code_cues, coder_agreement, cue_strings, load_codebook
from llmdisc.scoring.metrics import (CELL_COLUMNS, SCORES, Estimate, ScoreInfo, balanced_accuracy,
                                     cell_reliability, disclosure_risk_score, drs_bootstrap, prepare_trials,
                                     score_cell, score_cells, wilson_interval, youden_j)
from llmdisc.scoring.paper_samples import verify_paper_census_samples
from llmdisc.scoring.probability import PROBABILITY_COLUMNS, score_probability_cell, score_probability_cells
from llmdisc.scoring.reference import import_paper_trials, paper_reported_cells, paper_trial_files
from llmdisc.scoring.tables import cell_table, seed_stability_table, tables_dir, write_table

from llmdisc.scoring import joint, joint_design, likelihood

__all__ = [
    "joint", "joint_design", "likelihood",
    "code_cues", "coder_agreement", "cue_strings", "cue_tables", "cue_validity", "cues", "load_codebook",
    "verified_cues", "paper_samples", "verify_paper_census_samples", "metadata_rule_table",
    "AUCTest", "PROBABILITY_COLUMNS", "auc_test", "auc_with_interval", "score_probability_cell", "score_probability_cells",
    "CELL_COLUMNS", "SCORES", "Estimate", "ScoreInfo", "balanced_accuracy", "brier_score", "cell_reliability",
    "cell_table", "disclosure_risk_score", "drs_bootstrap", "expected_calibration_error", "fair_cells",
    "import_paper_trials", "matched_n_sample", "mcnemar_exact", "paired_condition_tests", "paper_reported_cells",
    "paper_trial_files", "permutation_test", "permutation_tests", "prepare_trials", "reference",
    "reliability_bins", "score_cell", "score_cells", "seed_stability", "seed_stability_table", "tables",
    "tables_dir", "wilson_interval", "write_table", "youden_j",
]
