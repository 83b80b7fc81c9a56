"""The audit's caps on rows: how many it reads and measures at most, and whether this run reached them.

Like deepchecks' domain classifier (at most 10,000 rows) and mostlyai-qa's (10,000), the audit bounds its work by
rows, not by the size of the files: past the caps, the instruments of the fast path (``--instruments c2st
distances``) do the same work however large the table (reading a larger file takes longer):

- ``--max-rows`` (default 10,000) rows read from each table at seeded positions; the real rows read are split into
  the real class and the controls (:mod:`llmdisc.audit.data`);
- the C2ST: at most :data:`~llmdisc.audit.instruments.rows.C2ST_ROWS` rows per side of each comparison, and the
  :data:`~llmdisc.audit.instruments.rows.MAX_LEVELS` most frequent real levels of each categorical column;
- the distances: at most :data:`~llmdisc.audit.instruments.rows.DCR_ROWS` records per group.

:func:`caps_summary` lists them as ``audit.json``'s ``caps`` and the report's "Caps" table: each cap, what this
run used under it, and whether it was reached (a reached cap means more rows were there than were read).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence


def caps_summary(inputs: Mapping[str, Mapping[str, Any]], max_rows: int, tools: Sequence[Any],
                 readings: Sequence[Any]) -> list[dict[str, Any]]:
    """``[{"instrument", "what", "cap", "used", "reached"}, ...]``: the rows read per table, then each
    instrument's caps (its ``caps(reading)`` method, where it has one; the sample instruments are sized by
    ``--samples`` and have none).

    Args:
        inputs: ``audit.json``'s ``inputs`` (per table: ``n_rows`` in the file, ``rows_read``).
        max_rows: ``--max-rows``.
        tools: the audit's instruments, in the order of ``readings``.
        readings: their readings.
    """
    out: list[dict[str, Any]] = [{
        "instrument": None, "what": "rows read from each table (--max-rows, seeded positions)", "cap": int(max_rows),
        "used": {role: int(info["rows_read"]) for role, info in inputs.items()},
        "reached": any(int(info["n_rows"]) > max_rows for info in inputs.values())}]
    for tool, reading in zip(tools, readings):
        caps = getattr(tool, "caps", None)
        if caps is not None and reading.status in ("measured", "stopped"):
            out += caps(reading)
    return out
