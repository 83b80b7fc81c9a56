"""The paper's reference files: pinned, downloaded on request, verified, and read.

The paper's repository (:data:`REPOSITORY` at :data:`COMMIT`) holds its LLM records, human labels, Census
extract and three Census releases; every file is pinned (path, bytes, sha256) in ``reference_files.csv``.
:func:`fetch_reference` is the only code that downloads them (``llmdisc data fetch-reference``).
"""

from __future__ import annotations

import csv
import fnmatch
import importlib.resources
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable
from urllib.parse import quote

import pandas as pd

from llmdisc.data.acs import CENSUS_COLUMNS, read_census_csv
from llmdisc.errors import (REFERENCE_FIX, ChecksumError, ConfigError, DataError, LlmdiscWarning,
                            ReferenceMissingError)
from llmdisc.manifest import sha256_file
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
FETCH_FIX = "fix: re-run `llmdisc data fetch-reference` (it fetches only what is missing or wrong)"


class ReferenceFetchError(DataError):
    """One or more reference files could not be downloaded or did not match their pins."""


@dataclass(frozen=True)
class ReferenceFile:
    """One pinned file: POSIX ``path`` (also in the reference folder), ``size`` in bytes, ``sha256`` hex."""

    path: str
    size: int
    sha256: str


@dataclass(frozen=True)
class Difference:
    """A file of a reference folder that differs from its pin: ``problem`` is ``missing``, ``size`` or
    ``sha256`` (same length, other bytes); ``detail`` the sizes or digests found and expected."""

    path: str
    problem: str
    detail: str


@dataclass
class FetchReport:
    """What :func:`fetch_reference` did: paths ``fetched`` in this run or ``present`` with the right hash;
    HTTP ``requests`` made (retries included) and body ``bytes_received``."""

    dest: Path
    fetched: list[str] = field(default_factory=list)
    present: list[str] = field(default_factory=list)
    requests: int = 0
    bytes_received: int = 0


def pinned_files(only: Iterable[str] | None = None) -> list[ReferenceFile]:
    """The pinned files, in path order; ``only``: shell-style patterns over the whole path (``*`` also crosses
    ``/``), e.g. ``data/census/*``; None means every file. Raises ConfigError if a pattern matches none."""
    text = importlib.resources.files("llmdisc.data").joinpath(PINS_FILE).read_text(encoding="utf-8")
    files = [ReferenceFile(row["path"], int(row["size"]), row["sha256"]) for row in csv.DictReader(text.splitlines())]
    patterns = [p for p in (only or []) if p]
    if not patterns:
        return files
    unmatched = [p for p in patterns if not any(fnmatch.fnmatchcase(f.path, p) for f in files)]
    if unmatched:
        tops = sorted({f.path.rsplit("/", 1)[0] for f in files})
        raise ConfigError(f"--only pattern(s) {unmatched} match no pinned reference file; fix: use patterns "
                          f"over the repository paths, e.g. 'data/census/*' or "
                          f"'results/**/llm_results_*.jsonl' (folders: {', '.join(tops[:8])}, ...)")
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


def _difference(folder: Path, pin: ReferenceFile) -> Difference | None:
    target = folder / pin.path
    if not target.is_file():
        return Difference(pin.path, "missing", f"expected {pin.size} bytes")
    size = target.stat().st_size
    if size != pin.size:
        return Difference(pin.path, "size", f"{size} bytes, expected {pin.size}")
    digest = sha256_file(target)
    if digest != pin.sha256:
        return Difference(pin.path, "sha256", f"sha256 {digest}, expected {pin.sha256}")
    return None


def check_reference(folder: Path | str | None = None, *,
                    only: Iterable[str] | None = None) -> list[Difference]:
    """The pinned files of ``folder`` (None: :func:`llmdisc.paths.reference_dir`) missing or differing from
    their pins (empty: all match); ``only`` as in :func:`pinned_files`. Raises ReferenceMissingError when
    ``folder`` is None and there is no reference folder."""
    folder = Path(folder) if folder is not None else require_reference(what="checking the reference")
    return [d for pin in pinned_files(only) if (d := _difference(folder, pin)) is not None]


class ReferenceNetworkError(ReferenceFetchError):
    """The host cannot be reached at all (network off, a wrong --base-url): every file would fail."""


class _Truncated(ValueError):
    """The body ended before the pinned size (a ValueError: pooch retries it as it retries a wrong hash)."""


