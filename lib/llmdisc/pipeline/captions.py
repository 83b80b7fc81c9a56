"""The supplementary's words, loaded from ``templates/captions.yaml``: figure captions, table descriptions and
the research questions."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

import yaml


@dataclass(frozen=True)
class FigureCaption:
    """The caption of one figure, in four parts a reader needs to read it."""

    title: str
    """One line: what the figure shows."""
    plotted: str
    """What is on the axes, panels, colours and markers."""
    n: str
    """What n is; ``{field}`` placeholders are filled from the run's tables (see :func:`caption_text`)."""
    interval: str
    """What the error bars or bands are (or that there are none)."""
    reading: str
    """How to read 0, 0.5 and 1 (or the figure's reference lines)."""


@dataclass(frozen=True)
class ResearchQuestion:
    """One question of the study and where in the supplementary it is answered."""

    key: str
    question: str
    notebook: str
    """Notebook number (``"07"``) whose section answers it."""
    section: str
    """Heading number in that notebook (``"3"`` for ``## 3. …``); an empty string points to the page."""
    figures: tuple[str, ...] = ()
    table: str = ""
    """The results table (``results/tables/<table>.csv``) holding the numbers."""


_TEXT = yaml.safe_load((Path(__file__).with_name("templates") / "captions.yaml").read_text(encoding="utf-8"))
FIGURE_CAPTIONS: dict[str, FigureCaption] = {
    name: FigureCaption(**{part: "".join(t) if isinstance(t, list) else t for part, t in parts.items()})
    for name, parts in _TEXT["figures"].items()}
TABLE_DESCRIPTIONS: dict[str, str] = _TEXT["tables"]
RESEARCH_QUESTIONS: tuple[ResearchQuestion, ...] = tuple(
    ResearchQuestion(**{**rq, "figures": tuple(rq.get("figures", ()))}) for rq in _TEXT["research_questions"])


class _Counts(dict):
    """Placeholder values for :func:`caption_text`: a count the run's tables do not give reads 'not available'."""

    def __missing__(self, key: str) -> str:
        return "not available"


def caption_text(name: str, counts: Mapping[str, object] | None = None) -> str:
    """The caption of figure ``name`` as one Markdown paragraph, its placeholders filled from ``counts`` ("not
    available" when missing); a figure without an entry gets a caption saying so (the build does not fail)."""
    caption = FIGURE_CAPTIONS.get(name)
    if caption is None:
        return (f"**{name}.** No caption is recorded for this figure yet: add one to "
                "`llmdisc.pipeline.captions.FIGURE_CAPTIONS`.")
    values = _Counts(counts or {})
    parts = [caption.plotted, caption.n.format_map(values), caption.interval, caption.reading]
    return f"**{caption.title}** " + " ".join(parts)
