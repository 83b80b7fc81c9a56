"""The papermill runner: executes notebooks, skips unchanged ones by hash, names failures, scrubs paths."""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path

import nbformat
import pytest

from llmdisc.errors import ConfigError
from llmdisc.pipeline.reports import find_leaks
from llmdisc.pipeline.runs import NotebookFailed, NotebookRun, run_plan
from llmdisc.pipeline.supplementary import render_html

pytestmark = pytest.mark.slow


def _notebook(path: Path, parameters: str, body: str) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "llmdisc", "display_name": "Python (llmdisc)", "language": "python"}
    params = nbformat.v4.new_code_cell(parameters)
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_code_cell(body)]
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)


@pytest.fixture()
def project(tmp_path, monkeypatch):
    monkeypatch.setenv("LLMDISC_ROOT", str(tmp_path))
    _notebook(tmp_path / "notebooks" / "a.ipynb", 'x: int = 1  # a number',
              "from llmdisc.paths import project_root\n"
              "root = project_root()\n"
              "print('writing under', root)\n"
              "(root / 'out').mkdir(exist_ok=True)\n"
              "(root / 'out' / 'a.txt').write_text(str(x * 2) + open(root / 'raw.txt').read())")
    _notebook(tmp_path / "notebooks" / "b.ipynb", 'factor: int = 3',
              "from llmdisc.paths import project_root\n"
              "root = project_root()\n"
              "value = int((root / 'out' / 'a.txt').read_text()[0])\n"
              "(root / 'out' / 'b.txt').write_text(str(value * factor))")
    _notebook(tmp_path / "notebooks" / "fail.ipynb", 'y: int = 0', "print('before')\n1 / y")
    (tmp_path / "raw.txt").write_text("r")
    return tmp_path


def _plan(x: int = 1) -> list[NotebookRun]:
    return [NotebookRun("a", "01", "notebooks/a.ipynb", {"x": x}, input_globs=["raw.txt"],
                        output_globs=["out/a.txt"]),
            NotebookRun("b", "02", "notebooks/b.ipynb", {"factor": 3}, depends_on=["a"],
                        output_globs=["out/b.txt"])]


def _statuses(outcomes):
    return {o["run_id"]: o["status"] for o in outcomes}


def test_runs_then_skips_then_reruns_what_changed(project):
    executed = project / "reports" / "executed" / "t"
    assert _statuses(run_plan(_plan(), executed, log=lambda s: None)) == {"a": "ran", "b": "ran"}
    assert (project / "out" / "b.txt").read_text() == "6"
    assert _statuses(run_plan(_plan(), executed, log=lambda s: None)) == {"a": "skipped", "b": "skipped"}
    # A changed parameter re-runs the notebook, and its changed output re-runs the one that reads it.
    assert _statuses(run_plan(_plan(x=4), executed, log=lambda s: None)) == {"a": "ran", "b": "ran"}
    assert (project / "out" / "b.txt").read_text() == "24"
    # A changed external input re-runs; same content again (new mtime, same hash) does not.
    (project / "raw.txt").write_text("s")
    assert _statuses(run_plan(_plan(x=4), executed, log=lambda s: None))["a"] == "ran"
    os.utime(project / "raw.txt", (1, 1))
    assert _statuses(run_plan(_plan(x=4), executed, log=lambda s: None)) == {"a": "skipped", "b": "skipped"}
    # A deleted or edited output is noticed.
    (project / "out" / "b.txt").write_text("tampered")
    assert _statuses(run_plan(_plan(x=4), executed, log=lambda s: None)) == {"a": "skipped", "b": "ran"}
    # force re-runs everything.
    assert _statuses(run_plan(_plan(x=4), executed, force=True, log=lambda s: None)) == {"a": "ran", "b": "ran"}
    records = json.loads((executed / "runs.json").read_text())
    assert records["a"]["parameters"] == {"x": 4}


def test_executed_copies_carry_no_absolute_path_and_render_to_html(project):
    executed = project / "reports" / "executed" / "t"
    run_plan(_plan(), executed, log=lambda s: None)
    text = (executed / "a.ipynb").read_text()
    assert "writing under <project>" in text
    assert find_leaks(text) == []
    index = render_html("t")
    page = index.read_text()
    assert 'href="t/a.html"' in page and 'href="t/b.html"' in page
    assert find_leaks((index.parent / "t" / "a.html").read_text()) == []


def test_failure_names_notebook_cell_and_error_and_keeps_the_copy(project):
    executed = project / "reports" / "executed" / "t"
    plan = [NotebookRun("fail", "01", "notebooks/fail.ipynb", {"y": 0})]
    with pytest.raises(NotebookFailed) as info:
        run_plan(plan, executed, log=lambda s: None)
    message = str(info.value)
    assert "notebooks/fail.ipynb failed in cell" in message
    assert "ZeroDivisionError" in message
    assert (executed / "fail.ipynb").exists()
    assert json.loads((executed / "runs.json").read_text())["fail"]["status"] == "failed"


def test_unknown_parameter_is_refused_before_anything_runs(project):
    plan = [NotebookRun("a", "01", "notebooks/a.ipynb", {"x": 1, "z": 2})]
    with pytest.raises(ConfigError, match=r"has no parameter\(s\) \['z'\]; it declares \['x'\]"):
        run_plan(plan, project / "reports" / "executed" / "t", log=lambda s: None)
    assert not (project / "out").exists()


