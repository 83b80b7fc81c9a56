"""The audit's caps on rows (docs/audit.md, the fast path and its caps): ``--max-rows`` rows read from each
table and each row instrument's own caps, listed by :func:`caps_summary` (a reached cap means more rows were
there than were read)."""

from __future__ import annotations

from typing import Any, Mapping, Sequence


def caps_summary(inputs: Mapping[str, Mapping[str, Any]], max_rows: int, tools: Sequence[Any],
                 readings: Sequence[Any]) -> list[dict[str, Any]]:
    """``audit.json``'s ``caps``, ``[{"instrument", "what", "cap", "used", "reached"}, ...]``: the rows read
    per table (``inputs`` is ``audit.json``'s ``inputs``), then the ``caps(reading)`` of each instrument of
    ``tools`` that has one, in the order of their ``readings`` (the sample instruments are sized by
    ``--samples`` and have none)."""
    out: list[dict[str, Any]] = [{
        "instrument": None, "what": "rows read from each table (--max-rows, seeded positions)", "cap": int(max_rows),
        "used": {role: int(info["rows_read"]) for role, info in inputs.items()},
        "reached": any(int(info["n_rows"]) > max_rows for info in inputs.values())}]
    for tool, reading in zip(tools, readings):
        caps = getattr(tool, "caps", None)
        if caps is not None and reading.status in ("measured", "stopped"):
            out += caps(reading)
    return out
