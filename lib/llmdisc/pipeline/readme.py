"""The README's results table, generated from ``results/tables/`` so the two can never drift apart.

:func:`render_results_block` builds the Markdown between the ``<!-- results:start -->`` and
``<!-- results:end -->`` markers from ``results/tables/llm_cells.csv`` (written by notebook 07), naming the
configuration and the date of the run that wrote the tables (``results/tables/llm_manifest.json``);
:func:`update_readme` rewrites that block, and only for a configuration with ``readme: true``
(``configs/default.yaml``): a run of another configuration rewrites ``results/tables`` but never the README.
A test compares the README with a fresh rendering.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pandas as pd

from llmdisc.discrimination.records import protocol_label
from llmdisc.paths import project_root, results_dir
from llmdisc.pipeline.landing import NO_VERDICTS

START, END = "<!-- results:start -->", "<!-- results:end -->"
_BLOCK = re.compile(re.escape(START) + r".*?" + re.escape(END), re.DOTALL)


def _pct(value: float) -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{100 * value:.1f}"


def tables_source(tables_dir: Path | None = None) -> tuple[str, str]:
    """The configuration and the date (UTC, ``YYYY-MM-DD``) of the run that wrote ``results/tables``.

    Read from ``llm_manifest.json`` (notebook 07's manifest beside the tables); ``("", "")`` when it is missing
    or unreadable (tables written before notebook 07 recorded it).
    """
    path = (tables_dir or results_dir() / "tables") / "llm_manifest.json"
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "", ""
    return str(manifest.get("parameters", {}).get("config_name", "")), str(manifest.get("created", ""))[:10]


def _source_sentence(tables_dir: Path) -> str:
    config, date = tables_source(tables_dir)
    if not config:
        return "Generated from `results/tables/` (the run that wrote them did not record its configuration)"
    return f"Generated from `results/tables/`, written by the run of `configs/{config}.yaml` on {date}"


def _who(row: Any) -> str:
    protocol = protocol_label(row._asdict() if hasattr(row, "_asdict") else row)
    return f"{row.provider} / {row.model}" + (f" ({protocol})" if protocol else "")


def render_results_block(tables_dir: Path | None = None) -> str:
    """Return the README block (markers included) for the LLM cell table in ``tables_dir``.

    Args:
        tables_dir: folder holding ``llm_cells.csv`` (default ``results/tables``).

    Returns:
        Markdown: one row per dataset × synthesizer × condition × provider/model with valid n per label,
        p_REAL, p_SYN and DRS with its 95 % bootstrap interval (percent); a placeholder when no table exists.
    """
    tables_dir = tables_dir or results_dir() / "tables"
    path = tables_dir / "llm_cells.csv"
    if not path.exists():
        return f"{START}\n_Run `make reproduce` to fill this table from `results/tables/`._\n{END}"
    cells = pd.read_csv(path)
    source = _source_sentence(tables_dir) + "."
    if cells.empty:
        return "\n".join([START, source, "", NO_VERDICTS,
                          *_probability_lines(tables_dir / "llm_probability_cells.csv"), END])
    lines = [START,
             _source_sentence(tables_dir) + ": `llm_cells.csv` "
             "(percent; DRS interval: 95 % bootstrap; n = valid trials with a real / synthetic sample; "
             "one row per protocol: prompt variant, metadata source, sampling, scoring and configuration).",
             "",
             "| dataset | synthesizer | condition | provider / model (protocol) | n real / syn | p_REAL | p_SYN | "
             "DRS [95 % CI] |",
             "|---|---|---|---|---|---|---|---|"]
    order = [c for c in ("dataset", "synthetic_method", "provider", "model", "prompt_variant", "metadata_source",
                         "sampling", "scoring", "config_name", "condition") if c in cells]
    for row in cells.sort_values(order).itertuples():
        lines.append(
            f"| {row.dataset} | {row.synthetic_method} | {row.condition} | {_who(row)} | "
            f"{int(row.n_valid_real)} / {int(row.n_valid_syn)} | {_pct(row.p_real)} | {_pct(row.p_syn)} | "
            f"{_pct(row.drs)} [{_pct(row.drs_ci_low)}, {_pct(row.drs_ci_high)}] |")
    excluded = int(cells["n_excluded"].sum()) if "n_excluded" in cells else 0
    lines += ["", f"Trials excluded as invalid or failed: {excluded} of {int(cells['n_total'].sum())}."]
    lines += _probability_lines(tables_dir / "llm_probability_cells.csv")
    return "\n".join([*lines, END])


def _num(value: float, digits: int = 2) -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f}"


def _probability_lines(path: Path) -> list[str]:
    """The verdict-as-probability table (AUC, calibrated and raw DRS), when that table exists."""
    if not path.exists():
        return []
    cells = pd.read_csv(path)
    lines = ["", "The verdict as a probability (`results/tables/llm_probability_cells.csv`): AUC of "
             "log P(SYNTHETIC) − log P(REAL) with its 95 % DeLong interval and permutation p (0.5 = no ranking, "
             "1 = every synthetic sample ranked above every real one, 0 = perfectly the wrong way round); DRS "
             "decided at the cell's median score (batch-calibrated), at a content-free table's score "
             "(contextual) and at p > 0.5 (raw), with 95 % bootstrap intervals; n = valid scored trials real / "
             "synthetic. `shuffled_columns` (positive control) must be detected, `real_holdout` (negative "
             "control) must sit at chance.", "",
             "| dataset | cell | condition | provider / model | n real / syn | AUC [95 % CI] | p | "
             "batch DRS [95 % CI] | contextual DRS | raw DRS |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    order = [c for c in ("dataset_key", "provider", "model", "prompt_variant", "metadata_source", "sampling",
                         "scoring", "config_name", "condition", "synthetic_method") if c in cells]
    for row in cells.sort_values(order).itertuples():
        lines.append(
            f"| {row.dataset_key} | {row.synthetic_method} | {row.condition} | {_who(row)} | "
            f"{int(row.n_real)} / {int(row.n_syn)} | {_num(row.auc)} [{_num(row.auc_ci_low)}, "
            f"{_num(row.auc_ci_high)}] | {_num(row.auc_p_value, 3)} | {_num(row.batch_drs)} "
            f"[{_num(row.batch_drs_ci_low)}, {_num(row.batch_drs_ci_high)}] | {_num(row.context_drs)} | "
            f"{_num(row.raw_drs)} |")
    return lines


def update_readme(readme: Path | None = None, *, config: Any = None) -> bool:
    """Rewrite the README's results block from ``results/tables``; return True when it changed.

    Args:
        readme: the README (default the project's).
        config: the :class:`~llmdisc.pipeline.config.RunConfig` of the run that just wrote the tables; when
            given, the block is rewritten only if its ``readme`` flag is true (``configs/default.yaml``), so a run
            of the tiny, small or paper configuration never puts its numbers under the README's results.
            None: rewrite (a deliberate call, e.g. from a test or a maintainer).
    """
    if config is not None and not getattr(config, "readme", False):
        return False
    readme = readme or project_root() / "README.md"
    text = readme.read_text(encoding="utf-8")
    if not _BLOCK.search(text):
        return False
    new = _BLOCK.sub(lambda _: render_results_block(), text)
    if new != text:
        readme.write_text(new, encoding="utf-8")
        return True
    return False


def readme_block(readme: Path | None = None) -> str:
    """The results block currently in the README (markers included)."""
    readme = readme or project_root() / "README.md"
    match = _BLOCK.search(readme.read_text(encoding="utf-8"))
    return match.group(0) if match else ""
