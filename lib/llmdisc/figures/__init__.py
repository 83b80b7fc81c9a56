"""Stage 07, the figures: shape the results into figure tables, then draw them (never computing trials).

:mod:`~llmdisc.figures.figure_data` reads trial records, baselines and human tables and returns the tidy tables
each figure draws (also written to ``results/tables/``); :mod:`~llmdisc.figures.plots` draws them and writes
``figures/<name>.{pdf,png}``. :mod:`~llmdisc.figures.comparison` puts every discriminator on one scale.
"""

from llmdisc.figures import (
    comparison,
    comparison_plots,
    cue_data,
    cue_plots,
    figure_data,
    likelihood_plots,
    plots,
    probability_plots,
)

__all__ = ["comparison", "comparison_plots", "cue_data", "cue_plots", "figure_data", "likelihood_plots", "plots",
           "probability_plots"]
