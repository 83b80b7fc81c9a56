"""``llmdisc bench stages``: each notebook's and each stage's wall time and share of a finished run.

Reads papermill's timings from ``reports/executed/<config>/*.ipynb``; nothing is run. Two shares, because notebooks
run side by side: of the summed notebook seconds (where the computing goes) and of the run's span (how much of the
wait a stage is present in; over 100 % in all when stages overlap). A skipped notebook keeps an earlier run's copy,
whose interval then widens the printed span.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
from dataclasses import dataclass
from pathlib import Path

NAME = "stages"
HELP = "a finished run's wall time and share per notebook and per stage (read from reports/executed/<config>)"
IN_ALL = False  # reads a finished run; `make bench` on a fresh clone has none


@dataclass(frozen=True)
class NotebookTime:
    """One executed notebook: its run id (the file name), stage and seconds; start and end where recorded."""

    run_id: str
    stage: str  # the notebook's number (02), the first two characters of its run id
    seconds: float
    start: _dt.datetime | None = None
    end: _dt.datetime | None = None


@dataclass(frozen=True)
class StageTime:
    """A stage's figures: notebooks, summed seconds and their share, wall seconds (union of intervals) and share."""

    stage: str
    notebooks: int
    seconds: float
    share: float  # of the summed notebook seconds, 0-1
    wall_seconds: float | None  # seconds at least one of its notebooks ran; None when an interval is missing
    run_share: float | None  # wall_seconds over the run's span, 0-1


def _time(value: object) -> _dt.datetime | None:
    try:
        return _dt.datetime.fromisoformat(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):  # absent, not a string, or not ISO 8601
        return None


