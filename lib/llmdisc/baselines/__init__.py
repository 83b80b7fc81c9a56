"""Baselines beside the LLM discriminator (stage 05; docs/protocol.md §6 and §8 rows 7–8).

- :mod:`~llmdisc.baselines.c2st`: classifier two-sample tests — ours (all columns, stratified k-fold, AUC
  with a corrected interval, binomial test, label-shuffled baseline), block-level (20-row blocks, the LLM's
  scale), SDMetrics' ``LogisticDetection``, and the paper's (numerics, head rows, one split), also on the paper's own Census releases over split
  seeds (:func:`paper_c2st_releases`, notebook 08).
- :mod:`~llmdisc.baselines.distances`: distance to closest record against a real holdout, exact-copy rates,
  and the paper's self-referential "record linkage".
- :mod:`~llmdisc.baselines.attacks`: Anonymeter's singling-out, linkability and inference risks.
- :mod:`~llmdisc.baselines.report`: :func:`run_baselines` → one tidy table per release; :func:`run_controls` →
  the C2STs on the shuffled-columns and real-vs-real controls.
- :mod:`~llmdisc.baselines.fit_budget`: what the training budget changes (quick 5-epoch against default 300-epoch
  releases: fit time, C2ST AUC, DCR share, likelihood AUC; ``results/tables/fit_budget.csv``, notebook 02).
- :mod:`~llmdisc.baselines.encoding`: schema checks (an error names differing columns), degenerate columns,
  encodings shared by all of them, capping of many-level categorical columns.
"""

from llmdisc.baselines.attacks import ATTACKS, AttackResult, anonymeter_attacks
from llmdisc.baselines.c2st import (
    CLASSIFIERS,
    PAPER_PRINTED_C2ST,
    C2STResult,
    PaperC2STResult,
    c2st,
    auc_with_interval,
    paper_c2st,
    paper_c2st_releases,
    paper_c2st_seeds,
    sdmetrics_logistic_detection,
)
from llmdisc.baselines.distances import (
    DCRResult,
    PaperLinkage,
    dcr_baseline,
    exact_copy_rate,
    gower_dcr,
    paper_linkage,
)
from llmdisc.baselines.encoding import TableSchema, cap_levels, check_compatible, resolve_schema
from llmdisc.baselines.fit_budget import BUDGETS, FIT_BUDGET_COLUMNS, compare_fit_budgets, write_fit_budget
from llmdisc.baselines.report import RESULT_COLUMNS, headline, run_baselines, run_controls

__all__ = [
    "ATTACKS", "AttackResult", "anonymeter_attacks",
    "CLASSIFIERS", "C2STResult", "PaperC2STResult", "c2st", "auc_with_interval", "paper_c2st",
    "PAPER_PRINTED_C2ST", "paper_c2st_releases", "paper_c2st_seeds",
    "sdmetrics_logistic_detection",
    "DCRResult", "PaperLinkage", "dcr_baseline", "exact_copy_rate", "gower_dcr", "paper_linkage",
    "TableSchema", "cap_levels", "check_compatible", "resolve_schema",
    "BUDGETS", "FIT_BUDGET_COLUMNS", "compare_fit_budgets", "write_fit_budget",
    "RESULT_COLUMNS", "headline", "run_baselines", "run_controls",
]
