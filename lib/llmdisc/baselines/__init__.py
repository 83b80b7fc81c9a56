"""Baselines beside the LLM discriminator (stage 05; docs/protocol.md §6 and §8 rows 7–8).

- :mod:`~llmdisc.baselines.c2st`: classifier two-sample tests: ours, block-level, SDMetrics', the paper's.
- :mod:`~llmdisc.baselines.distances`: distance to closest record, exact copies, the paper's "record linkage".
- :mod:`~llmdisc.baselines.attacks`: Anonymeter's singling-out, linkability and inference risks.
- :mod:`~llmdisc.baselines.report`: :func:`run_baselines` → a tidy table per release (``results/baselines/``);
  :func:`run_controls` → the C2STs on the two controls.
- :mod:`~llmdisc.baselines.fit_budget`: what the training budget changes (``results/tables/fit_budget.csv``).
- :mod:`~llmdisc.baselines.encoding`: column kinds, schema checks and encodings shared by all of them.
"""

from llmdisc.baselines.attacks import ATTACKS, AttackResult, anonymeter_attacks
from llmdisc.baselines.c2st import (CLASSIFIERS, PAPER_PRINTED_C2ST, C2STResult, PaperC2STResult,
                                    auc_with_interval, c2st, paper_c2st, paper_c2st_releases,
                                    paper_c2st_seeds, sdmetrics_logistic_detection)
from llmdisc.baselines.distances import (DCRResult, PaperLinkage, dcr_baseline, exact_copy_rate, gower_dcr,
                                         paper_linkage)
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
