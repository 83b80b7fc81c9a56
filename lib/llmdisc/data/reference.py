"""The paper's reference files: pinned, downloaded on request, verified, and read.

The paper's public repository (:data:`REPOSITORY` at the pinned :data:`COMMIT`) holds the objects this
compendium reproduces: its per-trial LLM records (``results/**/llm_results_*.jsonl``), its human labels
(``results/human/**``), its Census extract (``data/census/real/census.csv``) and its three Census releases
(``data/census/synthetic/{gaussian_copula,ctgan,tvae}/synthetic.csv``), plus two small result tables. Every
file is pinned (path, size in bytes, sha256) in ``reference_files.csv`` beside this module.

* :func:`fetch_reference` downloads them as raw files
  (``<base_url>/<owner>/<repo>/<commit>/<path>``) into the reference folder, each through a ``.part`` file
  (resumed with an HTTP Range request after an interruption), checked against its size and sha256, then moved
  into place with :func:`os.replace`. A file already present with the right hash is not fetched again. This is
  the only code that downloads the reference; nothing fetches it implicitly (CLI: ``llmdisc data
  fetch-reference``, ``make reference``).
* :func:`check_reference` lists the files of a folder that differ from the pins (``--check``).
* :func:`load_paper_release` reads one of the paper's Census releases, with a header check that names the fix.

The folder is found by :func:`llmdisc.paths.reference_dir` (``LLMDISC_REFERENCE``, ``data/reference``,
``../shared/reference``).
"""

from __future__ import annotations

import csv
import fnmatch
import hashlib
import importlib.resources
import os
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable
from urllib.parse import quote

import pandas as pd

from llmdisc.data.acs import CENSUS_COLUMNS, read_census_csv
from llmdisc.errors import (
    REFERENCE_FIX,
    ChecksumError,
    ConfigError,
    DataError,
    LlmdiscWarning,
    ReferenceMissingError,
)
from llmdisc.paths import reference_target_dir, relative_to_root, require_reference

REPOSITORY = "SlokomManel/LLM-as-a-Discriminator"
COMMIT = "360374160f78501b91cde7953ac7e6824b6fad88"
DEFAULT_BASE_URL = "https://raw.githubusercontent.com"
BASE_URL_ENV = "LLMDISC_REFERENCE_URL"
PINS_FILE = "reference_files.csv"
PAPER_SYNTHESIZERS = ("gaussian_copula", "ctgan", "tvae")
CENSUS_REAL_PATH = "data/census/real/census.csv"
RELEASE_PATH = "data/census/synthetic/{synthesizer}/synthetic.csv"
# (connect, read) seconds: a machine without the network fails in seconds, a slow link still finishes.
TIMEOUT_S = (10.0, 60.0)
FETCH_FIX = "fix: re-run `llmdisc data fetch-reference` (it resumes and fetches only what is missing or wrong)"


class ReferenceFetchError(DataError):
    """One or more reference files could not be downloaded or did not match their pins."""


@dataclass(frozen=True)
class ReferenceFile:
    """One pinned file of the paper's repository.

    Attributes:
        path: POSIX path inside the repository (= inside the reference folder).
        size: length in bytes.
        sha256: hex digest of the bytes.
    """

    path: str
    size: int
    sha256: str


@dataclass(frozen=True)
class Difference:
    """A file of a reference folder that differs from its pin.

    Attributes:
        path: the pinned path.
        problem: ``missing``, ``size`` (a different length) or ``sha256`` (same length, other bytes).
        detail: the sizes or digests found and expected.
    """

    path: str
    problem: str
    detail: str


@dataclass
class FetchReport:
    """What :func:`fetch_reference` did.

    Attributes:
        dest: the reference folder written.
        fetched: paths downloaded in this run.
        present: paths already there with the right hash (not fetched again).
        requests: HTTP requests made (retries and resumed ranges included).
        bytes_received: body bytes received.
    """

    dest: Path
    fetched: list[str] = field(default_factory=list)
    present: list[str] = field(default_factory=list)
    requests: int = 0
    bytes_received: int = 0


