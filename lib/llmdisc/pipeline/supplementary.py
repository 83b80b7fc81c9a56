"""The supplementary material: the executed notebooks published as a Sphinx + MyST-NB site, never re-executed;
``reports/html/`` is replaced only when no leak is found, and the build skipped when nothing it hashes
changed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import shutil
import subprocess
import sys
import time
from importlib import resources
from pathlib import Path
from typing import Any, Callable

from llmdisc.errors import LlmdiscError
from llmdisc.manifest import package_versions
from llmdisc.paths import figures_dir, relative_to_root, reports_dir, results_dir
from llmdisc.pipeline.captions import caption_text
from llmdisc.pipeline.landing import SiteMap, landing_page, tables_page
from llmdisc.pipeline.reports import find_leaks, scrub_text
from llmdisc.pipeline.runs import NOTEBOOKS

PIPELINE_ORDER = list(NOTEBOOKS)
"""Notebook numbers in the order the pipeline runs them (08 before 07): the order of the pages."""
TOOL_PACKAGES = ("sphinx", "myst-nb", "myst-parser", "sphinx-book-theme", "pydata-sphinx-theme", "docutils")
BUILD_RECORD = ".llmdisc-build.json"
"""File in the published folder holding the fingerprint of the sources it was built from."""
_TEXT_SUFFIXES = {".html", ".js", ".css", ".txt", ".json", ".csv", ".tex", ".svg", ".ipynb", ".inv", ""}
_SAVED_FIGURE = re.compile(
    r"save_figure\((?:[^()]|\([^()]*(?:\([^()]*\)[^()]*)*\))*?,\s*[\"'](\w+)[\"']\s*(?:,\s*\w+=[\w.]+\s*)*\)")
"""A ``save_figure(figure, "name")`` call (keyword arguments after the name allowed): the figure's name."""
_SECTION = re.compile(r"^##\s+(\d+[a-z]?)\.?\s", re.MULTILINE)
"""A numbered section heading (``## 3. …``, ``## 1b. …``): the landing page links it by its number."""


class SupplementaryError(LlmdiscError):
    """The supplementary could not be built or would publish a leak; the message says which and what to do."""


