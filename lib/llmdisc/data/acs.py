"""ACS Census (folktables ACSIncome, 2018 1-Year, person survey): real rows, integer codes or text labels.

Sources, the first that exists wins: ``census_csv=`` or ``LLMDISC_CENSUS_CSV`` (a local CSV of
:data:`CENSUS_COLUMNS`); the paper's extract in the reference folder; else folktables downloads PUMS files
into ``data/raw/acs/`` (*not* the paper's rows; a warning says so). Entry points: :func:`load_census`,
:func:`decode_census` (code lists in ``codebooks/``; an unknown code is an error, never a guess).
"""

from __future__ import annotations

import importlib.resources
import os
import shutil
import warnings
import zipfile
from pathlib import Path

import pandas as pd

from llmdisc.errors import REFERENCE_FIX, ConfigError, DataError, LlmdiscWarning, ReferenceMissingError
from llmdisc.paths import data_dir, reference_dir, relative_to_root

CENSUS_COLUMNS: tuple[str, ...] = (
    "age", "class_of_worker", "education", "marital_status", "occupation", "place_of_birth",
    "relationship", "hours_per_week", "sex", "race", "income_above_50k",
)  # fmt: skip
CENSUS_TARGET = "income_above_50k"
#: PUMS variable -> our column name (docs/protocol.md §2); the label is PINCP > 50,000.
ACS_RENAME: dict[str, str] = {
    "AGEP": "age", "COW": "class_of_worker", "SCHL": "education", "MAR": "marital_status",
    "OCCP": "occupation", "POBP": "place_of_birth", "RELP": "relationship", "WKHP": "hours_per_week",
    "SEX": "sex", "RAC1P": "race",
}  # fmt: skip
#: Columns that hold PUMS codes (decoded by ``labels``); age and hours stay numbers, the target stays 0/1.
CENSUS_NUMERICAL: tuple[str, ...] = ("age", "hours_per_week")
CODE_COLUMNS: dict[str, str] = {col: var for var, col in ACS_RENAME.items() if col not in CENSUS_NUMERICAL}

ACS_YEAR = "2018"
ACS_HORIZON = "1-Year"
ACS_BASE_URL = "https://www2.census.gov/programs-surveys/acs/data/pums"
DEFAULT_CENSUS_ROWS = 32_561  # the paper's row count (= UCI Adult's training split)
CENSUS_CSV_ENV = "LLMDISC_CENSUS_CSV"
ACS_URL_ENV = "LLMDISC_ACS_URL"  # a mirror of the Census Bureau's PUMS folder (tests serve one on loopback)
# (connect, read) seconds: a machine without the network fails in seconds instead of hanging.
DOWNLOAD_TIMEOUT_S = (10.0, 300.0)

_SUPPLY_HINT = (
    f"{REFERENCE_FIX} (the paper's own Census extract); or pass census_csv=PATH (CLI: --census-csv PATH) or "
    f"set {CENSUS_CSV_ENV}=PATH to a CSV with columns {', '.join(CENSUS_COLUMNS)} (PUMS integer codes), or "
    f"run with network access so folktables can download the 2018 1-Year PUMS person files into "
    f"data/raw/acs/ (other rows than the paper's)")


def acs_cache_dir() -> Path:
    """``data/raw/acs``: folktables' download cache (``<year>/<horizon>/psam_p<state>.csv``)."""
    return data_dir() / "raw" / "acs"


def reference_census_csv() -> Path | None:
    """The paper's ACSIncome 2018 extract in the reference folder, or None."""
    ref = reference_dir()
    if ref is None:
        return None
    path = ref / "data" / "census" / "real" / "census.csv"
    return path if path.is_file() else None


def local_census_source(census_csv: str | Path | None = None) -> Path | None:
    """The local CSV that :func:`load_census` would read (argument, env var, reference), or None. Raises
    DataError when a CSV named by the argument or the environment variable does not exist."""
    for given, origin in ((census_csv, "census_csv"),
                          (os.environ.get(CENSUS_CSV_ENV) or None, CENSUS_CSV_ENV)):
        if given is None:
            continue
        path = Path(given).expanduser()
        if not path.is_file():
            raise DataError(f"census CSV {path} (from {origin}) does not exist; fix: point {origin} at an "
                            f"existing CSV of columns {', '.join(CENSUS_COLUMNS)}, or unset it to use the "
                            f"default source")
        return path
    return reference_census_csv()