def test_kernel_channels_carry_curve_keys_and_no_plaintext_warning(project, capfd):
    # The executed cells hold the data; the kernel's loopback channels must not be plain text.
    _notebook(project / "notebooks" / "enc.ipynb", "z: int = 0",
              "from ipykernel.connect import get_connection_info\n"
              "from llmdisc.paths import project_root\n"
              "info = get_connection_info(unpack=True)\n"
              "(project_root() / 'enc.txt').write_text(str(bool(info.get('curve_secretkey'))))")
    run_plan([NotebookRun("enc", "01", "notebooks/enc.ipynb", {"z": 0})], project / "reports" / "executed" / "t",
             log=lambda s: None)
    assert (project / "enc.txt").read_text() == "True"
    assert "without encryption" not in capfd.readouterr().err


def _timed_notebook(project: Path, name: str, body: str = "") -> None:
    """A notebook that records when it started and ended, and the thread count its kernel was given."""
    _notebook(project / "notebooks" / f"{name}.ipynb", "pause: float = 0.0",
              "import json, os, time\n"
              "from llmdisc.paths import project_root\n"
              "start = time.time()\n"
              "time.sleep(pause)\n" + body +
              f"(project_root() / 'out').mkdir(exist_ok=True)\n"
              f"(project_root() / 'out' / '{name}.json').write_text(json.dumps({{'start': start, 'end': time.time(), "
              "'threads': os.environ.get('LLMDISC_LLM_THREADS')}))")


def _interval(project: Path, name: str) -> dict:
    return json.loads((project / "out" / f"{name}.json").read_text())


def test_two_workers_run_ready_notebooks_side_by_side_and_wait_for_dependencies(project, monkeypatch):
    monkeypatch.delenv("LLMDISC_LLM_THREADS", raising=False)
    for name in ("left", "right", "after"):
        _timed_notebook(project, name)
    plan = [NotebookRun("left", "02", "notebooks/left.ipynb", {"pause": 4.0}, output_globs=["out/left.json"]),
            NotebookRun("right", "02", "notebooks/right.ipynb", {"pause": 4.0}, output_globs=["out/right.json"]),
            NotebookRun("after", "07", "notebooks/after.ipynb", {"pause": 0.0}, depends_on=["left", "right"])]
    lines: list[str] = []
    outcomes = run_plan(plan, project / "reports" / "executed" / "t", workers=2, log=lines.append)
    assert [o["run_id"] for o in outcomes] == ["left", "right", "after"]
    assert {o["status"] for o in outcomes} == {"ran"}
    left, right, after = (_interval(project, n) for n in ("left", "right", "after"))
    assert left["start"] < right["end"] and right["start"] < left["end"]  # they overlapped
    assert after["start"] >= max(left["end"], right["end"])
    assert {_interval(project, n)["threads"] for n in ("left", "right", "after")} == {"1"}
    assert "LLMDISC_LLM_THREADS" not in os.environ  # set for the kernels only, then taken back
    # a second call skips everything: the records were written for every run
    again = run_plan(plan, project / "reports" / "executed" / "t", workers=2, log=lambda s: None)
    assert {o["status"] for o in again} == {"skipped"}


def test_a_failure_beside_a_running_notebook_lets_it_finish_and_starts_nothing_new(project):
    _timed_notebook(project, "slow")
    _timed_notebook(project, "later")
    plan = [NotebookRun("slow", "02", "notebooks/slow.ipynb", {"pause": 4.0}, output_globs=["out/slow.json"]),
            NotebookRun("fail", "02", "notebooks/fail.ipynb", {"y": 0}),
            NotebookRun("later", "07", "notebooks/later.ipynb", {"pause": 0.0}, depends_on=["slow"])]
    executed = project / "reports" / "executed" / "t"
    with pytest.raises(NotebookFailed, match="notebooks/fail.ipynb failed in cell"):
        run_plan(plan, executed, workers=2, log=lambda s: None)
    records = json.loads((executed / "runs.json").read_text())
    assert records["fail"]["status"] == "failed"
    assert records["slow"]["status"] == "ok"  # the run beside the failure was finished and recorded
    assert "later" not in records and not (project / "out" / "later.json").exists()


def test_workers_below_one_and_dependency_cycles_are_refused(project):
    with pytest.raises(ConfigError, match="workers=0 must be at least 1"):
        run_plan(_plan(), project / "reports" / "executed" / "t", workers=0, log=lambda s: None)
    cycle = [NotebookRun("a", "01", "notebooks/a.ipynb", {"x": 1}, depends_on=["b"]),
             NotebookRun("b", "02", "notebooks/b.ipynb", {"factor": 3}, depends_on=["a"])]
    with pytest.raises(ConfigError, match="wait on each other"):
        run_plan(cycle, project / "reports" / "executed" / "t", workers=2, log=lambda s: None)


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"), reason="the pins apply on x86-64 only")
def test_kernels_start_with_the_pinned_instruction_set_and_their_manifests_record_it(project, monkeypatch):
    for name in ("LLMDISC_KERNEL_PINS", "ATEN_CPU_CAPABILITY"):
        monkeypatch.delenv(name, raising=False)
    _notebook(project / "notebooks" / "isa.ipynb", "z: int = 0",
              "import torch\n"
              "from llmdisc.manifest import write_manifest\n"
              "from llmdisc.paths import project_root\n"
              "write_manifest(project_root() / 'out', 'isa')")
    run_plan([NotebookRun("isa", "01", "notebooks/isa.ipynb", {"z": 0})], project / "reports" / "executed" / "t",
             log=lambda s: None)
    kernels = json.loads((project / "out" / "manifest.json").read_text())["kernels"]
    assert kernels["mode"] == "avx2" and kernels["variables"]["ATEN_CPU_CAPABILITY"] == "avx2"
    if kernels["torch_cpu_capability"] != "DEFAULT":  # a CPU without AVX2 runs torch's scalar kernels
        assert kernels["torch_cpu_capability"] == "AVX2" and kernels["pinned"]
    assert "ATEN_CPU_CAPABILITY" not in os.environ  # set for the kernels only, then taken back
