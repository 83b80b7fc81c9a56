"""Every ``audit.json`` that an audit test writes follows the JSON Schema in the repository (issue 40, item 5).

After each test of this folder, every ``audit.json`` under pytest's temporary folders that is new or changed since
it was last checked (module-scoped audits included) is validated against ``lib/llmdisc/audit/audit.schema.json``;
a file that does not follow it fails the test that wrote it, at its teardown.
"""

from __future__ import annotations

from pathlib import Path

import pytest

_checked: dict[Path, int] = {}
"""``audit.json`` path -> the modification time (ns) it was validated at."""


@pytest.fixture(autouse=True)
def _audits_follow_the_schema(tmp_path_factory: pytest.TempPathFactory, assert_valid_audit: object) -> object:
    yield
    for path in sorted(tmp_path_factory.getbasetemp().rglob("audit.json")):
        stamp = path.stat().st_mtime_ns
        if _checked.get(path) != stamp:
            assert_valid_audit(path)  # type: ignore[operator]
            _checked[path] = stamp
