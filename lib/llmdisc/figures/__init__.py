"""Stage 07, the figures: shape the results into figure tables, then draw them (never computing trials).

:mod:`~llmdisc.figures.figure_data` reads trial records, baselines and human tables and returns the tidy tables
each figure draws (they are also written to ``results/tables/``); :mod:`~llmdisc.figures.plots` has one function
per figure, reading those tables only, and :func:`~llmdisc.figures.plots.save_figure` writes
``figures/<name>.{pdf,png}``.
"""

from llmdisc.figures import figure_data, plots

__all__ = ["figure_data", "plots"]
