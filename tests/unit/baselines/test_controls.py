"""The C2STs on both controls: a classifier that can see how values go together tells the shuffled columns apart,
every classifier reads real vs real at chance, and a linear one on numeric columns misses a tie it cannot draw."""

from __future__ import annotations

import numpy as np
import pandas as pd

from llmdisc.baselines import headline, run_controls


def _tied(n: int, seed: int) -> pd.DataFrame:
    """Rows whose columns go together only through an interaction: y is high exactly when x and z agree in sign,
    and the category follows y; every marginal is symmetric, so no single column gives a shuffle away."""
    rng = np.random.default_rng(seed)
    x, z = rng.normal(size=n), rng.normal(size=n)
    y = np.where(np.sign(x) == np.sign(z), 1.0, -1.0) + rng.normal(scale=0.2, size=n)
    return pd.DataFrame({"x": x, "z": z, "y": y, "band": np.where(y > 0, "high", "low")})


def test_the_shuffled_columns_control_is_told_apart_by_trees_and_real_vs_real_by_none():
    train, holdout = _tied(1500, 1), _tied(1500, 2)
    table = run_controls(train, holdout, dataset_key="toy", seed=0, c2st_rows_per_table=1500,
                         kinds={"x": "numerical", "z": "numerical", "y": "numerical", "band": "categorical"})
    assert set(table["synthesizer"]) == {"shuffled_columns", "real_holdout"}
    assert (table["seed"] == 0).all() and table["note"].notna().all()
    head = headline(table).set_index("synthesizer")
    d = lambda auc: 2 * abs(auc - 0.5)  # noqa: E731
    assert d(head.loc["shuffled_columns", "c2st_auc_hist_gb"]) > 0.5
    # a linear model on the raw columns cannot draw an interaction: the paper's C2ST misses this control
    assert d(head.loc["shuffled_columns", "paper_c2st_auc"]) < 0.15
    for column in ("c2st_auc_hist_gb", "c2st_auc_logistic", "paper_c2st_auc"):
        assert d(head.loc["real_holdout", column]) < 0.15, column
    # distances and attacks are not run on a control, and SDMetrics' all-row score is left out
    assert head[["dcr_share_closer", "sdmetrics_detection"]].isna().all().all()
