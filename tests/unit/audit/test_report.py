"""``report.html`` from a Jinja2 template with autoescape (issue 42, item 2): column names, values, file names and
sentences from the user's files reach the page as text, never as markup.

The page is read back with :class:`html.parser.HTMLParser`: its elements must be the report's own (no script, one
image: the figure, as a ``data:`` URI; no event-handler attribute), and every hostile text put into the audit
(markup, script, an attribute break-out, Jinja2 syntax, entities: ``tests/conftest.py``'s ``hostile_report``)
must be among its texts, character for character.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from llmdisc.audit.instruments.base import Bullets, Paragraph, Table
from llmdisc.paths import project_root

REPORT_TAGS = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "p", "strong", "em", "img", "table",
               "thead", "tbody", "tr", "th", "td", "ul", "li"}
"""Every element the report's template writes."""


class _Page(HTMLParser):
    """The elements (with their attributes) and the texts of a page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.texts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)

    def handle_data(self, data: str) -> None:
        self.texts.append(data)


def _parse(page: str) -> _Page:
    parsed = _Page()
    parsed.feed(page)
    parsed.close()
    return parsed


def test_markup_and_script_in_the_users_texts_are_escaped_in_the_report(tmp_path: Path, hostile_report) -> None:
    path, texts = hostile_report(tmp_path)
    assert path == tmp_path / "report.html"
    page = path.read_text(encoding="utf-8")
    # nothing hostile became markup
    assert "<script" not in page.lower() and "<img src=x" not in page and "<b>" not in page
    assert "{{7*7}}" in page and "49" not in re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "", page)
    parsed = _parse(page)
    tags = [tag for tag, _ in parsed.elements]
    assert set(tags) <= REPORT_TAGS, set(tags) - REPORT_TAGS
    assert not [(tag, a) for tag, attrs in parsed.elements for a in attrs if a.lower().startswith("on")]
    images = [attrs for tag, attrs in parsed.elements if tag == "img"]
    assert len(images) == 1 and images[0]["src"].startswith("data:image/png;base64,"), images
    assert tags.count("h1") == 1 and "stopped" in set(t.strip() for t in parsed.texts)  # the layout held
    # ... and every hostile text is on the page as text, character for character (entities decoded once)
    shown = "\n".join(parsed.texts)
    missing = [t.split("]")[0] + "]" for t in texts if t not in shown]
    assert not missing, f"not shown as text: {missing}"
    assert len(texts) >= 20
    # the escaped forms themselves: markup escaped once, an entity's ampersand escaped
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in page
    assert "&#34;&gt;&lt;img src=x onerror=&#34;window.__pwned = 1&#34;&gt;" in page
    assert "&amp;amp; &amp;lt;b&amp;gt;" in page


def test_every_text_of_the_page_is_in_the_template_or_escaped_data() -> None:
    """No HTML is written outside the template: no ``html.escape`` left in the audit, no value marked safe."""
    audit = project_root() / "lib" / "llmdisc" / "audit"
    template = (audit / "templates" / "report.html.j2").read_text(encoding="utf-8")
    assert not re.search(r"\|\s*safe\b|autoescape\s+false|Markup", template)
    for path in sorted(audit.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        assert "html.escape" not in source and not re.search(r"^import html$", source, re.M), path
        assert not re.search(r"""["']<(table|tr|td|th|ul|li|p|h\d)[ >]""", source), path  # no tag built in Python
    from llmdisc.audit.report import _environment

    env = _environment()
    assert env.autoescape is True and env.undefined.__name__ == "StrictUndefined"


def test_a_section_is_data_and_html_text_is_refused() -> None:
    import json

    from llmdisc.audit.report import render_html

    result = json.loads((project_root() / "tests" / "fixtures" / "audit" / "audit.json").read_text("utf-8"))
    result["instruments"] = []  # no figure: fast
    with pytest.raises(TypeError, match="not a list of Table, Bullets and Paragraph"):
        render_html(result, {"c2st": "<table><tr><td>x</td></tr></table>"})
    page = render_html(result, {"c2st": [Table(["a <b>"], [[1.0, None, "<i>"]], numeric=(2,)),
                                         Bullets(["x < y"]), Paragraph("p & q")]})
    assert "<table>" in page  # the report's own tables
    assert "<i>" not in page and "<b>" not in page


def test_the_template_ships_with_the_package_and_jinja2_is_declared() -> None:
    import tomllib
    from fnmatch import fnmatch

    pyproject = tomllib.loads((project_root() / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = pyproject["tool"]["setuptools"]["package-data"]["llmdisc.audit"]
    assert any(fnmatch("templates/report.html.j2", p) for p in patterns), patterns
    assert any(re.match(r"jinja2\b", d, re.I) for d in pyproject["project"]["dependencies"])


def test_an_instrument_stopped_by_max_minutes_is_named_with_its_n_in_the_figure() -> None:
    """A D read from the few units done before ``--max-minutes`` is labelled as such, not drawn like a finding."""
    import base64
    import copy
    import json

    from llmdisc.audit.report import _tick_label, gate_figure

    result = json.loads((project_root() / "tests/fixtures/audit/audit.json").read_text(encoding="utf-8"))
    measured = result["instruments"][0]
    stopped = copy.deepcopy(measured)
    stopped["status"] = "stopped"
    for comparison, n in zip(stopped["comparisons"].values(), (4, 3, 5)):
        comparison["n_real"], comparison["n_other"] = n, n + 1
    assert "stopped" not in _tick_label(measured)
    assert "stopped by --max-minutes at n 3 a side" in _tick_label(stopped)
    png = base64.b64decode(gate_figure([measured, stopped], 0.2))
    assert png.startswith(b"\x89PNG")
