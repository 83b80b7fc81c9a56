"""The README's results block, generated from ``results/tables/`` so the two can never drift apart.

:func:`render_results_block` builds the Markdown between the ``<!-- results:start -->`` and
``<!-- results:end -->`` markers: the summary of findings (:mod:`llmdisc.pipeline.findings`, the landing page's
first section), naming the configuration and the date of the run that wrote the tables
(``results/tables/llm_manifest.json``);
:func:`update_readme` rewrites that block, and only for a configuration with ``readme: true``
(``configs/default.yaml``): a run of another configuration rewrites ``results/tables`` but never the README.
A test compares the README with a fresh rendering.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from llmdisc.paths import project_root, results_dir

START, END = "<!-- results:start -->", "<!-- results:end -->"
_BLOCK = re.compile(re.escape(START) + r".*?" + re.escape(END), re.DOTALL)


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


def render_results_block(tables_dir: Path | None = None) -> str:
    """Return the README block (markers included): which run wrote the tables, then the summary of findings
    (:func:`llmdisc.pipeline.findings.findings_markdown`, the landing page's first section, word for word).

    Args:
        tables_dir: ``results/tables`` (default the project's).
    """
    from llmdisc.pipeline.findings import findings_markdown

    tables_dir = tables_dir or results_dir() / "tables"
    if not tables_dir.is_dir() or not any(tables_dir.glob("*.csv")):
        return f"{START}\n_Run `make reproduce` to fill this summary from `results/tables/`._\n{END}"
    return "\n".join([START, _source_sentence(tables_dir) + "; every per-cell table is in `results/tables/` and "
                       "on the supplementary site.", "", *findings_markdown(tables_dir, heading="###"), END])


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