class _Download:
    """pooch's HTTP downloader for one pinned file; counts requests and bytes, keeps the last body's hash.
    A 4xx other than 408/429 becomes a :class:`ReferenceFetchError`, which pooch does not retry."""

    def __init__(self, pin: ReferenceFile, report: FetchReport) -> None:
        import pooch

        self.pin, self.report, self.got = pin, report, (0, "")
        self.http = pooch.HTTPDownloader(timeout=TIMEOUT_S, chunk_size=1 << 16)

    def __call__(self, url: str, output_file: str, pup: object) -> None:
        import requests

        self.report.requests += 1
        try:
            self.http(url, output_file, pup)
        except requests.HTTPError as exc:
            status = exc.response.status_code
            if status == 404:
                raise ReferenceFetchError(
                    f"{self.pin.path}: HTTP 404 at {url}: the file is not at the pinned commit {COMMIT[:12]} "
                    f"of {REPOSITORY} under this base URL; fix: check --base-url (default "
                    f"{DEFAULT_BASE_URL}) and re-run `llmdisc data fetch-reference`") from exc
            if status < 500 and status not in (408, 429):
                raise ReferenceFetchError(f"{self.pin.path}: HTTP {status} at {url}; fix: check --base-url "
                                          f"and re-run `llmdisc data fetch-reference`") from exc
            raise
        finally:
            self.report.bytes_received += (size := os.path.getsize(output_file))
        if size < self.pin.size:
            raise _Truncated(f"the body ended after {size:,} of {self.pin.size:,} bytes")
        self.got = (size, sha256_file(output_file))


def _failure(pin: ReferenceFile, url: str, exc: Exception, got: tuple[int, str], attempts: int) -> DataError:
    import requests
    from urllib3.exceptions import NewConnectionError

    if isinstance(exc, ReferenceFetchError):
        return exc
    if isinstance(exc, ValueError) and not isinstance(exc, (_Truncated, requests.RequestException)):  # hash
        return ChecksumError(
            f"{pin.path}: downloaded {got[0]:,} bytes with sha256 {got[1]}, expected {pin.size:,} bytes with "
            f"sha256 {pin.sha256} (pinned for {REPOSITORY}@{COMMIT[:12]}); nothing was written for it; "
            f"{FETCH_FIX}; if it happens again, {url} does not serve the paper's file (check --base-url)")
    reason = getattr(exc.args[0] if exc.args else None, "reason", None)
    if isinstance(exc, requests.ConnectTimeout) or isinstance(reason, NewConnectionError):
        return ReferenceNetworkError(
            f"{pin.path}: cannot connect to {url} ({type(exc).__name__}: {exc}); fix: check the network (or "
            f"--base-url) and re-run `llmdisc data fetch-reference`; files already fetched are kept")
    problem = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, requests.HTTPError):
        problem = f"HTTP {exc.response.status_code}"
    return ReferenceFetchError(f"{pin.path}: the download from {url} failed after {attempts} attempt(s) "
                               f"({problem}); nothing was written for it; {FETCH_FIX}")


def fetch_reference(dest: Path | str | None = None, *, base_url: str | None = None,
                    only: Iterable[str] | None = None, retries: int = 3,
                    progress: Callable[[str], None] | None = None) -> FetchReport:
    """Download the pinned files missing or wrong in the reference folder with pooch, each checked against its
    sha256 before it is moved into place.

    Args:
        dest: the folder to fill (default :func:`llmdisc.paths.reference_target_dir`).
        base_url: raw-file host (default ``LLMDISC_REFERENCE_URL`` or :data:`DEFAULT_BASE_URL`); files are
            requested at ``<base_url>/<owner>/<repo>/<commit>/<path>``.
        only: patterns selecting some files (:func:`pinned_files`); None fetches all 59 (5.65 MB).
        retries: further attempts per file after a network error, HTTP 408/429/5xx, a truncated body or a
            wrong hash (pooch's ``retry_if_failed``).
        progress: called with one line per file (e.g. ``print``).

    Raises:
        ReferenceFetchError: an HTTP error or a failure after the retries (the other files are still fetched).
        ReferenceNetworkError: the host cannot be reached (at once: every file would fail).
        ChecksumError: every failed file was downloaded with a sha256 other than its pin (nothing written).
    """
    import pooch
    import requests

    dest = Path(dest) if dest is not None else reference_target_dir()
    base_url = base_url or os.environ.get(BASE_URL_ENV) or DEFAULT_BASE_URL
    pins = pinned_files(only)
    fetcher = pooch.create(path=dest, base_url=base_url, retry_if_failed=retries,
                           registry={pin.path: f"sha256:{pin.sha256}" for pin in pins},
                           urls={pin.path: file_url(base_url, pin.path) for pin in pins})
    report, say, failures = FetchReport(dest=dest), progress or (lambda line: None), []
    logger, level = pooch.get_logger(), pooch.get_logger().level
    logger.setLevel("WARNING")  # our progress lines replace pooch's "Downloading ..." log
    try:
        for pin in pins:
            if _difference(dest, pin) is None:
                report.present.append(pin.path)
                continue
            download = _Download(pin, report)
            try:
                fetcher.fetch(pin.path, downloader=download)
            except (ValueError, requests.RequestException, ReferenceFetchError) as exc:
                error = _failure(pin, fetcher.get_url(pin.path), exc, download.got, retries + 1)
                failures.append(error)
                if isinstance(error, ReferenceNetworkError):
                    raise error from exc  # every other file would fail the same way
                say(f"FAILED {pin.path}")
                continue
            (dest / pin.path).chmod(0o644)  # pooch's temporary file was created 0600
            report.fetched.append(pin.path)
            say(f"fetched {pin.path} ({pin.size:,} bytes, sha256 ok)")
    finally:
        logger.setLevel(level)
    if failures:
        kind = ChecksumError if all(isinstance(f, ChecksumError) for f in failures) else ReferenceFetchError
        raise kind(f"{len(failures)} of {len(pins)} reference file(s) failed ({len(report.fetched)} "
                   f"fetched, {len(report.present)} already present): "
                   + " | ".join(str(f) for f in failures))
    return report


