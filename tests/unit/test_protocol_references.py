"""Every "§" reference in the project resolves: to a section of docs/protocol.md, or of the notebook it names.

A reference is ``§N`` (``§8``, ``§ 5a``), optionally with rows of the protocol's §8 table (``§8 row 4``,
``§8 rows 1–3, 5, 6``). Right after ``notebook NN`` it is a section of that notebook; otherwise it is a section of
docs/protocol.md, which must be named shortly before it (``docs/protocol.md §1, §5``) unless the reference is in
docs/protocol.md itself. A reference that names no document fails, and so does any citation of a protocol file
the project does not have.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROTOCOL = ROOT / "docs" / "protocol.md"
PROTOCOL_NAME = "docs/protocol.md"

#: ``§8``, ``§ 5a``, ``§5.2``; then optionally ``row 4`` / ``rows 1–3, 5 and 6`` (whitespace may wrap lines).
REFERENCE = re.compile(
    r"§\s*(?P<section>\d+(?:\.\d+|[a-z])?)\b"
    r"(?:\s+rows?\s+(?P<rows>\d+(?:\s*[–-]\s*\d+)?(?:\s*(?:,|and)\s*\d+(?:\s*[–-]\s*\d+)?)*))?"
)
#: A notebook's section: ``notebook 07 § 5b`` (quotes allowed between, for strings split over lines).
NOTEBOOK = re.compile(r"\bnotebooks?\s+(?P<notebook>\d{2})[\s\"']*$", re.IGNORECASE)
#: Any other reference is to docs/protocol.md, named at most PROTOCOL_WINDOW characters before it.
PROTOCOL_WINDOW = 200
#: Citations of files the project does not have (an internal brief, a style guide); never in the project.
FORBIDDEN = re.compile(r"PROTOCOL\.md|shared/PROTOCOL|\bPROTOCOL(?:'s|\s*§)|STYLE\.md|\bSTYLE\s*§")


def _sources() -> list[Path]:
    files = sorted((ROOT / "notebooks").glob("*.ipynb"))
    files += sorted((ROOT / "lib").rglob("*.py"))
    files += sorted((ROOT / "docs").glob("*.md"))
    files += sorted(path for path in (ROOT / "configs").glob("*") if path.is_file())
    files += [ROOT / "README.md"]
    files += sorted(path for path in (ROOT / "tests").rglob("*.py") if path.resolve() != Path(__file__).resolve())
    return files


def _texts(path: Path) -> list[tuple[str, str]]:
    """(where, text) pieces of a file: one per notebook cell, else the whole file."""
    if path.suffix == ".ipynb":
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        return [(f"cell {i}", "".join(cell["source"])) for i, cell in enumerate(cells)]
    return [("", path.read_text(encoding="utf-8"))]


def protocol_sections(text: str) -> dict[str, str]:
    """Section number (``"5"``, ``"5.2"``) -> that section's text, from headings ``## §5 Title``."""
    heads = list(re.finditer(r"^#{2,4}\s*§\s*(\d+(?:\.\d+)?)\b.*$", text, flags=re.MULTILINE))
    return {m.group(1): text[m.start():(heads[i + 1].start() if i + 1 < len(heads) else len(text))]
            for i, m in enumerate(heads)}


def table_rows(section_text: str) -> set[int]:
    """Row numbers of the Markdown table in a section (first cell an integer)."""
    return {int(m.group(1)) for m in re.finditer(r"^\|\s*(\d+)\s*\|", section_text, flags=re.MULTILINE)}


def notebook_sections(number: str) -> set[str] | None:
    """Section labels (``"5"``, ``"5a"``) of notebook ``NN`` from headings ``## 5a. Title``; None: no notebook."""
    paths = sorted((ROOT / "notebooks").glob(f"{number}_*.ipynb"))
    if not paths:
        return None
    labels = set()
    for cell in json.loads(paths[0].read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] == "markdown":
            labels |= set(re.findall(r"^#{1,4}\s*(\d+[a-z]?)\.\s", "".join(cell["source"]), flags=re.MULTILINE))
    return labels


