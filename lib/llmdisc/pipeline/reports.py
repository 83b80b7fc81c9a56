"""Supplementary material: executed notebooks made safe to publish and rendered to browsable HTML.

:func:`scrub_notebook` removes what must never be published from an executed notebook (absolute
paths of this machine, the values of API-key variables); :func:`render_html` turns every executed
notebook into HTML under ``reports/html/`` and writes an ``index.html`` linking every notebook,
figure and table. :func:`find_leaks` is what the tests use to check the result.
"""

from __future__ import annotations

import html
import os
import re
import sys
from pathlib import Path

from llmdisc.paths import figures_dir, project_root, relative_to_root, reports_dir, results_dir, shared_dir

_KEY_PATTERN = re.compile(r"AIza[0-9A-Za-z_-]{30,}|sk-[A-Za-z0-9_-]{20,}|gsk_[A-Za-z0-9]{20,}")
_SECRET_ENV = re.compile(r"(API_KEY|TOKEN|SECRET|PASSWORD)$", re.IGNORECASE)


def _replacements() -> list[tuple[str, str]]:
    """Absolute paths to hide, longest first, with what replaces them."""
    pairs = [(str(project_root()), "<project>")]
    shared = shared_dir()
    if shared is not None:
        pairs.append((str(shared), "<shared>"))
    pairs.append((sys.prefix, "<venv>"))
    pairs.append((sys.base_prefix, "<python>"))
    home = os.path.expanduser("~")
    if home not in ("/", ""):
        pairs.append((home, "~"))
    pairs.sort(key=lambda p: len(p[0]), reverse=True)
    return pairs


def _secret_values() -> list[str]:
    return [v for k, v in os.environ.items() if _SECRET_ENV.search(k) and len(v) >= 8]


def scrub_text(text: str) -> str:
    """Replace absolute machine paths and secret values in ``text``."""
    for secret in _secret_values():
        text = text.replace(secret, "<redacted>")
    text = _KEY_PATTERN.sub("<redacted>", text)
    for old, new in _replacements():
        text = text.replace(old, new)
    return text


def scrub_notebook(path: Path | str) -> None:
    """Rewrite an executed notebook in place with :func:`scrub_text` applied to sources, outputs and metadata."""
    import nbformat  # imported here: it pulls in jsonschema, slow to import for callers of scrub_text only

    path = Path(path)
    if not path.exists():
        return
    raw = path.read_text(encoding="utf-8")
    cleaned = scrub_text(raw.replace("\\/", "/"))
    if cleaned != raw:
        nbformat.validate(nbformat.reads(cleaned, as_version=4))
        path.write_text(cleaned, encoding="utf-8")


def find_leaks(text: str) -> list[str]:
    """Return the problems in a published text: API-key-shaped strings, secret values, absolute paths."""
    problems = [f"key-shaped string {m.group(0)[:6]}…" for m in _KEY_PATTERN.finditer(text)]
    problems += ["value of a secret environment variable" for v in _secret_values() if v in text]
    for path, _ in _replacements():
        if len(path) > 1 and path in text:
            problems.append(f"absolute path {path}")
    return problems


def render_html(config_name: str | None = None) -> Path:
    """Render every executed notebook to ``reports/html/`` and write the index page; return its path."""
    from nbconvert import HTMLExporter

    executed_root = reports_dir() / "executed"
    html_dir = reports_dir() / "html"
    html_dir.mkdir(parents=True, exist_ok=True)
    exporter = HTMLExporter()
    pages: list[tuple[str, str]] = []
    configs = [executed_root / config_name] if config_name else sorted(executed_root.glob("*"))
    for config_dir in configs:
        for nb_path in sorted(config_dir.glob("*.ipynb")):
            body, _ = exporter.from_filename(str(nb_path))
            out = html_dir / config_dir.name / f"{nb_path.stem}.html"
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(scrub_text(body), encoding="utf-8")
            pages.append((f"{config_dir.name}/{nb_path.stem}", out.relative_to(html_dir).as_posix()))
    index = html_dir / "index.html"
    index.write_text(_index_page(pages, html_dir), encoding="utf-8")
    return index


def _link_list(items: list[tuple[str, str]]) -> str:
    if not items:
        return "<p><em>none yet</em></p>"
    return "<ul>" + "".join(f'<li><a href="{html.escape(href)}">{html.escape(label)}</a></li>'
                            for label, href in items) + "</ul>"


def _index_page(pages: list[tuple[str, str]], html_dir: Path) -> str:
    def rel(p: Path) -> str:
        return os.path.relpath(p, html_dir).replace(os.sep, "/")

    figures = [(p.name, rel(p)) for p in sorted(figures_dir().glob("*.png"))]
    figures += [(p.name, rel(p)) for p in sorted(figures_dir().glob("*.pdf"))]
    tables = [(p.relative_to(results_dir()).as_posix(), rel(p))
              for p in sorted(results_dir().glob("tables/*.csv"))]
    tables += [(p.relative_to(results_dir()).as_posix(), rel(p))
               for p in sorted(results_dir().glob("baselines/*.csv"))]
    thumbs = "".join(f'<a href="{html.escape(h)}"><img src="{html.escape(h)}" alt="{html.escape(n)}" '
                     f'style="max-width:30%;margin:4px;border:1px solid #ccc"></a>'
                     for n, h in figures if n.endswith(".png"))
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>llmdisc — supplementary material</title>
<style>body{{font-family:sans-serif;max-width:70em;margin:2em auto;line-height:1.4}}</style></head>
<body>
<h1>LLM-as-a-Discriminator — supplementary material</h1>
<p>Executed notebooks of the compendium (rendered by <code>make reproduce</code>), the figures and the
result tables. Every number comes from the
files linked here.</p>
<h2>Executed notebooks</h2>{_link_list(pages)}
<h2>Figures</h2>{thumbs}{_link_list(figures)}
<h2>Tables</h2>{_link_list(tables)}
</body></html>
"""
