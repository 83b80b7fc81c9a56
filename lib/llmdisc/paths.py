"""Where things live: the project root, its data folders, and the paper's reference folder.

All paths are derived from the project root so that notebooks (run by papermill from
``notebooks/``), the CLI and the tests agree, and no absolute machine path is ever written into a
product. Override the root with ``LLMDISC_ROOT``. The paper's reference data (its per-trial records, human
labels, Census extract and Census releases) is found by :func:`reference_dir` alone, in this order:
``LLMDISC_REFERENCE``, the project's fetched folder ``data/reference`` (``llmdisc data fetch-reference``),
``../shared/reference`` (``LLMDISC_SHARED`` names ``../shared``).
"""

from __future__ import annotations

import os
from pathlib import Path

from llmdisc.errors import REFERENCE_FIX, ReferenceMissingError

REFERENCE_ENV = "LLMDISC_REFERENCE"
"""Environment variable naming the reference folder; when set, it is the only place looked at."""


def in_checkout() -> bool:
    """True when the package runs from a clone (``lib/llmdisc`` beside ``pyproject.toml``), False when it was
    installed from a wheel into site-packages."""
    checkout = Path(__file__).resolve().parents[2]
    return (checkout / "pyproject.toml").is_file() and (checkout / "lib" / "llmdisc").is_dir()


def project_root() -> Path:
    """Return the project root (the folder holding ``pyproject.toml``, ``lib/`` and ``data/``): ``LLMDISC_ROOT``,
    else the clone the package runs from, else (a package installed from a wheel) the current folder."""
    env = os.environ.get("LLMDISC_ROOT")
    if env:
        return Path(env).resolve()
    # lib/llmdisc/paths.py -> parents[2] is the checkout (editable install); in site-packages it is lib/, which
    # holds no project, so an installed package works in the folder it is run from
    return Path(__file__).resolve().parents[2] if in_checkout() else Path.cwd()


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


def fetched_reference_dir() -> Path:
    """``<root>/data/reference``: where ``llmdisc data fetch-reference`` writes (git-ignored); may not exist."""
    return data_dir() / "reference"


def reference_target_dir() -> Path:
    """The folder ``llmdisc data fetch-reference`` fills by default: ``LLMDISC_REFERENCE`` if set, else
    :func:`fetched_reference_dir` (never ``../shared``, which is read only)."""
    env = os.environ.get(REFERENCE_ENV)
    return Path(env).expanduser().resolve() if env else fetched_reference_dir()


def _holds_files(folder: Path) -> bool:
    return folder.is_dir() and any(folder.iterdir())


def reference_dir() -> Path | None:
    """The paper's reference folder, or None where there is none: the one lookup every consumer uses.

    Order: ``LLMDISC_REFERENCE`` when set (then nothing else is looked at, so a test or a user can point
    it anywhere, including at an empty folder to mean "none"); else the project's fetched folder
    ``<root>/data/reference``; else ``<shared>/reference`` (``LLMDISC_SHARED`` or ``../shared``). A folder
    counts only when it exists and is not empty. The files inside mirror the paper's repository paths
    (``results/**/llm_results_*.jsonl``, ``results/human/**``, ``data/census/...``).
    """
    env = os.environ.get(REFERENCE_ENV)
    if env:
        folder = Path(env).expanduser().resolve()
        return folder if _holds_files(folder) else None
    fetched = fetched_reference_dir()
    if _holds_files(fetched):
        return fetched.resolve()
    shared = shared_dir()
    if shared is not None and _holds_files(shared / "reference"):
        return shared / "reference"
    return None


def require_reference(*parts: str, what: str = "the paper's reference data") -> Path:
    """Return ``reference_dir() / parts``, raising a :class:`ReferenceMissingError` that names the fix.

    Args:
        parts: a path inside the reference folder (POSIX parts, e.g. ``"results", "human"``); none for the
            folder itself.
        what: what the caller needs, for the message (e.g. "the paper's per-trial records").

    Raises:
        ReferenceMissingError: no reference folder, or it lacks ``parts`` (a partial fetch).
    """
    ref = reference_dir()
    if ref is None:
        env = os.environ.get(REFERENCE_ENV)
        looked = (f"{REFERENCE_ENV}={env} (empty or absent)" if env else
                  "data/reference (fetched), ../shared/reference")
        raise ReferenceMissingError(f"{what}: the paper's reference data is not here (looked at {looked}); "
                                    f"{REFERENCE_FIX}")
    path = ref.joinpath(*parts)
    if parts and not path.exists():
        raise ReferenceMissingError(f"{what}: {'/'.join(parts)} is missing from the reference folder "
                                    f"{relative_to_root(ref)}; {REFERENCE_FIX} (it fetches only what is missing)")
    return path


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
        env = os.environ.get(REFERENCE_ENV)
        if env:
            try:
                return "$LLMDISC_REFERENCE/" + p.relative_to(Path(env).expanduser().resolve()).as_posix()
            except ValueError:
                pass
        return p.name