def paper_release_path(synthesizer: str) -> Path:
    """The paper's Census release of ``synthesizer`` in the reference folder. Raises ConfigError for an
    unknown synthesizer, ReferenceMissingError when the file is not here."""
    if synthesizer not in PAPER_SYNTHESIZERS:
        raise ConfigError(f"unknown paper release {synthesizer!r}; "
                          f"fix: use one of {list(PAPER_SYNTHESIZERS)}")
    return require_reference(*RELEASE_PATH.format(synthesizer=synthesizer).split("/"),
                             what=f"the paper's {synthesizer} Census release")


def paper_census_path() -> Path:
    """The paper's Census extract in the reference folder. Raises ReferenceMissingError if absent."""
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
            f"{what} {relative_to_root(path)} has header {header}{order}: missing {missing}, extra "
            f"{extra}; expected exactly {expected} as in the paper's repository; the file was edited or is "
            f"not the paper's; fix: restore it with `llmdisc data fetch-reference` (`--check` lists every "
            f"file that differs from the pins)")
    try:
        pin = pin_of(repo_path)
    except ConfigError:
        return
    if path.stat().st_size != pin.size or sha256_file(path) != pin.sha256:
        warnings.warn(f"{what} {relative_to_root(path)} differs from the paper's file (pinned sha256 "
                      f"{pin.sha256[:12]}...): results on it are not the paper's; fix: restore it with "
                      f"`llmdisc data fetch-reference`", LlmdiscWarning, stacklevel=3)


def load_paper_release(synthesizer: str) -> pd.DataFrame:
    """Read the paper's Census release of ``synthesizer``: 32,561 rows of the 11 Census columns, ``int64``.

    The paper fitted it on every real row (no holdout): distance tests against a holdout are not valid on it.

    Raises:
        ReferenceMissingError: the release is not on this machine (fix: ``llmdisc data fetch-reference``).
        DataError: its header differs from the paper's, or a value is not an integer. A file whose bytes
            differ from the pin but whose header is right loads with a warning.
    """
    path = paper_release_path(synthesizer)
    _check_paper_file(path, RELEASE_PATH.format(synthesizer=synthesizer), what=f"the paper's {synthesizer} release")
    return read_census_csv(path)


def load_paper_census() -> pd.DataFrame:
    """Read the paper's Census extract (32,561 rows x 11 integer columns), as :func:`load_paper_release`."""
    path = paper_census_path()
    _check_paper_file(path, CENSUS_REAL_PATH, what="the paper's Census extract")
    return read_census_csv(path)


__all__ = [
    "COMMIT", "DEFAULT_BASE_URL", "REPOSITORY", "PAPER_SYNTHESIZERS", "REFERENCE_FIX", "Difference",
    "FetchReport", "ReferenceFetchError", "ReferenceFile", "ReferenceMissingError", "ReferenceNetworkError",
    "check_reference", "fetch_reference", "file_url", "load_paper_census", "load_paper_release",
    "paper_census_path", "paper_release_path", "pin_of", "pinned_files",
]
