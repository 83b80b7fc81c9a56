"""The generated blocks of the README (``claims``) and of ``docs/results.md`` (``results``), between
``<!-- name:start -->`` / ``<!-- name:end -->`` markers, from ``results/tables/`` so neither can drift.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from llmdisc.paths import project_root, results_dir

START, END = "<!-- results:start -->", "<!-- results:end -->"
CLAIMS_START, CLAIMS_END = "<!-- claims:start -->", "<!-- claims:end -->"
HEADLINE_FIGURE = "figures/headline.png"
"""The committed headline figure (notebook 07 redraws it; a test keeps the two equal)."""


def _pattern(start: str, end: str) -> re.Pattern[str]:
    return re.compile(re.escape(start) + r".*?" + re.escape(end), re.DOTALL)


_BLOCK = _pattern(START, END)
_CLAIMS = _pattern(CLAIMS_START, CLAIMS_END)


def tables_source(tables_dir: Path | None = None) -> tuple[str, str]:
    """The configuration and the date (UTC, ``YYYY-MM-DD``) of the run that wrote ``results/tables``, from its
    ``llm_manifest.json``; ``("", "")`` when it is missing or unreadable."""
    path = (tables_dir or results_dir() / "tables") / "llm_manifest.json"
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "", ""
    return str(manifest.get("parameters", {}).get("config_name", "")), str(manifest.get("created", ""))[:10]


def _later_stages(tables_dir: Path, date: str) -> list[str]:
    """``notebook 08 (2026-12-06)`` for each stage re-run on its own after the run's ``date``."""
    later = []
    for path in sorted(tables_dir.glob("*manifest*.json")):
        try:
            manifest = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        created, words = str(manifest.get("created", ""))[:10], str(manifest.get("stage", "")).split(" ")
        if created > date and words[0][:2].isdigit():
            part = f" {words[1]}" if len(words) > 1 and words[1].startswith("§") else ""
            later.append(f"notebook {words[0][:2]}{part} ({created})")
    return later


def _source_sentence(tables_dir: Path) -> str:
    config, date = tables_source(tables_dir)
    if not config:
        return "Generated from `results/tables/` (the run that wrote them did not record its configuration)"
    later = _later_stages(tables_dir, date)
    since = (f", with {' and '.join(later)} re-run on {'its' if len(later) == 1 else 'their'} own since"
             if later else "")
    return f"Generated from `results/tables/`, written by the run of `configs/{config}.yaml` on {date}{since}"


def render_results_block(tables_dir: Path | None = None) -> str:
    """The results block (markers included): which run wrote ``tables_dir``, then the findings."""
    from llmdisc.pipeline.findings import findings_markdown

    tables_dir = tables_dir or results_dir() / "tables"
    if not tables_dir.is_dir() or not any(tables_dir.glob("*.csv")):
        return f"{START}\n_Run `make reproduce` to fill this summary from `results/tables/`._\n{END}"
    return "\n".join([START, _source_sentence(tables_dir) + "; every per-cell table is in `results/tables/` and "
                       "on the supplementary site.", "", *findings_markdown(tables_dir, heading="###"), END])


def render_claims_block(tables_dir: Path | None = None) -> str:
    """The README's claims block (markers included): the claims, the headline figure, which run wrote them."""
    from llmdisc.pipeline.claims import claims_markdown

    tables_dir = tables_dir or results_dir() / "tables"
    return "\n".join([CLAIMS_START, *claims_markdown(tables_dir), "",
                      f"![Separation D of every release and control from real data, per instrument]"
                      f"({HEADLINE_FIGURE})", "", _source_sentence(tables_dir) + "; the figure is drawn by notebook 07 "
                      "§ 5c; every number of the run is in [docs/results.md](docs/results.md).", CLAIMS_END])


def _rewrite(path: Path, blocks: dict[re.Pattern[str], str]) -> bool:
    """Replace each block present in ``path``; True when the file changed."""
    if not path.is_file():
        return False
    text = new = path.read_text(encoding="utf-8")
    for pattern, block in blocks.items():
        new = pattern.sub(lambda _, b=block: b, new)
    if new != text:
        path.write_text(new, encoding="utf-8")
    return new != text


def update_readme(readme: Path | None = None, *, config: Any = None) -> bool:
    """Rewrite the generated blocks of ``readme`` (default the README and ``docs/results.md``); True when a
    file changed. With the run's ``config``, only if its ``readme`` flag is true (a tiny or paper run never
    is)."""
    if config is not None and not getattr(config, "readme", False):
        return False
    blocks = {_BLOCK: render_results_block(), _CLAIMS: render_claims_block()}
    paths = [readme] if readme else [project_root() / "README.md", project_root() / "docs" / "results.md"]
    return any([_rewrite(path, blocks) for path in paths])


def readme_block(readme: Path | None = None, *, name: str = "results") -> str:
    """The generated block ``name`` (``results`` or ``claims``) now in ``readme`` (default: where it
    lives)."""
    pattern = _BLOCK if name == "results" else _CLAIMS
    default = "docs/results.md" if name == "results" else "README.md"
    match = pattern.search((readme or project_root() / default).read_text(encoding="utf-8"))
    return match.group(0) if match else ""
