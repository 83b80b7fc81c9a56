"""Figure captions and research questions: one caption per figure notebook 07 saves, each readable alone."""

from __future__ import annotations

import nbformat

from llmdisc.paths import project_root
from llmdisc.pipeline.captions import FIGURE_CAPTIONS, RESEARCH_QUESTIONS, caption_text
from llmdisc.pipeline.supplementary import _SAVED_FIGURE


def _saved_by_notebook_07() -> list[str]:
    nb = nbformat.read(project_root() / "notebooks" / "07_figures.ipynb", as_version=4)
    return [name for cell in nb.cells if cell.cell_type == "code" for name in _SAVED_FIGURE.findall(cell.source)]


def test_every_figure_notebook_07_saves_has_a_caption():
    saved = _saved_by_notebook_07()
    nb = nbformat.read(project_root() / "notebooks" / "07_figures.ipynb", as_version=4)
    calls = sum(cell.source.count("save_figure(") for cell in nb.cells if cell.cell_type == "code")
    assert len(saved) == calls  # the pattern finds the name of every save_figure call
    assert sorted(set(saved) - set(FIGURE_CAPTIONS)) == []


def test_each_caption_says_what_n_and_the_interval_are_and_how_to_read_it():
    for name, caption in FIGURE_CAPTIONS.items():
        assert "n" in caption.n.split() or "n=" in caption.n or caption.n.startswith("n "), name
        assert caption.interval, name
        assert "0.5" in caption.reading or "diagonal" in caption.reading, name


def test_caption_text_fills_counts_and_names_what_is_missing():
    text = caption_text("drs_by_cell", {"n_valid": 24, "n_cells": 12})
    assert text.startswith("**Disclosure Risk Score by synthesizer and condition.**")
    assert "24 valid trials in 12 cells" in text
    assert "not available valid trials" in caption_text("drs_by_cell", {})
    assert "FIGURE_CAPTIONS" in caption_text("a_new_figure")


def test_research_questions_point_to_captioned_figures():
    assert [rq.key for rq in RESEARCH_QUESTIONS] == [f"RQ{i}" for i in range(1, len(RESEARCH_QUESTIONS) + 1)]
    for rq in RESEARCH_QUESTIONS:
        assert set(rq.figures) <= set(FIGURE_CAPTIONS), rq.key
