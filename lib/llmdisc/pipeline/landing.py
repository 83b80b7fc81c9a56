"""The supplementary's landing page and tables page, generated as MyST Markdown from ``results/tables/``; a
missing table leaves its part out with a line saying so, never an error.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from llmdisc.paths import figures_dir
from llmdisc.pipeline.captions import RESEARCH_QUESTIONS, TABLE_DESCRIPTIONS, caption_text
from llmdisc.scoring.readings import read_table

HEADLINE_TABLE = "tbl-headline"
"""Prefix of the labels (and HTML ids) of the headline tables, one per provider/model; the tests read them."""
NO_VERDICTS = ("_No trial of the last run generated a verdict (its protocols score the labels only: "
               "`scoring: probability` with `verdict_trials_per_label: 0`), so there is no verdict DRS; the "
               "probability table reads the same prompts._")
"""Said instead of drawing an empty verdict table, when a run only scored the labels."""
MAX_TABLE_ROWS = 60
"""Rows shown per table on the tables page; the CSV holds all of them."""


@dataclass
class SiteMap:
    """Where things are in the staged supplementary: what the generated pages link to."""

    notebook_pages: dict[str, list[str]] = field(default_factory=dict)
    """Notebook number (``"04"``) → docnames of its runs in the primary configuration, in plan order."""
    section_labels: dict[tuple[str, str], str] = field(default_factory=dict)
    """(docname, heading number) → the label of that section."""
    figure_labels: dict[str, str] = field(default_factory=dict)
    """Figure name → the label of its figure in notebook 07 of the primary configuration."""
    table_files: dict[str, list[str]] = field(default_factory=dict)
    """Table name → staged paths of its files (``_tables/llm_cells.csv``, ``…tex``) relative to the source."""


def pct(value: object) -> str:
    """A share in [0, 1] as percent with one decimal (``0.837`` → ``83.7``); missing → ``–``."""
    return _num(value, 1, scale=100)


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _pipe_table(header: list[str], rows: list[list[object]]) -> list[str]:
    lines = ["| " + " | ".join(_cell(h) for h in header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return lines


def _numbered_table(label: str, caption: str, header: list[str], rows: list[list[object]]) -> list[str]:
    # A colon fence: a backtick fence's info string may not hold the backticks of a caption's code span.
    return [f":::{{table}} {caption}", f":name: {label}", "", *_pipe_table(header, rows), ":::", ""]


def _downloads(site: SiteMap, name: str) -> str:
    files = site.table_files.get(name, [])
    return " · ".join(f"{{download}}`{Path(f).suffix.lstrip('.').upper()} <{f}>`" for f in files)


def headline_rows(cells: pd.DataFrame) -> list[list[object]]:
    """Rows (:data:`HEADLINE_HEADER`, percent) of one model's headline table from its rows of
    ``llm_cells.csv``, by dataset, synthesizer, condition."""
    order = cells.sort_values(["dataset", "synthetic_method", "condition"])
    return [[r.dataset, r.synthetic_method, r.condition, f"{int(r.n_valid_real)} / {int(r.n_valid_syn)}",
             pct(r.p_real), pct(r.p_syn), f"{pct(r.drs)} [{pct(r.drs_ci_low)}, {pct(r.drs_ci_high)}]"]
            for r in order.itertuples()]


HEADLINE_HEADER = ["dataset", "synthesizer", "condition", "n real / syn", "p_REAL", "p_SYN", "DRS [95 % CI]"]


def headline_label(provider: str, model: str) -> str:
    """The label (and HTML id) of one provider/model's headline table: ``tbl-headline-local-smollm2-…``."""
    return HEADLINE_TABLE + "-" + "-".join(filter(None, re.split(r"[^a-z0-9]+", f"{provider} {model}".lower())))