def read_executed(folder: Path | str) -> list[NotebookTime]:
    """The :class:`NotebookTime` of every executed notebook in ``folder``, by start time (then name).

    Raises:
        DataError: the folder holds no executed notebook (the message names the command that writes them).
    """
    from llmdisc.errors import DataError

    folder = Path(folder)
    try:
        records = json.loads((folder / "runs.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        records = {}
    found = []
    for path in sorted(folder.glob("*.ipynb")):
        try:
            papermill = json.loads(path.read_text(encoding="utf-8")).get("metadata", {}).get("papermill", {})
        except (OSError, ValueError):
            papermill = {}
        seconds = papermill.get("duration")
        start, end = _time(papermill.get("start_time")), _time(papermill.get("end_time"))
        if not isinstance(seconds, (int, float)):
            seconds, start, end = records.get(path.stem, {}).get("seconds"), None, None
        if not isinstance(seconds, (int, float)):
            continue
        found.append(NotebookTime(path.stem, path.stem[:2], float(seconds), start, end))
    if not found:
        raise DataError(f"{folder} holds no executed notebook with a recorded duration; fix: run the configuration "
                        "first (`llmdisc run --config configs/<name>.yaml`), or pass --dir")
    return sorted(found, key=lambda n: (n.start or _dt.datetime.max.replace(tzinfo=_dt.timezone.utc), n.run_id))


def _union_seconds(intervals: list[tuple[_dt.datetime, _dt.datetime]]) -> float:
    merged: list[list[_dt.datetime]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return float(sum((end - start).total_seconds() for start, end in merged))


def run_span(notebooks: list[NotebookTime]) -> float | None:
    """Seconds from the first recorded start to the last recorded end; None when no notebook has an interval."""
    timed = [n for n in notebooks if n.start and n.end]
    return (max(n.end for n in timed) - min(n.start for n in timed)).total_seconds() if timed else None


def stage_times(notebooks: list[NotebookTime]) -> list[StageTime]:
    """Per stage, in stage order, its :class:`StageTime`."""
    total = sum(n.seconds for n in notebooks) or 1.0
    span = run_span(notebooks)
    stages = []
    for stage in sorted({n.stage for n in notebooks}):
        members = [n for n in notebooks if n.stage == stage]
        seconds = sum(n.seconds for n in members)
        complete = all(n.start and n.end for n in members) and span
        wall = _union_seconds([(n.start, n.end) for n in members]) if complete else None
        stages.append(StageTime(stage, len(members), seconds, seconds / total, wall,
                                wall / span if wall is not None and span else None))
    return stages


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    minutes, rest = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min" if hours else f"{minutes} min {rest:02d} s" if minutes else f"{rest} s"


def least_span(notebooks: list[NotebookTime], workers: int) -> float:
    """Seconds no schedule of these notebooks on ``workers`` one-thread workers can beat: the longer of the longest
    notebook and the summed notebook time over the workers (at the same arithmetic, with no notebook split)."""
    return max(max(n.seconds for n in notebooks), sum(n.seconds for n in notebooks) / workers)


def format_report(notebooks: list[NotebookTime], workers: int | None = None) -> str:
    """The printed figures: the run's span and summed notebook time (with ``workers``, the least span this work
    allows: :func:`least_span`), a stage table, then a notebook table."""
    total = sum(n.seconds for n in notebooks)
    span = run_span(notebooks)
    timed = [n for n in notebooks if n.start and n.end]
    lines = [f"{len(notebooks)} notebooks; summed notebook time {_duration(total)} ({total:.0f} s)"]
    if span:
        first, last = min(n.start for n in timed), max(n.end for n in timed)
        lines.append(f"run span {_duration(span)} ({span:.0f} s), {first:%Y-%m-%d %H:%M:%S} to "
                     f"{last:%Y-%m-%d %H:%M:%S} UTC; summed notebook time / span = {total / span:.2f}")
    if workers:
        longest = max(notebooks, key=lambda n: n.seconds)
        lines.append(f"least span on {workers} one-thread worker(s): {_duration(least_span(notebooks, workers))} "
                     f"(longest notebook {longest.run_id} {_duration(longest.seconds)}; summed time / {workers} "
                     f"{_duration(total / workers)})")
    lines += ["", f"{'stage':<6}{'notebooks':>10}{'seconds':>10}{'share':>8}{'wall s':>9}{'of run':>8}"]
    for s in stage_times(notebooks):
        wall = f"{s.wall_seconds:9.0f}" if s.wall_seconds is not None else f"{'-':>9}"
        run_share = f"{s.run_share:8.1%}" if s.run_share is not None else f"{'-':>8}"
        lines.append(f"{s.stage:<6}{s.notebooks:>10}{s.seconds:>10.0f}{s.share:>8.1%}{wall}{run_share}")
    lines += ["", f"{'notebook':<56}{'start (UTC)':>12}{'seconds':>10}{'share':>8}"]
    for n in notebooks:
        start = f"{n.start:%H:%M:%S}" if n.start else "-"
        lines.append(f"{n.run_id[:55]:<56}{start:>12}{n.seconds:>10.0f}{n.seconds / (total or 1.0):>8.1%}")
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config-name", default="default",
                        help="configuration name: reads reports/executed/<name>/ (default default)")
    parser.add_argument("--dir", default=None, help="a folder of executed notebooks instead (with its runs.json)")
    parser.add_argument("--workers", type=int, default=None,
                        help="notebooks side by side: also print the least span the work allows (default: the "
                             "configuration's workers; none with --dir)")


def run(args: argparse.Namespace) -> int:
    """Print the figures; 2 (with the fix) when there is nothing to read."""
    from llmdisc.errors import DataError
    from llmdisc.paths import project_root

    folder = Path(args.dir) if args.dir else project_root() / "reports" / "executed" / args.config_name
    workers = getattr(args, "workers", None)
    config_path = project_root() / "configs" / f"{args.config_name}.yaml"
    if workers is None and not args.dir and config_path.is_file():
        from llmdisc.pipeline.config import load_config

        workers = load_config(config_path).workers
    if workers is not None and workers < 1:
        print(f"llmdisc bench stages: error: --workers {workers}; fix: pass 1 or more")
        return 2
    try:
        notebooks = read_executed(folder)
    except DataError as exc:
        print(f"llmdisc bench stages: error: {exc}")
        return 2
    print(f"executed notebooks: {folder}")
    print(format_report(notebooks, workers))
    return 0