def read_census_csv(path: str | Path) -> pd.DataFrame:
    """Read a census CSV of PUMS integer codes: every row, :data:`CENSUS_COLUMNS` in order, all ``int64``.

    Raises:
        DataError: columns missing or extra, empty cells, or non-integer values.
    """
    path = Path(path)
    table = pd.read_csv(path)
    missing = [c for c in CENSUS_COLUMNS if c not in table.columns]
    extra = [c for c in table.columns if c not in CENSUS_COLUMNS]
    if missing or extra:
        raise DataError(f"census CSV {relative_to_root(path)} has columns that differ from the schema: "
                        f"missing {missing}, extra {extra}; fix: rename or drop columns so that it has "
                        f"exactly {', '.join(CENSUS_COLUMNS)} (PUMS integer codes, label 0/1)")
    table = table[list(CENSUS_COLUMNS)]
    for col in CENSUS_COLUMNS:
        values = table[col]
        if values.isna().any() or not pd.api.types.is_numeric_dtype(values) or (values % 1 != 0).any():
            raise DataError(f"census CSV {relative_to_root(path)}: column {col!r} must hold integers "
                            f"without empty cells (found dtype {values.dtype}, {int(values.isna().sum())} "
                            f"empty); fix: write PUMS integer codes, as folktables' ACSIncome task does")
    return table.astype("int64").reset_index(drop=True)


def _state_list() -> list[str]:
    from folktables.load_acs import state_list  # folktables' own list: the 50 states, DC excluded, and PR

    return list(state_list)


def download_acs_states(states: list[str], root: Path | None = None, *,
                        base_url: str | None = None) -> list[Path]:
    """Download (once) each state's 2018 1-Year PUMS person CSV into folktables' cache; return their paths.

    Unlike folktables' downloader (no timeout, errors swallowed): :data:`DOWNLOAD_TIMEOUT_S`, and it raises.

    Args:
        root: cache root, :func:`acs_cache_dir` by default.
        base_url: PUMS folder URL (default :data:`ACS_BASE_URL`, or ``LLMDISC_ACS_URL``).

    Raises:
        ReferenceMissingError: a download or extraction failed (the message names the other sources).
    """
    import requests
    from folktables.load_acs import _STATE_CODES

    root = root or acs_cache_dir()
    base_url = (base_url or os.environ.get(ACS_URL_ENV) or ACS_BASE_URL).rstrip("/")
    folder = root / ACS_YEAR / ACS_HORIZON
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for state in states:
        target = folder / f"psam_p{_STATE_CODES[state]}.csv"
        paths.append(target)
        if target.is_file():
            continue
        url = f"{base_url}/{ACS_YEAR}/{ACS_HORIZON}/csv_p{state.lower()}.zip"
        archive = folder / f"csv_p{state.lower()}.zip.part"
        try:
            with requests.get(url, timeout=DOWNLOAD_TIMEOUT_S, stream=True) as response:
                response.raise_for_status()
                with open(archive, "wb") as fh:
                    for block in response.iter_content(1 << 20):
                        fh.write(block)
            partial = target.with_suffix(".csv.part")  # renamed when complete: a cached file is a whole file
            with zipfile.ZipFile(archive) as zipped, zipped.open(target.name) as member:
                with open(partial, "wb") as fh:
                    shutil.copyfileobj(member, fh, 1 << 20)
            partial.replace(target)
        except (requests.RequestException, OSError, zipfile.BadZipFile, KeyError) as exc:
            raise ReferenceMissingError(
                f"the paper's reference data is not here (no <reference>/data/census/real/census.csv, no "
                f"census_csv, no {CENSUS_CSV_ENV}) and the ACS {ACS_YEAR} {ACS_HORIZON} PUMS file for "
                f"{state} could not be downloaded from {url} ({type(exc).__name__}: {exc}); " + _SUPPLY_HINT
            ) from exc
        finally:
            archive.unlink(missing_ok=True)
            target.with_suffix(".csv.part").unlink(missing_ok=True)
    return paths


def load_acs_income(states: list[str] | None = None) -> tuple[pd.DataFrame, list[Path]]:
    """The ACSIncome table (:data:`CENSUS_COLUMNS`, ``int64``) built by folktables from the PUMS files of
    ``states`` (None: every state it knows), downloaded when not cached; and the PUMS files read. Raises
    ConfigError for an unknown state code, DataError when the files cannot be downloaded."""
    valid = _state_list()
    states = list(states) if states else valid
    unknown = [s for s in states if s not in valid]
    if unknown:
        raise ConfigError(f"unknown ACS state code(s) {unknown}; fix: use two-letter codes from {valid}")
    files = download_acs_states(states)
    from folktables import ACSDataSource, ACSIncome

    source = ACSDataSource(survey_year=ACS_YEAR, horizon=ACS_HORIZON, survey="person",
                           root_dir=str(acs_cache_dir()))
    raw = source.get_data(states=states, download=False)
    features, label, _group = ACSIncome.df_to_pandas(raw)
    table = features.rename(columns=ACS_RENAME)
    table[CENSUS_TARGET] = label.to_numpy().astype("int64").ravel()
    return table[list(CENSUS_COLUMNS)].astype("int64").reset_index(drop=True), files


