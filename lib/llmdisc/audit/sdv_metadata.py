"""``--metadata metadata.json``: the column types of an SDV single-table metadata file (:func:`read_sdv_metadata`).

Accepted: SDV 1.x/2.x ``Metadata`` (``Metadata.save_to_json``, ``{"tables": {...}}``: with several tables, the one
whose columns are the audited columns) and the single-table form (``{"columns": {...}, "primary_key": ...}``).
Each column's ``sdtype`` decides its role (:data:`SDTYPE_ROLES`); ``id`` and the primary key are identifiers; any
other sdtype SDV accepts (a Faker sdtype such as ``email`` or ``first_name``, or ``unknown``) is personal
information unless the column says ``"pii": false`` (then categorical), and ``"pii": true`` makes any column personal.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from llmdisc.audit.errors import InputMissingError, MetadataColumnsError, MetadataError
from llmdisc.paths import relative_to_root

SDTYPE_ROLES = {"numerical": "numerical", "categorical": "categorical", "ordinal": "categorical",
                "boolean": "categorical", "datetime": "datetime", "id": "identifier"}
"""SDV sdtype -> the audit's role of the column; other accepted sdtypes are ``pii``."""
PII_SDTYPES = ("unknown", "address", "email", "ipv4_address", "ipv6_address", "mac_address", "name",
               "phone_number", "ssn", "user_agent_string", "first_name", "last_name")
"""Personal-information sdtypes SDV names itself; any Faker method name is accepted as one too."""


@dataclass(frozen=True)
class ColumnType:
    """One column as the metadata declares it: ``role`` is ``numerical``, ``categorical``, ``datetime``,
    ``identifier`` or ``pii``; ``datetime_format`` None when not given (dates are then detected); ``pii`` the
    column's ``"pii"`` flag as written (None: not given)."""

    name: str
    sdtype: str
    role: str
    datetime_format: str | None = None
    pii: bool | None = None


@dataclass(frozen=True)
class SdvMetadata:
    """The metadata of the audited table: ``file`` is the file's name (never an absolute path), ``table`` the
    table's name in it (``""`` for the single-table form), ``columns`` column -> :class:`ColumnType`, in file
    order."""

    file: str
    table: str
    columns: dict[str, ColumnType]
    primary_key: str | None


def _is_faker_sdtype(sdtype: str) -> bool:
    # without rdt (it ships with sdv) only SDV's own PII names are known; nor is a name Faker cannot resolve
    try:
        from rdt.transformers.pii.anonymization import is_faker_function

        return bool(is_faker_function(sdtype))
    except Exception:  # noqa: BLE001 - ImportError included
        return False


def _role(column: str, spec: Any, where: str) -> ColumnType:
    if not isinstance(spec, dict) or not isinstance(spec.get("sdtype"), str):
        raise MetadataError(f"{where}: column {column!r} has no sdtype (got {spec!r}); fix: give each column "
                            'a mapping such as {"sdtype": "categorical"}')
    sdtype = spec["sdtype"]
    fmt = spec.get("datetime_format")
    if fmt is not None and (not isinstance(fmt, str) or "%" not in fmt):
        raise MetadataError(f"{where}: column {column!r} has datetime_format {fmt!r}, which is not a strftime "
                            "format; fix: write it like \"%Y-%m-%d\" or leave it out to detect the dates")
    pii = spec.get("pii") if isinstance(spec.get("pii"), bool) else None
    if sdtype in SDTYPE_ROLES:
        role = "pii" if pii is True else SDTYPE_ROLES[sdtype]
        return ColumnType(column, sdtype, role, fmt if sdtype == "datetime" else None, pii)
    if sdtype in PII_SDTYPES or _is_faker_sdtype(sdtype):
        role = "categorical" if pii is False else "pii"
        return ColumnType(column, sdtype, role, None, pii)
    raise MetadataError(
        f"{where}: column {column!r} has sdtype {sdtype!r}, which SDV does not know; fix: use one of "
        f"{', '.join(SDTYPE_ROLES)} or a personal-information sdtype such as {', '.join(PII_SDTYPES[1:5])}")


def read_sdv_metadata(path: Path | str, columns: Sequence[str]) -> SdvMetadata:
    """Read an SDV metadata JSON file and check it describes exactly the audited ``columns`` (the real
    table's).

    Raises:
        InputMissingError: the file does not exist (exit 4).
        MetadataError: not JSON, not SDV metadata, several tables none of which matches, an unknown sdtype or
            a datetime format that is not a strftime format (exit 5).
        MetadataColumnsError: the metadata lacks a column of the tables or names one they lack (exit 6).
    """
    path = Path(path)
    if not path.is_file():
        raise InputMissingError(f"metadata file {path.name!r} does not exist (looked at {relative_to_root(path)}); "
                                "fix: check the path passed to --metadata")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise MetadataError(f"{path.name} is not JSON ({type(exc).__name__}: {str(exc)[:120]}); fix: pass the "
                            "file SDV writes with Metadata.save_to_json(...)") from None
    if not isinstance(raw, dict) or not (isinstance(raw.get("tables"), dict) or isinstance(raw.get("columns"), dict)):
        raise MetadataError(f"{path.name} is not SDV metadata (no 'tables' or 'columns' mapping); fix: pass the "
                            "file SDV writes with Metadata.save_to_json(...)")
    wanted = set(columns)
    if isinstance(raw.get("tables"), dict):
        tables = {str(k): v for k, v in raw["tables"].items() if isinstance(v, dict)}
        if not tables:
            raise MetadataError(f"{path.name} describes no table; fix: pass the metadata of the audited table")
        if len(tables) == 1:
            name, table = next(iter(tables.items()))
        else:
            matching = [n for n, t in tables.items() if set(t.get("columns") or {}) == wanted]
            if len(matching) != 1:
                raise MetadataColumnsError(
                    f"{path.name} describes {len(tables)} tables ({', '.join(sorted(tables))}) and "
                    f"{'none' if not matching else 'several'} has exactly the audited columns; fix: pass a "
                    "metadata file of the audited table alone (metadata.get_table_metadata(name).save_to_json)")
            name, table = matching[0], tables[matching[0]]
    else:
        name, table = "", raw
    if not isinstance(table.get("columns"), dict):
        raise MetadataError(f"{path.name}: table {name!r} has no 'columns' mapping; fix: pass SDV metadata")
    where = f"{path.name}" + (f" (table {name!r})" if name else "")
    described = [str(c) for c in table["columns"]]
    missing = [c for c in columns if c not in described]
    extra = [c for c in described if c not in wanted]
    if missing or extra:
        raise MetadataColumnsError(
            f"{where} does not match the tables: it lacks column(s) {missing} and describes column(s) {extra} "
            "the tables do not have; fix: pass the metadata of these tables (re-detect it with "
            "Metadata.detect_from_dataframe) or correct the column names in the file")
    types = {c: _role(c, table["columns"][c], where) for c in described}
    key = table.get("primary_key")
    if key is not None and key not in types:
        raise MetadataColumnsError(f"{where}: primary_key {key!r} is not one of its columns; fix: name a column "
                                   "of the table or remove primary_key")
    return SdvMetadata(file=path.name, table=name, columns=types, primary_key=key)
