"""What the paper's C2 metadata block tells without a model: a rule that reads only its distinct-value counts.

The paper computed the C2 block on the whole table a sample came from, so every C2 prompt of one dataset and label
carried the real table's block (REAL) or the release's (SYNTHETIC). A release that invents values (SDV treats
Census's integer codes as numbers) lists more distinct values than the real table, whose count an agency publishes
beside its release. :func:`distinct_count_rule` answers SYNTHETIC when any column does, never seeing a row;
:func:`metadata_rule_table` scores it beside the model's answers on the paper's C2 trials.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from llmdisc.discrimination.metadata import metadata_statistics
from llmdisc.scoring.metrics import drs_from_counts

REAL, SYNTHETIC = "REAL", "SYNTHETIC"


def distinct_counts(table: pd.DataFrame) -> dict[str, int]:
    """Per-column distinct-value counts the C2 block states for ``table`` (``n_unique``, missing values left out)."""
    return {name: int(info["n_unique"]) for name, info in metadata_statistics(table)["columns"].items()}


def distinct_count_rule(block: Mapping[str, int], real_block: Mapping[str, int]) -> tuple[str, list[str]]:
    """The rule's answer for one block (column → distinct-value count, as a C2 block states it) against the
    real table's (what an agency publishes beside the release), and the columns that decided it:
    (``"SYNTHETIC"`` | ``"REAL"``, the columns whose count exceeds the real one, e.g.
    ``"occupation 9,291 > 526"``)."""
    over = [f"{name} {count:,} > {real_block[name]:,}" for name, count in block.items()
            if name in real_block and count > real_block[name]]
    return (SYNTHETIC if over else REAL), over


def metadata_rule_table(trials: pd.DataFrame, real: pd.DataFrame, releases: Mapping[str, pd.DataFrame], *,
                        dataset: str) -> pd.DataFrame:
    """The rule's DRS beside each model's on the paper's valid C2 trials of one dataset, per release and model.

    ``real`` and ``releases`` (synthesizer → release) are the tables the paper's samples came from.

    Returns one row per release × provider × model with C2 trials: ``n_real`` / ``n_syn`` (valid trials),
    ``rule_on_real`` / ``rule_on_release`` (the rule's answer on each block), ``deciding_columns``,
    ``rule_drs`` and ``model_drs`` (percent, on the same trials), ``model_p_real`` / ``model_p_syn`` (percent
    correct per class).
    """
    real_block = distinct_counts(real)
    on_real, _ = distinct_count_rule(real_block, real_block)
    valid = trials[(trials["dataset"] == dataset) & (trials["condition"] == "C2") & (trials["status"] == "valid")]
    rows = []
    for (method, provider, model), cell in valid.groupby(["synthetic_method", "provider", "model"], sort=True):
        if method not in releases:
            continue
        on_release, deciding = distinct_count_rule(distinct_counts(releases[method]), real_block)
        is_real = cell["true_label"] == REAL
        n_real, n_syn = int(is_real.sum()), int((~is_real).sum())
        model_real = int((cell.loc[is_real, "predicted_label"] == REAL).sum())
        model_syn = int((cell.loc[~is_real, "predicted_label"] == SYNTHETIC).sum())
        rule_real = n_real if on_real == REAL else 0
        rule_syn = n_syn if on_release == SYNTHETIC else 0
        rows.append({
            "dataset": dataset, "synthetic_method": method, "provider": provider, "model": model,
            "condition": "C2", "n_real": n_real, "n_syn": n_syn, "rule_on_real": on_real,
            "rule_on_release": on_release, "deciding_columns": "; ".join(deciding),
            "rule_drs": 100 * drs_from_counts(n_real, rule_real, n_syn, rule_syn),
            "model_drs": 100 * drs_from_counts(n_real, model_real, n_syn, model_syn),
            "model_p_real": 100 * model_real / n_real if n_real else float("nan"),
            "model_p_syn": 100 * model_syn / n_syn if n_syn else float("nan"),
        })
    return pd.DataFrame(rows)
