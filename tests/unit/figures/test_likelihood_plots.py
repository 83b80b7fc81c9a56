"""The likelihood figures draw one panel per dataset × model from the tables, every source present."""

from __future__ import annotations

import numpy as np
import pandas as pd

from llmdisc.figures import likelihood_plots
from llmdisc.figures.plots import save_figure
from llmdisc.scoring.likelihood import column_contributions, likelihood_table, samples_table


def _records() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = []
    for key in ("adult", "census-codes"):
        for source, role, shift in (("holdout", "test", 0), ("holdout", "reference", 0), ("train", "control", 0),
                                    ("ctgan", "test", -1), ("tvae", "test", 1), ("shuffled_columns", "test", -0.3)):
            for i in range(6):
                value = rng.normal(shift, 0.5)
                rows.append({"dataset_key": key, "backend": "transformers", "model": "m", "model_digest": "d",
                             "serialisation": "markdown", "context": "c1_prompt", "source": source, "role": role,
                             "true_label": "REAL" if source in ("holdout", "train") else "SYNTHETIC", "index": i,
                             "sample_seed": i, "n_rows": 20, "prompt_tokens": 100, "n_tokens": 80,
                             "total_logprob": value * 80, "mean_logprob": value - 1, "min_k_logprob": value - 4,
                             "header_logprob": -3.0, "layout_logprob": -9.0, "seconds": 1.0,
                             "column_logprob": {"age": -20 + 10 * value, "job": -30.0 + rng.normal()}})
    return pd.DataFrame(rows)


def test_score_distributions_and_column_contributions_draw_every_panel(tmp_path):
    records = _records()
    cells = likelihood_table(records, n_perm=100, n_boot=100)
    fig = likelihood_plots.score_distributions(samples_table(records), cells)
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert len(visible) == 2
    labels = [t.get_text() for t in visible[0].get_xticklabels()]
    assert labels[0] == "real holdout" and any(label.startswith("ctgan\nAUC") for label in labels)
    assert any(label.startswith("real_vs_real") for label in labels)
    from matplotlib.collections import PathCollection

    points = sum(len(c.get_offsets()) for c in visible[0].collections if isinstance(c, PathCollection))
    assert points == 6 * 5  # five groups of six samples; the reference samples are left out
    fig2 = likelihood_plots.column_contributions(column_contributions(records))
    assert [t.get_text() for t in fig2.axes[0].get_yticklabels()][-1] == "age"  # the shifted column on top
    paths = save_figure(fig, "likelihood_scores", tmp_path) + save_figure(fig2, "likelihood_columns", tmp_path)
    assert all(p.stat().st_size > 0 for p in paths)


def test_the_default_runs_committed_tables_hold_no_timing_column():
    """A results table must read the same on every run; seconds stay in the records (and in the bench tables)."""
    import json

    from llmdisc.paths import project_root

    assert "seconds" in _records().columns and "seconds" not in samples_table(_records()).columns
    tables = project_root() / "results" / "tables"
    written = [name for manifest in tables.glob("*manifest.json")
               for name in json.loads(manifest.read_text(encoding="utf-8"))["outputs"] if name.endswith(".csv")]
    assert "results/tables/likelihood_samples.csv" in written
    timed = {name: [c for c in pd.read_csv(project_root() / name, nrows=0).columns
                    if "second" in c or "duration" in c or "elapsed" in c] for name in written}
    assert {name: cols for name, cols in timed.items() if cols} == {}
