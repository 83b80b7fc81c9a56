"""Every ``audit.json`` that an audit test writes follows the JSON Schema in the repository (issue 40, item 5).

After each test of this folder, every ``audit.json`` under pytest's temporary folders that is new or changed since
it was last checked (module-scoped audits included) is validated against ``lib/llmdisc/audit/audit.schema.json``;
a file that does not follow it fails the test that wrote it, at its teardown.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

_checked: dict[Path, int] = {}
"""``audit.json`` path -> the modification time (ns) it was validated at."""


@pytest.fixture(autouse=True)
def _audits_follow_the_schema(tmp_path_factory: pytest.TempPathFactory, assert_valid_audit: object) -> object:
    yield
    for path in _audit_files(tmp_path_factory.getbasetemp()):
        try:
            stamp = path.stat().st_mtime_ns
        except FileNotFoundError:  # removed since the walk: nothing left to check
            continue
        if _checked.get(path) != stamp:
            assert_valid_audit(path)  # type: ignore[operator]
            _checked[path] = stamp


def _audit_files(root: Path) -> list[Path]:
    """Every ``audit.json`` under ``root``. Walked with :func:`os.walk`, which skips a folder that vanishes
    mid-walk: the packaging tests remove their multi-GB environments in the background while this runs (on the
    same worker's basetemp), and ``Path.rglob`` raises FileNotFoundError there. Virtual environments are not
    entered (no audit writes into one, and they hold tens of thousands of folders)."""
    found = []
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = [name for name in subfolders if name != "venv"]
        found.extend(Path(folder) / name for name in files if name == "audit.json")
    return sorted(found)