def _headline(tables_dir: Path, site: SiteMap) -> list[str]:
    cells = read_table(tables_dir, "llm_cells", keep_empty=True)
    lines = ["## Headline: our trials, per model and dataset", ""]
    if cells is None:
        return lines + ["_No `results/tables/llm_cells.csv` yet: run `make reproduce`._", ""]
    if cells.empty:
        return lines + [NO_VERDICTS, ""]
    n_total, n_valid = int(cells["n_total"].sum()), int(cells["n_valid"].sum())
    lines += [f"{n_valid} valid trials of {n_total} in {len(cells)} cells "
              f"({cells['provider'].nunique()} provider(s), {cells['model'].nunique()} model(s)), one table per "
              "provider/model: scores are never pooled across models. Percent; DRS interval: 95 % bootstrap; "
              f"n = valid trials with a real / synthetic sample. Files: {_downloads(site, 'llm_cells')}.", ""]
    for (provider, model), frame in cells.groupby(["provider", "model"], sort=True):
        lines += [f"### {provider} / {model}", ""]
        lines += _numbered_table(headline_label(provider, model),
                                 f"DRS of every cell of {provider} / {model} (percent).",
                                 HEADLINE_HEADER, headline_rows(frame))
    return lines


def _num(value: object, digits: int = 2, *, scale: float = 1) -> str:
    """``value`` times ``scale`` with ``digits`` decimals; missing → ``–``."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{scale * float(value):.{digits}f}"


def _interval(estimate: object, low: object, high: object) -> str:
    return f"{_num(estimate)} [{_num(low)}, {_num(high)}]"


def probability_headline_rows(cells: pd.DataFrame) -> list[list[object]]:
    """Rows (:data:`PROBABILITY_HEADER`) of one model's probability headline from
    ``llm_probability_cells.csv``."""
    order = cells.sort_values(["dataset_key", "synthetic_method", "condition"])
    return [[r.dataset_key, r.synthetic_method, r.condition, f"{int(r.n_real)} / {int(r.n_syn)}",
             _interval(r.auc, r.auc_ci_low, r.auc_ci_high), _num(r.auc_p_value, 3),
             _interval(r.batch_drs, r.batch_drs_ci_low, r.batch_drs_ci_high),
             _interval(r.raw_drs, r.raw_drs_ci_low, r.raw_drs_ci_high)]
            for r in order.itertuples()]


PROBABILITY_HEADER = ["dataset", "cell", "condition", "n real / syn", "AUC [95 % CI]", "perm. p",
                      "calibrated DRS [95 % CI]", "raw DRS [95 % CI]"]
LIKELIHOOD_HEADER = ["dataset", "cell", "kind", "n real / syn", "AUC [95 % CI]", "direction", "perm. p",
                     "likelihood DRS [95 % CI]"]


def _probability_headline(tables_dir: Path, site: SiteMap) -> list[str]:
    cells = read_table(tables_dir, "llm_probability_cells")
    if cells is None or cells.empty:
        return []
    lines = ["## Headline: the verdict as a probability", "",
             "AUC = P(a synthetic sample gets a higher p_synthetic than a real one): 0.5 = no ranking, 1 = every "
             "synthetic sample ranked above every real one, 0 = the same ranking the wrong way round (an adversary "
             "with a few labelled samples would flip it). The calibrated DRS thresholds p_synthetic at the cell's "
             "median (batch calibration: it never reads the labels), so a discriminator with no ranking sits near "
             "0.5 and the raw DRS (threshold 0.5) shows the label bias. `shuffled_columns` is the positive control "
             "(must be detected), `real_holdout` the negative control (must sit at chance). Fractions; intervals "
             f"95 %. Files: {_downloads(site, 'llm_probability_cells')}.", ""]
    for (provider, model), frame in cells.groupby(["provider", "model"], sort=True):
        lines += _numbered_table(headline_label(provider, model) + "-probability",
                                 f"The verdict as a probability, every cell of {provider} / {model}.",
                                 PROBABILITY_HEADER, probability_headline_rows(frame))
    return lines


def _likelihood_headline(tables_dir: Path, site: SiteMap) -> list[str]:
    cells = read_table(tables_dir, "likelihood_cells")
    if cells is None or cells.empty or "score" not in cells.columns:
        return []
    cells = cells[cells["score"] == "mean_logprob"].sort_values(["dataset_key", "kind", "source"])
    rows = [[r.dataset_key, r.source, r.kind, f"{int(r.n_real)} / {int(r.n_syn)}",
             _interval(r.auc, r.auc_low, r.auc_high), r.direction, _num(r.perm_p, 3),
             _interval(r.drs, r.drs_low, r.drs_high)] for r in cells.itertuples()]
    return ["## Headline: the likelihood discriminator", "",
            "The mean token log-likelihood of each shown table under the packaged model, real holdout samples "
            "against each release (no verdict, no training). AUC as above with its direction; the likelihood DRS "
            "flags a sample outside the central 95 % of separate holdout samples' scores (it never reads a "
            "synthetic label). `real_vs_real` (train against holdout samples) must sit near 0.5. "
            f"Files: {_downloads(site, 'likelihood_cells')}.", "",
            *_numbered_table(HEADLINE_TABLE + "-likelihood", "The likelihood discriminator, every cell (mean token "
                             "log-likelihood).", LIKELIHOOD_HEADER, rows)]


def _question_lines(tables_dir: Path, site: SiteMap) -> list[str]:
    lines = ["## Research questions and where they are answered", ""]
    rows = {name: read_table(tables_dir, name) for name in {rq.table for rq in RESEARCH_QUESTIONS if rq.table}}
    for rq in RESEARCH_QUESTIONS:
        table = rows.get(rq.table)
        measured = rq.table in site.table_files and table is not None and not table.empty
        pages = site.notebook_pages.get(rq.notebook, [])
        where = []
        if pages:
            label = site.section_labels.get((pages[0], rq.section)) if rq.section else None
            where.append(f"{{ref}}`notebook {rq.notebook} § {rq.section} <{label}>`" if label
                         else f"{{doc}}`notebook {rq.notebook} </{pages[0]}>`")
        where += [f"{{numref}}`{site.figure_labels[f]}`" for f in rq.figures if f in site.figure_labels]
        if rq.table:  # a run without verdicts writes llm_cells with a header only: not measured
            where = where + [f"table `{rq.table}` ({_downloads(site, rq.table)})"] if measured else []
        answer = "; ".join(where) if where else "_not in this run_"
        lines.append(f"- **{rq.key}.** {rq.question} → {answer}")
    return lines + [""]


def _paper_lines(tables_dir: Path, site: SiteMap) -> list[str]:
    lines = ["## The paper's numbers beside ours", ""]
    models_counts = read_table(tables_dir, "paper_models_from_counts", keep_empty=True)
    models_trials = read_table(tables_dir, "paper_models_from_trials", keep_empty=True)
    cells = read_table(tables_dir, "paper_cells_from_trials", keep_empty=True)
    if models_counts is None and cells is None:
        return lines + ["_No `results/tables/paper_*.csv`: notebook 08 needs the paper's records "
                        "(`../shared/reference`)._", ""]
    lines += ["The paper's published counts and its own trial records (`../shared/reference`), scored by "
              "notebook 08. DRS and accuracy in percent.", ""]
    if models_counts is not None and models_trials is not None:
        merged = models_counts.merge(models_trials, on=["provider", "model"], suffixes=("_counts", "_trials"))
        rows = [[f"{r.provider} / {r.model}", int(r.N_counts), f"{r.DRS_counts:.1f}", f"{r.Accuracy_counts:.1f}",
                 int(r.N_trials), f"{r.DRS_trials:.1f}", f"{r.Accuracy_trials:.1f}"]
                for r in merged.itertuples()]
        lines += _numbered_table(
            "tbl-paper-models", "Per model: from the paper's counts and from its trial records.",
            ["provider / model", "N (counts)", "DRS (counts)", "accuracy (counts)", "N (trials)",
             "DRS (trials)", "accuracy (trials)"], rows)
    if cells is not None:
        matches = int(cells["matches"].astype(bool).sum())
        lines += [f"Per cell, the paper's printed DRS against the DRS its own trial records give: **{matches} of "
                  f"{len(cells)} cells match** ({_downloads(site, 'paper_cells_from_trials')}).", ""]
        rows = [[r.dataset, r.synthetic_method, r.condition, f"{r.provider} / {r.model}", int(r.paper_n),
                 f"{r.paper_drs:.1f}", int(r.N), f"{r.DRS:.1f}", "yes" if bool(r.matches) else "**no**"]
                for r in cells.itertuples()]
        lines += _numbered_table(
            "tbl-paper-cells", "Per cell: the paper's DRS beside the DRS of its own trial records.",
            ["dataset", "synthesizer", "condition", "provider / model", "paper n", "paper DRS", "records n",
             "records DRS", "match"], rows)
    return lines


def landing_page(tables_dir: Path, site: SiteMap, toctree: list[str]) -> str:
    """The landing page (``index.md``) as MyST Markdown from ``tables_dir``, linking ``site``'s pages,
    sections, figures and table files, ending with the ``toctree`` lines."""
    lines = [
        "# LLM-as-a-Discriminator — supplementary material", "",
        "A data holder releases a synthetic table instead of the real one. **Can a large language model, shown a "
        "20-row sample, tell whether it is REAL or SYNTHETIC?** If it can, the release carries artefacts an "
        "adversary could exploit. Each trial shows the model one sample, either as a table only (**C1**) or with "
        "a block of distributional statistics (**C2**), and asks for a verdict with a confidence.", "",
        "The score is the **Disclosure Risk Score** DRS = min(p_REAL, p_SYN): p_REAL is the share of real "
        "samples called REAL, p_SYN the share of synthetic samples called SYNTHETIC. 0: the model never tells "
        "the labels apart (an answerer that always says one label scores 0); 0.5: balanced chance-level "
        "discrimination; 1: every sample recognised, the release is distinguishable. Every DRS comes with its "
        "bootstrap interval and n, per provider and model, never pooled.", "",
        "This supplementary is built from the executed notebooks of `make reproduce` without re-running them; "
        "every number below is read from `results/tables/` ({doc}`all tables <tables>`).", ""]
    from llmdisc.pipeline.findings import findings_markdown

    lines += answer_lines(tables_dir, site) + findings_markdown(tables_dir, heading="##") + [""]
    for part in (_question_lines, _probability_headline, _likelihood_headline, _headline, _paper_lines):
        lines += part(tables_dir, site)
    return "\n".join(lines + toctree) + "\n"


def answer_lines(tables_dir: Path, site: SiteMap) -> list[str]:
    """The page's lead, as the README's: the paper's claims judged, and the headline figure when drawn."""
    from llmdisc.pipeline.claims import claims_markdown

    def link(target: str, text: str) -> str:
        if target.startswith("notebooks/"):
            pages = site.notebook_pages.get(Path(target).stem[:2], [])
            return f"{{doc}}`{text} </{pages[0]}>`" if pages else text
        files = site.table_files.get(target, [])
        return f"{{download}}`{text} <{files[0]}>`" if files else text

    lines = ["## Does the paper hold?", "", *claims_markdown(tables_dir, link=link), ""]
    if "headline" in site.figure_labels or (figures_dir() / "headline.png").exists():
        # an image, not a numbered figure: notebook 07's figures keep their numbers (it is Figure n there)
        lines += ["```{image} _figures/headline.png", ":alt: separation D of every release and control per "
                  "instrument", ":width: 100%", "```", "", caption_text("headline", {}), ""]
    return lines


