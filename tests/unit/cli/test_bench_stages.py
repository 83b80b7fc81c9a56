"""``llmdisc bench stages`` on executed notebooks written here: per notebook and per stage, seconds and shares."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from llmdisc.cli.benchmarks.stages import read_executed, run, run_span, stage_times

T0 = "2026-12-06T10:00:00+00:00"


def _notebook(folder: Path, run_id: str, start: str | None, end: str | None, duration: float | None) -> None:
    papermill = {"start_time": start, "end_time": end, "duration": duration, "parameters": {}}
    cells = [{"cell_type": "code", "source": "1", "metadata": {}, "outputs": [], "execution_count": 1}]
    content = {"nbformat": 4, "nbformat_minor": 5, "cells": cells, "metadata": {"papermill": papermill}}
    (folder / f"{run_id}.ipynb").write_text(json.dumps(content), encoding="utf-8")


def _time(minutes: float) -> str:
    hours, rest = divmod(minutes, 60)
    return f"2026-12-06T{10 + int(hours):02d}:{int(rest):02d}:{round(rest % 1 * 60):02d}+00:00"


@pytest.fixture
def executed(tmp_path: Path) -> Path:
    # two workers: Adult's 02 (0-10 min) beside Census's 02 (0-30 min); 04 of Adult (10-20) beside Census's 02;
    # 07 after everything (30-32); 09 killed before papermill wrote its times: its runs.json seconds count
    _notebook(tmp_path, "02_synthesis__adult", _time(0), _time(10), 600.0)
    _notebook(tmp_path, "02_synthesis__census-codes", _time(0), _time(30), 1800.0)
    _notebook(tmp_path, "04_llm_trials__adult__local", _time(10), _time(20), 600.0)
    _notebook(tmp_path, "07_figures", _time(30), _time(32), 120.0)
    _notebook(tmp_path, "09_likelihood__adult", None, None, None)
    (tmp_path / "runs.json").write_text(json.dumps({"09_likelihood__adult": {"seconds": 300.0}}), encoding="utf-8")
    (tmp_path / "notes.txt").write_text("not a notebook", encoding="utf-8")
    return tmp_path


def test_each_notebook_is_read_with_its_seconds_and_interval(executed: Path) -> None:
    notebooks = read_executed(executed)
    assert [n.run_id for n in notebooks] == ["02_synthesis__adult", "02_synthesis__census-codes",
                                             "04_llm_trials__adult__local", "07_figures", "09_likelihood__adult"]
    late = notebooks[-1]
    assert (late.stage, late.seconds, late.start, late.end) == ("09", 300.0, None, None)
    assert run_span(notebooks) == 32 * 60  # first start to last end


def test_stage_shares_of_notebook_time_and_of_the_run(executed: Path) -> None:
    stages = {s.stage: s for s in stage_times(read_executed(executed))}
    total = 600 + 1800 + 600 + 120 + 300
    assert stages["02"].notebooks == 2 and stages["02"].seconds == 2400.0
    assert stages["02"].share == pytest.approx(2400 / total)
    assert sum(s.share for s in stages.values()) == pytest.approx(1.0)
    # side by side: the stage is present for 30 of the run's 32 minutes, not for its 40 summed minutes
    assert stages["02"].wall_seconds == 1800.0 and stages["02"].run_share == pytest.approx(30 / 32)
    assert stages["04"].wall_seconds == 600.0 and stages["07"].run_share == pytest.approx(2 / 32)
    assert stages["09"].wall_seconds is None and stages["09"].run_share is None  # no interval recorded


def test_the_bench_prints_the_figures_and_names_the_fix_when_there_is_no_run(executed: Path, tmp_path: Path,
                                                                            capsys: pytest.CaptureFixture) -> None:
    assert run(argparse.Namespace(dir=str(executed), config_name="default")) == 0
    out = capsys.readouterr().out
    assert "run span 32 min 00 s (1920 s)" in out and "summed notebook time / span = 1.78" in out
    assert "02_synthesis__census-codes" in out and "52.6%" in out  # 1,800 of 3,420 notebook seconds
    empty = tmp_path / "empty"
    empty.mkdir()
    assert run(argparse.Namespace(dir=str(empty), config_name="default")) == 2
    assert "llmdisc run --config" in capsys.readouterr().out


def test_the_least_span_is_the_longest_notebook_or_the_summed_time_over_the_workers(executed: Path,
                                                                                    capsys: pytest.CaptureFixture) -> None:
    from llmdisc.cli.benchmarks.stages import least_span

    notebooks = read_executed(executed)  # 600 + 1800 + 600 + 120 + 300 = 3,420 s; longest 1,800
    assert least_span(notebooks, 1) == 3420.0
    assert least_span(notebooks, 2) == 1800.0  # the longest notebook: 1,710 s a worker would be less
    assert least_span(notebooks, 4) == 1800.0
    notebooks.append(notebooks[1])
    assert least_span(notebooks, 2) == 2610.0  # now the summed time: 5,220 / 2
    assert run(argparse.Namespace(dir=str(executed), config_name="default", workers=2)) == 0
    assert "least span on 2 one-thread worker(s): 30 min 00 s (longest notebook 02_synthesis__census-codes" \
        in capsys.readouterr().out
    assert run(argparse.Namespace(dir=str(executed), config_name="default", workers=0)) == 2
    assert "fix: pass 1 or more" in capsys.readouterr().out
