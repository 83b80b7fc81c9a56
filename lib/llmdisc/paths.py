"""Where things live: the project root, its data folders, and the paper's reference folder.

All paths derive from the project root (``LLMDISC_ROOT`` overrides), so notebooks, the CLI and the tests agree and
no absolute machine path is written into a product (:func:`relative_to_root`). The paper's reference data is found
by :func:`reference_dir` alone.
"""

from __future__ import annotations

import os
from pathlib import Path

from llmdisc.errors import REFERENCE_FIX, ReferenceMissingError

REFERENCE_ENV = "LLMDISC_REFERENCE"
"""Environment variable naming the reference folder; when set, it is the only place looked at."""


def in_checkout() -> bool:
    """True when the package runs from a clone (``lib/llmdisc`` beside ``pyproject.toml``), not a wheel."""
    checkout = Path(__file__).resolve().parents[2]
    return (checkout / "pyproject.toml").is_file() and (checkout / "lib" / "llmdisc").is_dir()


def project_root() -> Path:
    """Return the project root (the folder holding ``pyproject.toml``, ``lib/`` and ``data/``): ``LLMDISC_ROOT``,
    else the clone the package runs from, else (a package installed from a wheel) the current folder."""
    env = os.environ.get("LLMDISC_ROOT")
    if env:
        return Path(env).resolve()
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
    """The ``shared`` folder beside the checkout (``LLMDISC_SHARED`` overrides), or None if absent."""
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

    Order: ``LLMDISC_REFERENCE`` when set (then nothing else is looked at: an empty folder means "none"); else
    ``<root>/data/reference``; else ``<shared>/reference``. A folder counts only when it exists and is not empty;
    the files inside mirror the paper's repository paths.
    """
    env = os.environ.get(REFERENCE_ENV)
    shared = shared_dir()
    candidates = ([Path(env).expanduser().resolve()] if env
                  else [fetched_reference_dir().resolve()] + ([shared / "reference"] if shared else []))
    return next((folder for folder in candidates if _holds_files(folder)), None)


def require_reference(*parts: str, what: str = "the paper's reference data") -> Path:
    """Return ``reference_dir() / parts`` (POSIX parts; none: the folder itself); ``what`` names the need in the
    message.

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
    """Return ``path`` relative to the project root (POSIX form) when inside it (or ``../shared/``,
    ``$LLMDISC_REFERENCE/``), else its name only: what manifests, logs and notebooks record."""
    p = Path(path).resolve()
    env = os.environ.get(REFERENCE_ENV)
    bases = (("", project_root()), ("../shared/", shared_dir()),
             ("$LLMDISC_REFERENCE/", Path(env).expanduser().resolve() if env else None))
    return next((prefix + p.relative_to(base).as_posix() for prefix, base in bases
                 if base is not None and p.is_relative_to(base)), p.name)
