"""Where things live: the project root, its data folders, and the optional ``../shared`` reference.

All paths are derived from the project root so that notebooks (run by papermill from
``notebooks/``), the CLI and the tests agree, and no absolute machine path is ever written into a
product. Override the root with ``LLMDISC_ROOT`` and the reference folder with ``LLMDISC_SHARED``.
"""

from __future__ import annotations

import os
from pathlib import Path


def project_root() -> Path:
    """Return the project root (the folder holding ``pyproject.toml``, ``lib/`` and ``data/``)."""
    env = os.environ.get("LLMDISC_ROOT")
    if env:
        return Path(env).resolve()
    # lib/llmdisc/paths.py -> parents[2] is the checkout (editable install).
    return Path(__file__).resolve().parents[2]


def data_dir() -> Path:
    """``<root>/data``: raw, processed, synthetic and human-label folders."""
    return project_root() / "data"


def results_dir() -> Path:
    """``<root>/results``: trials, baselines and tables."""
    return project_root() / "results"


def figures_dir() -> Path:
    """``<root>/figures``: PDF and PNG figures."""
    return project_root() / "figures"


def reports_dir() -> Path:
    """``<root>/reports``: executed notebooks and their HTML rendering."""
    return project_root() / "reports"


def shared_dir() -> Path | None:
    """Return the ``shared`` folder beside the checkout (``LLMDISC_SHARED`` overrides), or None if absent.

    It holds the paper's reference data (human labels, per-trial LLM answers, the ACS file); a
    user's machine usually has no such folder, and callers must then say what is skipped.
    """
    env = os.environ.get("LLMDISC_SHARED")
    candidate = Path(env) if env else project_root().parent / "shared"
    return candidate.resolve() if candidate.is_dir() else None


def reference_dir() -> Path | None:
    """``<shared>/reference`` if present, else None."""
    shared = shared_dir()
    if shared is None or not (shared / "reference").is_dir():
        return None
    return shared / "reference"


def relative_to_root(path: Path | str) -> str:
    """Return ``path`` relative to the project root (POSIX form) when inside it, else its name only.

    Used for everything written into manifests, logs and notebooks so that no absolute path of the
    machine leaks into a product.
    """
    p = Path(path).resolve()
    root = project_root()
    try:
        return p.relative_to(root).as_posix()
    except ValueError:
        shared = shared_dir()
        if shared is not None:
            try:
                return "../shared/" + p.relative_to(shared).as_posix()
            except ValueError:
                pass
        return p.name