def _format(value: object) -> str:
    if isinstance(value, float):
        if math.isnan(value):
            return "–"
        return f"{value:.0f}" if value.is_integer() and abs(value) >= 1000 else f"{value:.4g}"
    return str(value)


def tables_page(tables: dict[str, Path], site: SiteMap) -> str:
    """The tables page (``tables.md``): every table of ``tables`` (name → CSV, in order) rendered (first
    :data:`MAX_TABLE_ROWS` rows), files linked."""
    lines = ["# Result tables", "",
             "Every table the run wrote, as rendered from its CSV (numbers to 4 significant digits; the files "
             "hold full precision).", ""]
    for name, path in tables.items():
        about = f"{TABLE_DESCRIPTIONS.get(name, '')} Files: {_downloads(site, name)}.".strip()
        lines += [f"## `{name}`", "", about, ""]
        try:
            frame = pd.read_csv(path)
        except (ValueError, OSError) as exc:
            lines += [f"_Could not be read: {type(exc).__name__}._", ""]
            continue
        if frame.empty:
            lines += ["_Empty table (no rows)._", ""]
            continue
        frame = frame.loc[:, [c for c in frame.columns if not str(c).startswith("Unnamed")]]
        rows = [[_format(v) for v in row] for row in frame.head(MAX_TABLE_ROWS).itertuples(index=False)]
        note = "" if len(frame) <= MAX_TABLE_ROWS else f" (first {MAX_TABLE_ROWS} of {len(frame)} rows)"
        label = "tbl-" + name.replace("_", "-")
        lines += _numbered_table(label, f"`{name}`{note}.", [str(c) for c in frame.columns], rows)
    return "\n".join(lines) + "\n"