def pinned_files(only: Iterable[str] | None = None) -> list[ReferenceFile]:
    """The pinned files (``reference_files.csv``), optionally those matching ``only``.

    Args:
        only: shell-style patterns matched against the whole path (``*`` also crosses ``/``), e.g.
            ``data/census/*`` or ``results/**/llm_results_*.jsonl``; None or empty means every file.

    Returns:
        The pins in path order.

    Raises:
        ConfigError: a pattern matches no pinned file (the message lists the top folders).
    """
    text = importlib.resources.files("llmdisc.data").joinpath(PINS_FILE).read_text(encoding="utf-8")
    files = [ReferenceFile(row["path"], int(row["size"]), row["sha256"]) for row in csv.DictReader(text.splitlines())]
    patterns = [p for p in (only or []) if p]
    if not patterns:
        return files
    unmatched = [p for p in patterns if not any(fnmatch.fnmatchcase(f.path, p) for f in files)]
    if unmatched:
        tops = sorted({f.path.rsplit("/", 1)[0] for f in files})
        raise ConfigError(f"--only pattern(s) {unmatched} match no pinned reference file; fix: use patterns over "
                          f"the repository paths, e.g. 'data/census/*' or 'results/**/llm_results_*.jsonl' "
                          f"(folders: {', '.join(tops[:8])}, ...)")
    return [f for f in files if any(fnmatch.fnmatchcase(f.path, p) for p in patterns)]


def pin_of(path: str) -> ReferenceFile:
    """The pin of one repository path. Raises ConfigError for a path that is not pinned."""
    for pin in pinned_files():
        if pin.path == path:
            return pin
    raise ConfigError(f"{path} is not a pinned reference file; fix: use a path listed in {PINS_FILE}")


def file_url(base_url: str, path: str) -> str:
    """The raw-file URL of ``path``: ``<base_url>/<owner>/<repo>/<commit>/<path>`` (path percent-encoded)."""
    return f"{base_url.rstrip('/')}/{REPOSITORY}/{COMMIT}/{quote(path, safe='/')}"