def _slug(*parts: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", "-".join(parts).lower()).strip("-")


def _stage_of(stem: str) -> str:
    return stem[:2] if stem[:2].isdigit() else ""


def _page_order(stem: str) -> tuple[int, str]:
    stage = _stage_of(stem)
    return (PIPELINE_ORDER.index(stage) if stage in PIPELINE_ORDER else len(PIPELINE_ORDER), stem)


def run_label(parameters: dict[str, Any]) -> str:
    """A notebook's papermill parameters in its page title, ``adult · local/default model · neutral/real/fresh``
    (dataset, provider/model, protocol: those present; ``""`` when none is)."""
    parts = []
    dataset = parameters.get("dataset_key") or parameters.get("dataset")
    if dataset:
        encoding = parameters.get("encoding")
        parts.append(f"{dataset}-{encoding}" if encoding and not parameters.get("dataset_key") else str(dataset))
    if parameters.get("provider"):
        parts.append(f"{parameters['provider']}/{parameters.get('model') or 'default model'}")
    protocol = [str(parameters[k]) for k in ("variant", "metadata_source", "sampling") if parameters.get(k)]
    if protocol:
        parts.append("/".join(protocol))
    return " · ".join(parts)


def _figure_cell(name: str, label: str, counts: dict[str, object]) -> str:
    return "\n".join([
        f"```{{figure}} ../_figures/{name}.png", f":name: {label}", f":alt: {name}", ":width: 100%",
        ":figclass: llmdisc-figure", "",
        caption_text(name, counts) + f" Files: {{download}}`PNG <../_figures/{name}.png>`"
        + (f" · {{download}}`PDF <../_figures/{name}.pdf>`" if (figures_dir() / f"{name}.pdf").exists() else ""),
        "```"])


def _caption_counts(tables_dir: Path) -> dict[str, object]:
    import pandas as pd

    counts: dict[str, object] = {}
    with contextlib.suppress(OSError, ValueError, KeyError):
        cells = pd.read_csv(tables_dir / "llm_cells.csv")
        counts.update(n_valid=int(cells["n_valid"].sum()), n_cells=len(cells))
    with contextlib.suppress(OSError, ValueError, KeyError):
        totals = pd.read_csv(tables_dir / "human_totals.csv")
        pooled = totals[(totals["annotator"] == "pooled") & (totals["condition"] == "all")]
        if len(pooled):
            counts["n_human"] = int(pooled["n_valid"].iloc[0])
    return counts


def _stage_notebook(path: Path, config: str, docname: str, site: SiteMap | None,
                    counts: dict[str, object]) -> tuple[str, str]:
    """The notebook copy as staged (titled, sections labelled, figures captioned) and its navigation title."""
    import nbformat

    nb = nbformat.read(path, as_version=4)
    parameters = nb.metadata.get("papermill", {}).get("parameters", {}) or {}
    label = run_label(parameters)
    cells = nb.cells
    first_md = next((i for i, c in enumerate(cells) if c.cell_type == "markdown"), None)
    if first_md is not None and cells[first_md].source.lstrip().startswith("# "):
        head, _, rest = cells[first_md].source.lstrip().partition("\n")
        title = head[2:].strip()
    else:
        title, rest = path.stem, None
    intro = [f"# {title} — {label}" if label else f"# {title}", ""]
    intro += [f"Configuration `{config}`; executed copy `reports/executed/{config}/{path.name}`, shown with "
              "the outputs the run stored (not re-executed)."]
    if parameters:
        intro += ["", "Run parameters: " + " · ".join(f"`{k}={json.dumps(v)}`" for k, v in sorted(parameters.items()))
                  + "."]
    if rest is not None:
        cells[first_md].source = "\n".join(intro) + "\n\n" + rest.lstrip("\n")
    else:
        cells.insert(0, nbformat.v4.new_markdown_cell("\n".join(intro), id="llmdisc-title"))
    staged = []
    for cell in cells:
        if cell.cell_type == "markdown":
            def _target(match: re.Match) -> str:
                number = match.group(1)
                target = f"{_slug(docname)}-s{number}"
                if site is not None:
                    site.section_labels[(docname, number)] = target
                return f"({target})=\n{match.group(0)}"
            cell.source = _SECTION.sub(_target, cell.source)
        staged.append(cell)
        if cell.cell_type == "code" and _stage_of(path.stem) == "07":
            for name in _SAVED_FIGURE.findall(cell.source):
                if not (figures_dir() / f"{name}.png").exists():
                    continue
                fig_label = _slug("fig", config, name)
                if site is not None:
                    site.figure_labels.setdefault(name, fig_label)
                # A fixed cell id: nbformat draws random ones, and the staged copy must hash the same each time.
                staged.append(nbformat.v4.new_markdown_cell(_figure_cell(name, fig_label, counts),
                                                            id=f"llmdisc-figure-{name}"))
    nb.cells = staged
    # Scrubbed here, before rendering: the renderer then escapes the placeholders (``<project>``) as text.
    return scrub_text(nbformat.writes(nb).replace("\\/", "/")), nav_title(title, label)


def nav_title(title: str, label: str) -> str:
    """The short title in the navigation: the notebook's name before its colon, and the run label."""
    short = re.split(r"[:(]", title, maxsplit=1)[0].strip().rstrip("—·-").strip()
    return f"{short} — {label}" if label else short


def _table_sources() -> dict[str, Path]:
    tables = {p.stem: p for p in sorted((results_dir() / "tables").glob("*.csv"))}
    tables.update({f"baselines_{p.stem}": p for p in sorted((results_dir() / "baselines").glob("*.csv"))})
    return tables


def stage_sources(config_name: str | None = None) -> dict[str, bytes]:
    """Every file of the Sphinx source tree, as ``{relative path: content}``, ``config_name``'s notebooks
    first (``None``: every configuration); SupplementaryError when there is no executed notebook."""
    executed_root = reports_dir() / "executed"
    configs = sorted(p.name for p in executed_root.glob("*") if p.is_dir() and any(p.glob("*.ipynb")))
    if config_name in configs:
        configs.remove(config_name)
        configs.insert(0, config_name)
    if not configs:
        raise SupplementaryError(
            f"no executed notebook under {relative_to_root(executed_root)}/<config>/: run `make reproduce` "
            "(or `llmdisc run --config …`) first; the supplementary is built from its executed copies")
    tables_dir = results_dir() / "tables"
    counts = _caption_counts(tables_dir)
    files: dict[str, bytes] = {}
    template = resources.files("llmdisc.pipeline") / "templates"
    files["conf.py"] = (template / "supplementary_conf.py").read_bytes()
    files["_static/llmdisc.css"] = (template / "supplementary.css").read_bytes()
    files["_static/favicon.svg"] = (template / "favicon.svg").read_bytes()
    site = SiteMap()
    for path in sorted(figures_dir().glob("*.png")) + sorted(figures_dir().glob("*.pdf")):
        files[f"_figures/{path.name}"] = path.read_bytes()
    tables = _table_sources()
    for name, csv in tables.items():
        site.table_files[name] = [f"_tables/{name}.csv"]
        files[f"_tables/{name}.csv"] = scrub_text(csv.read_text(encoding="utf-8")).encode("utf-8")
        tex = csv.with_suffix(".tex")
        if tex.exists():
            site.table_files[name].append(f"_tables/{name}.tex")
            files[f"_tables/{name}.tex"] = scrub_text(tex.read_text(encoding="utf-8")).encode("utf-8")
    toctree: list[str] = []
    listing = ["## The notebooks, in pipeline order", ""]
    for position, config in enumerate(configs):
        stems = sorted((p.stem for p in (executed_root / config).glob("*.ipynb")), key=_page_order)
        entries: list[tuple[str, str]] = []
        if len(configs) > 1:
            listing += ["", f"Configuration `{config}`:", ""]
        for stem in stems:
            docname = f"{config}/{stem}"
            primary = position == 0
            text, short = _stage_notebook(executed_root / config / f"{stem}.ipynb", config, docname,
                                          site if primary else None, counts)
            files[f"{docname}.ipynb"] = text.encode("utf-8")
            if primary:
                site.notebook_pages.setdefault(_stage_of(stem), []).append(docname)
            entries.append((short, docname))
        listing += [f"- {{doc}}`{short} <{docname}>`" for short, docname in entries]
        toctree += ["```{toctree}", f":caption: Notebooks — configuration {config}", ":maxdepth: 1",
                    ":hidden:", "", *(f"{short} <{docname}>" for short, docname in entries), "```", ""]
    toctree += ["```{toctree}", ":caption: Results", ":maxdepth: 1", ":hidden:", "", "tables", "```", ""]
    listing += ["- {doc}`Result tables <tables>`: every table of the run, with its CSV and LaTeX files", ""]
    files["index.md"] = landing_page(tables_dir, site, listing + toctree).encode("utf-8")
    files["tables.md"] = tables_page(tables, site).encode("utf-8")
    return files


def _sync(files: dict[str, bytes], src: Path) -> None:
    """Write ``files`` under ``src``: unchanged files untouched (Sphinx rebuilds by mtime), stale ones
    removed."""
    src.mkdir(parents=True, exist_ok=True)
    for rel, content in files.items():
        path = src / rel
        if path.is_file() and path.read_bytes() == content:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
    for path in sorted(src.rglob("*"), reverse=True):
        rel = path.relative_to(src).as_posix()
        if path.is_file() and rel not in files:
            path.unlink()
        elif path.is_dir() and not any(path.iterdir()):
            path.rmdir()


def fingerprint(files: dict[str, bytes]) -> str:
    """sha256 over the staged sources and the publishing tools' versions: what decides the built site."""
    digest = hashlib.sha256()
    digest.update(json.dumps(package_versions(TOOL_PACKAGES), sort_keys=True).encode())
    for rel in sorted(files):
        digest.update(rel.encode() + b"\0" + hashlib.sha256(files[rel]).digest())
    return digest.hexdigest()


def leaks_in_tree(directory: Path) -> list[str]:
    """Every secret or machine path :func:`find_leaks` finds in the text files under ``directory``."""
    problems = []
    for path in sorted(directory.rglob("*")):
        if not path.is_file() or path.suffix not in _TEXT_SUFFIXES:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        problems += [f"{path.relative_to(directory).as_posix()}: {p}" for p in find_leaks(text)]
    return problems


def build_site(src: Path, out: Path, doctrees: Path) -> tuple[float, Path]:
    """Run Sphinx (HTML builder) on ``src`` into ``out``; return seconds and the warnings file
    (SupplementaryError with the end of its output when it fails)."""
    warnings = doctrees.parent / "warnings.txt"
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "sphinx", "-b", "html", "-q", "-j", "auto", "-d", str(doctrees), "-w",
         str(warnings), str(src), str(out)], capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if result.returncode != 0:
        raise SupplementaryError(
            f"sphinx-build failed (exit {result.returncode}) on {relative_to_root(src)}:\n"
            f"{scrub_text((result.stdout + result.stderr)[-3000:])}\nfix the page it names, or delete "
            f"{relative_to_root(src.parent)} to start from a clean build")
    return seconds, warnings


