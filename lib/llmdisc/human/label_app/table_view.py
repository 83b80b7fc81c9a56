"""What the annotator sees: the sample and the C2 metadata block as HTML that fits the page width.

The LLM reads every column of a sample at once, so the annotator must too (docs/protocol.md §7, §8 row 4); a
monospaced Markdown block is cut at a laptop screen's edge. So the sample is an HTML table whose cells are the
very strings of :func:`llmdisc.discrimination.prompts.render_table`, with a font that shrinks with the page
width until every column's widest unbreakable word fits.
"""

from __future__ import annotations

import html
import re

import pandas as pd
from tabulate import tabulate

SAMPLE_CLASS = "llmdisc-sample"  # CSS class of the <div> around the sample table (the browser test finds it)
METADATA_CLASS = "llmdisc-metadata"  # CSS class of the <pre> holding the C2 metadata block
LARGEST_FONT_REM = 0.9
"""Font size of a sample table that fits its page with room to spare (rem: 1 = the page's 16 px)."""
SMALLEST_FONT_REM = 0.6
"""Floor of the shrinking font (about 9.6 px); a table needing less scrolls inside its box instead."""

PAGE_CSS = f"""<style>
[data-testid="stMainBlockContainer"] {{ padding-left: 2rem; padding-right: 2rem; }}
.{SAMPLE_CLASS} {{ width: 100%; max-width: 100%; container-type: inline-size; overflow-x: auto;
  margin-bottom: 1rem; }}
.{SAMPLE_CLASS} table {{ width: 100%; border-collapse: collapse; table-layout: auto; margin: 0;
  line-height: 1.25; font-variant-numeric: tabular-nums; }}
.{SAMPLE_CLASS} th, .{SAMPLE_CLASS} td {{ padding: 0.2em 0.35em; vertical-align: top;
  border: 1px solid rgba(128, 128, 128, 0.35); overflow-wrap: break-word; hyphens: none; }}
.{SAMPLE_CLASS} th {{ font-weight: 600; background: rgba(128, 128, 128, 0.12); vertical-align: bottom; }}
.{SAMPLE_CLASS} tbody tr:nth-child(even) {{ background: rgba(128, 128, 128, 0.06); }}
.{METADATA_CLASS} {{ white-space: pre-wrap; overflow-wrap: anywhere; overflow-x: visible;
  font-size: 0.8rem; line-height: 1.35; padding: 0.75rem 1rem; border-radius: 0.5rem;
  background: rgba(128, 128, 128, 0.08); max-width: 100%; }}
</style>"""
"""The page's style sheet, injected once per page; narrow margins (2 rem) give the table a larger font."""

_HEADER_CELL = re.compile(r"(<th[^>]*>)(.*?)(</th>)", re.DOTALL)
_VALUE_BREAKS = re.compile(r"\s+|(?<=-)(?=[^\d\s-])")
"""Where a browser may wrap a value: at white space, and after a hyphen followed by a non-digit."""
_HEADER_BREAKS = re.compile(r"\s+|(?<=_)|(?<=-)(?=[^\d\s-])")
"""The same for headers, plus after each ``_`` (where :func:`sample_table_html` puts a ``<wbr>``)."""

_CELL_EM = 0.8  # horizontal padding (2 x 0.35 em) and border of one cell, in em
_BOLD = 1.06  # headers are bold: about 6 % wider than the same letters in regular weight


def _char_em(char: str) -> float:
    # A generous width in em of one character of the page's font (Source Sans): overestimating only makes the
    # font a little smaller than it could be; underestimating would cut columns.
    if char in "mwMW":
        return 0.85
    if char.isupper() or char.isdigit():
        return 0.62
    return 0.52


def _longest_word_em(text: str, breaks: re.Pattern[str]) -> float:
    return max((sum(map(_char_em, part)) for part in breaks.split(text)), default=0.0)


def sample_min_width_em(sample: pd.DataFrame) -> float:
    """The narrowest width the sample table can take, in em of its font: the sum over columns of the longest
    unbreakable word plus padding (an overestimate by design); 0.0 for a sample without columns."""
    total = 0.0
    for column in sample.columns:
        value_em = max((_longest_word_em(value, _VALUE_BREAKS) for value in sample[column].astype(str)),
                       default=0.0)
        header_em = _longest_word_em(str(column), _HEADER_BREAKS) * _BOLD
        total += max(value_em, header_em) + _CELL_EM
    return round(total, 2)


def sample_font_size(sample: pd.DataFrame) -> str:
    """CSS font size of the sample table, ``clamp(0.6rem, calc(100cqi / W), 0.9rem)`` with ``W`` =
    :func:`sample_min_width_em`: the font at which the narrowest layout just fits its box (``100cqi``)."""
    width_em = max(sample_min_width_em(sample), 1.0)
    return f"clamp({SMALLEST_FONT_REM}rem, calc(100cqi / {width_em}), {LARGEST_FONT_REM}rem)"


def sample_table_html(sample: pd.DataFrame) -> str:
    """Render a sample as the HTML table the annotator sees, cell for cell the Markdown the LLM receives.

    Returns one ``<div class="llmdisc-sample">`` holding a ``<table>``; each cell's text (stripped) equals the
    cell of ``render_table(sample)``, HTML-escaped. Headers get a ``<wbr>`` after each ``_``. No newline
    inside, so a Markdown renderer keeps it as one HTML block.
    """
    # pandas' to_markdown is tabulate(df, headers="keys", tablefmt="pipe", showindex=False): the same call
    # with tablefmt="html" formats every cell identically (tabulate formats first, then lays out).
    table = tabulate(sample, headers="keys", tablefmt="html", showindex=False)
    table = _HEADER_CELL.sub(lambda m: m.group(1) + m.group(2).strip().replace("_", "_<wbr>") + m.group(3),
                             table)
    table = table.replace("<table>", f'<table style="font-size: {sample_font_size(sample)};">', 1)
    return f'<div class="{SAMPLE_CLASS}">{table.replace(chr(10), " ")}</div>'


def metadata_html(text: str) -> str:
    """Render the C2 metadata block, as the LLM receives it, as a wrapping ``<pre class="llmdisc-metadata">``
    (HTML-escaped; line breaks written ``&#10;`` so the HTML stays one Markdown HTML block)."""
    return f'<pre class="{METADATA_CLASS}">{html.escape(text).replace(chr(10), "&#10;")}</pre>'