def sha256_of(path: Path) -> str:
    """Hex sha256 of a file's bytes, read in blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _difference(folder: Path, pin: ReferenceFile) -> Difference | None:
    target = folder / pin.path
    if not target.is_file():
        return Difference(pin.path, "missing", f"expected {pin.size} bytes")
    size = target.stat().st_size
    if size != pin.size:
        return Difference(pin.path, "size", f"{size} bytes, expected {pin.size}")
    digest = sha256_of(target)
    if digest != pin.sha256:
        return Difference(pin.path, "sha256", f"sha256 {digest}, expected {pin.sha256}")
    return None


def check_reference(folder: Path | str | None = None, *, only: Iterable[str] | None = None) -> list[Difference]:
    """List the pinned files of ``folder`` that are missing or differ from their pins (empty: all match).

    Args:
        folder: the reference folder; None means the one consumers read (:func:`llmdisc.paths.reference_dir`).
        only: patterns as in :func:`pinned_files`.

    Raises:
        ReferenceMissingError: ``folder`` is None and there is no reference folder.
    """
    folder = Path(folder) if folder is not None else require_reference(what="checking the reference")
    return [d for pin in pinned_files(only) if (d := _difference(folder, pin)) is not None]


class _Truncated(Exception):
    """The response ended before the pinned size (short body)."""


class ReferenceNetworkError(ReferenceFetchError):
    """The host cannot be reached at all (the network is off, a wrong --base-url): every file would fail."""


def _download_one(client, url: str, pin: ReferenceFile, final: Path, report: FetchReport, *, retries: int,
                  backoff_s: float) -> None:
    """Download one file through ``<final>.part`` (Range-resumed on retries), verify it, move it into place."""
    import httpx

    part = final.with_name(final.name + ".part")
    final.parent.mkdir(parents=True, exist_ok=True)
    last_problem = ""
    for attempt in range(retries + 1):
        if attempt:
            time.sleep(backoff_s * 2 ** (attempt - 1))
        have = part.stat().st_size if part.is_file() else 0
        if have >= pin.size:  # a whole (or over-long) leftover that failed its check before: start again
            part.unlink()
            have = 0
        headers = {"Accept-Encoding": "identity"}  # byte ranges of the file itself, not of a gzip stream
        if have:
            headers["Range"] = f"bytes={have}-"
        try:
            report.requests += 1
            with client.stream("GET", url, headers=headers) as response:
                status = response.status_code
                if status == 404:
                    raise ReferenceFetchError(
                        f"{pin.path}: HTTP 404 at {url}: the file is not at the pinned commit {COMMIT[:12]} of "
                        f"{REPOSITORY} under this base URL; fix: check --base-url (default {DEFAULT_BASE_URL}) "
                        f"and re-run `llmdisc data fetch-reference`")
                if status == 416:  # the range was refused: the next attempt takes the whole file
                    part.unlink(missing_ok=True)
                    last_problem = "HTTP 416 (range not satisfiable)"
                    continue
                if status in (408, 429) or status >= 500:
                    last_problem = f"HTTP {status}"
                    continue
                if status not in (200, 206):
                    raise ReferenceFetchError(f"{pin.path}: HTTP {status} at {url}; fix: check --base-url "
                                              f"and re-run `llmdisc data fetch-reference`")
                append = status == 206 and have > 0  # a 200 answer to a Range request is the whole file
                written = have if append else 0
                with open(part, "ab" if append else "wb") as fh:
                    for block in response.iter_raw():
                        fh.write(block)
                        written += len(block)
                        report.bytes_received += len(block)
                        if written > pin.size:  # over-long: stop reading, the check below rejects it
                            break
            if written < pin.size:
                raise _Truncated(f"the body ended after {written:,} of {pin.size:,} bytes")
        except (httpx.TransportError, _Truncated) as exc:
            # An interrupted body keeps its .part: the next attempt asks only for the rest (Range).
            last_problem = f"{type(exc).__name__}: {exc}"
            if isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout)) and attempt == retries:
                raise ReferenceNetworkError(
                    f"{pin.path}: cannot connect to {url} ({last_problem}); fix: check the network (or "
                    f"--base-url) and re-run `llmdisc data fetch-reference`; files already fetched are kept"
                ) from exc
            continue
        digest = sha256_of(part)
        size = part.stat().st_size
        if size != pin.size or digest != pin.sha256:
            part.unlink()  # wrong bytes are never resumed from
            raise ChecksumError(
                f"{pin.path}: downloaded {size:,} bytes with sha256 {digest}, expected {pin.size:,} bytes with "
                f"sha256 {pin.sha256} (pinned for {REPOSITORY}@{COMMIT[:12]}); nothing was written for it; "
                f"{FETCH_FIX}; if it happens again, {url} does not serve the paper's file (check --base-url)")
        os.replace(part, final)
        return
    raise ReferenceFetchError(f"{pin.path}: the download from {url} failed after {retries + 1} attempt(s) "
                              f"({last_problem}); the partial file {part.name} is kept for a resume; {FETCH_FIX}")


def fetch_reference(
    dest: Path | str | None = None,
    *,
    base_url: str | None = None,
    only: Iterable[str] | None = None,
    retries: int = 3,
    backoff_s: float = 1.0,
    timeout_s: tuple[float, float] = TIMEOUT_S,
    progress: Callable[[str], None] | None = None,
) -> FetchReport:
    """Download the pinned files of the paper's repository into the reference folder; resumable.

    Args:
        dest: the reference folder to fill (default :func:`llmdisc.paths.reference_target_dir`:
            ``LLMDISC_REFERENCE`` if set, else ``<root>/data/reference``).
        base_url: raw-file host (default ``LLMDISC_REFERENCE_URL`` or :data:`DEFAULT_BASE_URL`); files are
            requested at ``<base_url>/<owner>/<repo>/<commit>/<path>``.
        only: patterns selecting some files (:func:`pinned_files`); None fetches all 59 (5.65 MB).
        retries: further attempts per file after a network failure, a truncated body or HTTP 5xx/429; each
            resumes the partial file with an HTTP Range request.
        backoff_s: wait before the first retry in seconds, doubled each time.
        timeout_s: (connect, read) timeouts in seconds.
        progress: called with one line per file (e.g. ``print``); None is silent.

    Returns:
        A :class:`FetchReport` (files fetched, files already present, requests made).

    Raises:
        ReferenceFetchError: a 404, another HTTP error, or a network failure after the retries (named file,
            URL and fix). Other files are still fetched after a 404 or a hash mismatch; the error lists all.
        ChecksumError: a downloaded file's size or sha256 differs from its pin (nothing is written for it).
    """
    import httpx

    dest = Path(dest) if dest is not None else reference_target_dir()
    base_url = base_url or os.environ.get(BASE_URL_ENV) or DEFAULT_BASE_URL
    report = FetchReport(dest=dest)
    say = progress or (lambda line: None)
    failures: list[DataError] = []
    dest.mkdir(parents=True, exist_ok=True)
    timeout = httpx.Timeout(timeout_s[1], connect=timeout_s[0])
    with httpx.Client(timeout=timeout, follow_redirects=True) as client:
        for pin in pinned_files(only):
            final = dest / pin.path
            if _difference(dest, pin) is None:
                report.present.append(pin.path)
                continue
            try:
                _download_one(client, file_url(base_url, pin.path), pin, final, report, retries=retries,
                              backoff_s=backoff_s)
            except ReferenceNetworkError:
                raise  # the host cannot be reached: every other file would fail the same way
            except DataError as exc:
                failures.append(exc)
                say(f"FAILED {pin.path}")
                continue
            report.fetched.append(pin.path)
            say(f"fetched {pin.path} ({pin.size:,} bytes, sha256 ok)")
    if failures:
        kind = ChecksumError if all(isinstance(f, ChecksumError) for f in failures) else ReferenceFetchError
        raise kind(f"{len(failures)} of {len(pinned_files(only))} reference file(s) failed "
                   f"({len(report.fetched)} fetched, {len(report.present)} already present): "
                   + " | ".join(str(f) for f in failures))
    return report


def paper_release_path(synthesizer: str) -> Path:
    """The paper's Census release of ``synthesizer`` in the reference folder.

    Raises:
        ConfigError: an unknown synthesizer.
        ReferenceMissingError: no reference folder, or the file is not in it.
    """
    if synthesizer not in PAPER_SYNTHESIZERS:
        raise ConfigError(f"unknown paper release {synthesizer!r}; fix: use one of {list(PAPER_SYNTHESIZERS)}")
    return require_reference(*RELEASE_PATH.format(synthesizer=synthesizer).split("/"),
                             what=f"the paper's {synthesizer} Census release")


def paper_census_path() -> Path:
    """The paper's Census extract (``data/census/real/census.csv``) in the reference folder.

    Raises:
        ReferenceMissingError: no reference folder, or the file is not in it.
    """
    return require_reference(*CENSUS_REAL_PATH.split("/"), what="the paper's Census extract")


def _check_paper_file(path: Path, repo_path: str, *, what: str) -> None:
    """Header check (exact names, exact order) and, for a pinned file, a warning when its bytes differ."""
    with open(path, encoding="utf-8", newline="") as fh:
        header = next(csv.reader(fh), [])
    expected = list(CENSUS_COLUMNS)
    if header != expected:
        missing = [c for c in expected if c not in header]
        extra = [c for c in header if c not in expected]
        order = "" if missing or extra else " (same names, other order)"
        raise DataError(
            f"{what} {relative_to_root(path)} has header {header}{order}: missing {missing}, extra {extra}; "
            f"expected exactly {expected} as in the paper's repository; the file was edited or is not the "
            f"paper's; fix: restore it with `llmdisc data fetch-reference` (`--check` lists every file that "
            f"differs from the pins)")
    try:
        pin = pin_of(repo_path)
    except ConfigError:
        return
    if path.stat().st_size != pin.size or sha256_of(path) != pin.sha256:
        warnings.warn(f"{what} {relative_to_root(path)} differs from the paper's file (pinned sha256 "
                      f"{pin.sha256[:12]}...): results on it are not the paper's; fix: restore it with "
                      f"`llmdisc data fetch-reference`", LlmdiscWarning, stacklevel=3)


def load_paper_release(synthesizer: str) -> pd.DataFrame:
    """Read the paper's Census release of ``synthesizer`` (32,561 rows of the 11 integer Census columns).

    The paper fitted its synthesizers on all 32,561 real rows (no holdout): any real row may have been in
    training, so distance-based privacy tests against a holdout are not valid on these releases.

    Args:
        synthesizer: ``gaussian_copula``, ``ctgan`` or ``tvae``.

    Returns:
        The release, columns in :data:`~llmdisc.data.acs.CENSUS_COLUMNS` order, ``int64``.

    Raises:
        ReferenceMissingError: the release is not on this machine (fix: ``llmdisc data fetch-reference``).
        DataError: its header differs from the paper's (a renamed, missing, extra or reordered column) or a
            value is not an integer; the message names the fix. A file whose bytes differ from the pin but
            whose header is right loads with a :class:`~llmdisc.errors.LlmdiscWarning`.
    """
    path = paper_release_path(synthesizer)
    _check_paper_file(path, RELEASE_PATH.format(synthesizer=synthesizer), what=f"the paper's {synthesizer} release")
    return read_census_csv(path)


def load_paper_census() -> pd.DataFrame:
    """Read the paper's Census extract (32,561 rows x 11 integer columns), header-checked like a release.

    Raises:
        ReferenceMissingError: it is not on this machine (fix: ``llmdisc data fetch-reference``).
        DataError: its header differs from the paper's.
    """
    path = paper_census_path()
    _check_paper_file(path, CENSUS_REAL_PATH, what="the paper's Census extract")
    return read_census_csv(path)


__all__ = [
    "COMMIT", "DEFAULT_BASE_URL", "REPOSITORY", "PAPER_SYNTHESIZERS", "REFERENCE_FIX", "Difference", "FetchReport",
    "ReferenceFetchError", "ReferenceFile", "ReferenceMissingError", "ReferenceNetworkError", "check_reference",
    "fetch_reference", "file_url", "load_paper_census", "load_paper_release", "paper_census_path",
    "paper_release_path", "pin_of", "pinned_files",
]