def render_html(config_name: str | None = None, *, out_dir: Path | None = None, work_dir: Path | None = None,
                force: bool = False, log: Callable[[str], None] = lambda line: None) -> Path:
    """Build the supplementary in ``work_dir`` into ``reports/html/`` (or ``out_dir``, replaced only by a
    clean build); return its ``index.html``. SupplementaryError: nothing to publish, Sphinx failed, or a
    leak."""
    out_dir = Path(out_dir) if out_dir is not None else reports_dir() / "html"
    work = Path(work_dir) if work_dir is not None else reports_dir() / ".supplementary"
    files = stage_sources(config_name)
    print_hash = fingerprint(files)
    record = out_dir / BUILD_RECORD
    index = out_dir / "index.html"
    if not force and index.is_file() and record.is_file():
        try:
            if json.loads(record.read_text(encoding="utf-8")).get("fingerprint") == print_hash:
                log(f"[html] skip: sources unchanged ({relative_to_root(index)})")
                return index
        except ValueError:
            pass
    src, build = work / "src", work / "build"
    _sync(files, src)
    seconds, warnings = build_site(src, build / "html", build / "doctrees")
    staging = out_dir.with_name(out_dir.name + ".new")
    shutil.rmtree(staging, ignore_errors=True)
    shutil.copytree(build / "html", staging)
    shutil.rmtree(staging / ".doctrees", ignore_errors=True)
    problems = leaks_in_tree(staging)
    if problems:
        shutil.rmtree(staging, ignore_errors=True)
        raise SupplementaryError("the supplementary would publish secrets or machine paths, so reports/html "
                                 "was left as it was:\n  " + "\n  ".join(problems[:20]) +
                                 "\nfix: scrub the executed notebooks (llmdisc.pipeline.scrub_notebook) or "
                                 "remove the value from the tables")
    size = sum(p.stat().st_size for p in staging.rglob("*") if p.is_file())
    n_warnings = len([ln for ln in warnings.read_text(encoding="utf-8").splitlines() if "WARNING" in ln]) \
        if warnings.exists() else 0
    (staging / BUILD_RECORD).write_text(json.dumps(
        {"fingerprint": print_hash, "seconds": round(seconds, 1), "bytes": size, "sphinx_warnings": n_warnings,
         "versions": package_versions(TOOL_PACKAGES)}, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    old = out_dir.with_name(out_dir.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if out_dir.exists():
        out_dir.rename(old)
    staging.rename(out_dir)
    shutil.rmtree(old, ignore_errors=True)
    log(f"[html] built in {seconds:.1f} s, {size / 1e6:.1f} MB, {n_warnings} Sphinx warning(s) "
        f"({relative_to_root(warnings)})")
    return index