def load_census(*, census_csv: str | Path | None = None, states: list[str] | None = None,
                n_rows: int | None = None, seed: int = 0) -> tuple[pd.DataFrame, list[Path]]:
    """(real census rows as integer codes, the files read) from the first available source (module docstring).

    Args:
        states: ACS states for the folktables path; not allowed with a local CSV (it has no state column).
        n_rows: seeded subsample size. None: every row of a local CSV, or :data:`DEFAULT_CENSUS_ROWS` from
            folktables (all rows, with a warning, when fewer pass the filter).

    Raises:
        ConfigError: ``states`` with a local CSV, or ``n_rows`` larger than the rows available.
        DataError: no local file and no network, a missing named file, or a CSV off the schema.
    """
    local = local_census_source(census_csv)
    if local is not None:
        if states:
            raise ConfigError(f"states={states} selects ACS states for the folktables download, but the "
                              f"census rows come from the local CSV {relative_to_root(local)}, which has no "
                              f"state column; fix: omit states, or unset census_csv/{CENSUS_CSV_ENV} to "
                              f"download from the ACS")
        table, files = read_census_csv(local), [local]
    else:
        warnings.warn("the paper's Census extract is not here: reading ACSIncome rows with folktables "
                      "instead, which are not the paper's rows; for the paper's table run `llmdisc data "
                      "fetch-reference` (or `make reference`), or set LLMDISC_REFERENCE", LlmdiscWarning,
                      stacklevel=2)
        table, files = load_acs_income(states)
        if n_rows is None:
            n_rows = DEFAULT_CENSUS_ROWS
            if len(table) < n_rows:
                warnings.warn(f"only {len(table)} ACSIncome rows for states {states}; using all of them "
                              f"instead of {DEFAULT_CENSUS_ROWS}", LlmdiscWarning, stacklevel=2)
                n_rows = len(table)
    return subsample(table, n_rows, seed, what=f"census rows from {relative_to_root(files[0])}"), files


def subsample(table: pd.DataFrame, n_rows: int | None, seed: int, *, what: str = "rows") -> pd.DataFrame:
    """``n_rows`` rows drawn without replacement with ``seed`` (all rows, in order, when None). Raises
    ConfigError when ``n_rows`` is not positive or exceeds the rows available."""
    if n_rows is None:
        return table.reset_index(drop=True)
    if not 0 < int(n_rows) <= len(table):
        raise ConfigError(f"n_rows={n_rows} is outside 1..{len(table)} (the {what} available); "
                          f"fix: pass n_rows between 1 and {len(table)}, or None for every row")
    return table.sample(n=int(n_rows), random_state=seed).reset_index(drop=True)


def load_codebook(variable: str) -> dict[int, str]:
    """Read ``codebooks/<variable>.txt`` (``variable``: a PUMS name such as ``SCHL``) into ``{code: label}``.
    Raises DataError when the file is missing or a line is not ``CODE .Label``."""
    resource = importlib.resources.files("llmdisc.data").joinpath("codebooks").joinpath(f"{variable}.txt")
    try:
        text = resource.read_text(encoding="utf-8")
    except OSError as exc:
        raise DataError(f"code list codebooks/{variable}.txt is missing from the llmdisc package; fix: "
                        f"restore lib/llmdisc/data/codebooks/ from the repository and reinstall "
                        f"(`make setup`)") from exc
    codes: dict[int, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        code, sep, label = line.partition(" .")
        if not sep or not code.strip().isdigit():
            raise DataError(f"codebooks/{variable}.txt line {number} is not 'CODE .Label': {line!r}; "
                            f"fix: restore the file from the repository")
        codes[int(code)] = label.strip()
    return codes


def decode_census(table: pd.DataFrame) -> pd.DataFrame:
    """A copy with every PUMS code column mapped to its text label (``object``); age, hours, target kept.
    Raises DataError for a code absent from its code list."""
    decoded = table.copy()
    for column, variable in CODE_COLUMNS.items():
        codebook = load_codebook(variable)
        unknown = sorted(set(int(c) for c in table[column].unique()) - set(codebook))
        if unknown:
            raise DataError(f"column {column!r} holds code(s) {unknown[:10]} that the {variable} code list "
                            f"(codebooks/{variable}.txt) does not define; fix: check the input is 2018 ACS "
                            f"PUMS codes, or add the code with its dictionary label to "
                            f"codebooks/{variable}.txt")
        decoded[column] = table[column].map(codebook).astype(object)
    return decoded