def parse_rows(rows: str | None) -> list[int]:
    """``"1–3, 5 and 6"`` -> [1, 2, 3, 5, 6]."""
    if not rows:
        return []
    numbers = []
    for part in re.split(r"\s*(?:,|and)\s*", rows.strip()):
        ends = [int(n) for n in re.split(r"\s*[–-]\s*", part)]
        numbers += list(range(ends[0], ends[-1] + 1))
    return numbers


def unresolved(text: str, *, in_protocol: bool, sections: dict[str, str]) -> list[str]:
    """The references in ``text`` that do not resolve, each as a message."""
    problems = []
    for match in REFERENCE.finditer(text):
        section, rows = match.group("section"), parse_rows(match.group("rows"))
        line_start = text.rfind("\n", 0, match.start()) + 1
        if in_protocol and text.startswith("#", line_start):
            continue  # a heading of docs/protocol.md itself
        before = text[max(0, match.start() - PROTOCOL_WINDOW):match.start()]
        notebook = NOTEBOOK.search(before)
        label = match.group(0).replace("\n", " ")
        if notebook:
            number = notebook.group("notebook")
            labels = notebook_sections(number)
            if labels is None:
                problems.append(f"{label!r}: notebook {number} does not exist")
            elif section not in labels:
                problems.append(f"{label!r}: notebook {number} has no section {section} (has {sorted(labels)})")
            continue
        if not in_protocol and PROTOCOL_NAME not in before:
            problems.append(f"{label!r} names no document; write '{PROTOCOL_NAME} §{section}'")
            continue
        if section not in sections:
            problems.append(f"{label!r}: {PROTOCOL_NAME} has no §{section} (has {sorted(sections)})")
            continue
        missing = sorted(set(rows) - table_rows(sections[section]))
        if missing:
            problems.append(f"{label!r}: {PROTOCOL_NAME} §{section} has no row {missing}")
    return problems


def _line(text: str, needle: str) -> int:
    return text[:text.find(needle)].count("\n") + 1 if needle in text else 0


def test_protocol_document_is_numbered() -> None:
    text = PROTOCOL.read_text(encoding="utf-8")
    sections = protocol_sections(text)
    top = sorted(int(key) for key in sections if "." not in key)
    assert top == list(range(1, len(top) + 1)) and len(top) >= 8, top
    assert table_rows(sections["8"]) == set(range(1, 12)), "§8's table must number its rows 1-11"
    assert "shared" not in text.lower()


def test_every_section_reference_resolves() -> None:
    sections = protocol_sections(PROTOCOL.read_text(encoding="utf-8"))
    problems, found = [], 0
    for path in _sources():
        for where, text in _texts(path):
            found += len(REFERENCE.findall(text))
            for problem in unresolved(text, in_protocol=path == PROTOCOL, sections=sections):
                problems.append(f"{path.relative_to(ROOT)} {where}".strip() + f": {problem}")
    assert found > 20, f"only {found} references found: is the scan looking in the right places?"
    assert not problems, "unresolved § references:\n" + "\n".join(problems)


def test_no_citation_of_files_the_project_does_not_have() -> None:
    hits = []
    for path in _sources():
        text = path.read_text(encoding="utf-8")
        for match in FORBIDDEN.finditer(text):
            hits.append(f"{path.relative_to(ROOT)}:{_line(text, match.group(0))}: {match.group(0)!r}")
    assert not hits, "cite docs/protocol.md instead:\n" + "\n".join(hits)


@pytest.mark.parametrize(("text", "expected"), [
    ("see docs/protocol.md §5", []),
    ("see docs/protocol.md §8 rows 1–3, 5 and 11", []),
    ("see docs/protocol.md §9", ["no §9"]),
    ("see docs/protocol.md §8 row 12", ["no row [12]"]),
    ("see §5", ["names no document"]),
    ("notebook 07 § 5b", []),
    ("notebook 07 § 5z", ["no section 5z"]),
])
def test_the_checker_itself(text: str, expected: list[str]) -> None:
    sections = protocol_sections(PROTOCOL.read_text(encoding="utf-8"))
    problems = unresolved(text, in_protocol=False, sections=sections)
    assert len(problems) == len(expected)
    for problem, fragment in zip(problems, expected):
        assert fragment in problem
