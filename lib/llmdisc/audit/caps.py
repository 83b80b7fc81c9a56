"""The audit's caps on rows: how many it reads and measures at most, and whether this run reached them.

The audit bounds its work by rows, not by the size of the files (docs/audit.md, the fast path and its caps):
``--max-rows`` rows read from each table, and each row instrument's own caps. :func:`caps_summary` lists them as
``audit.json``'s ``caps`` and the report's "Caps" table (a reached cap means more rows were there than were read).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence


def caps_summary(inputs: Mapping[str, Mapping[str, Any]], max_rows: int, tools: Sequence[Any],
                 readings: Sequence[Any]) -> list[dict[str, Any]]:
    """``[{"instrument", "what", "cap", "used", "reached"}, ...]``: the rows read per table, then each
    instrument's caps (its ``caps(reading)`` method, where it has one; the sample instruments are sized by
    ``--samples`` and have none).

    ``inputs`` is ``audit.json``'s ``inputs`` (per table: ``n_rows`` in the file, ``rows_read``); ``tools`` are the
    audit's instruments, in the order of their ``readings``.
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
