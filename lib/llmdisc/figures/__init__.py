"""Stage 07, the figures: read trial records, baselines and human tables, shape them into figure tables
(:mod:`~llmdisc.figures.figure_data`, also written to ``results/tables/``) and draw
``figures/<name>.{pdf,png}`` (:mod:`~llmdisc.figures.plots`), never computing trials."""

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
