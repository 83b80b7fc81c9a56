"""The paper's reference folder: where it is found, its pins, its releases, and the message when it is absent."""

from __future__ import annotations

import re
import shutil
import socket
from pathlib import Path

import pandas as pd
import pytest

from llmdisc.cli.main import main as cli_main
from llmdisc.data import acs, load_dataset
from llmdisc.data import reference as ref
from llmdisc.errors import ConfigError, DataError, LlmdiscWarning, ReferenceMissingError
from llmdisc.paths import reference_dir, reference_target_dir, relative_to_root, require_reference

FIX = "run `llmdisc data fetch-reference` (or `make reference`), or set LLMDISC_REFERENCE"


@pytest.fixture
def nowhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No reference anywhere: LLMDISC_REFERENCE and LLMDISC_SHARED name empty folders, the root is empty, and the
    ACS download goes to a closed port (no network)."""
    for name in ("root", "empty_reference", "empty_shared"):
        (tmp_path / name).mkdir()
    monkeypatch.setenv("LLMDISC_ROOT", str(tmp_path / "root"))
    monkeypatch.setenv("LLMDISC_REFERENCE", str(tmp_path / "empty_reference"))
    monkeypatch.setenv("LLMDISC_SHARED", str(tmp_path / "empty_shared"))
    monkeypatch.delenv(acs.CENSUS_CSV_ENV, raising=False)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv(acs.ACS_URL_ENV, f"http://127.0.0.1:{port}/pums")
    return tmp_path


def _copy_pins(reference: Path, dest: Path, only: list[str]) -> Path:
    for pin in ref.pinned_files(only):
        (dest / pin.path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(reference / pin.path, dest / pin.path)
    return dest


# --- where the folder is found ---------------------------------------------------------------------------


def test_lookup_order_environment_then_fetched_then_shared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, shared, elsewhere = tmp_path / "root", tmp_path / "shared", tmp_path / "elsewhere"
    for folder in (root / "data" / "reference", shared / "reference", elsewhere):
        folder.mkdir(parents=True)
    monkeypatch.setenv("LLMDISC_ROOT", str(root))
    monkeypatch.setenv("LLMDISC_SHARED", str(shared))
    monkeypatch.delenv("LLMDISC_REFERENCE", raising=False)
    assert reference_dir() is None  # empty folders do not count
    (shared / "reference" / "a.csv").write_text("x\n")
    assert reference_dir() == (shared / "reference").resolve()
    (root / "data" / "reference" / "a.csv").write_text("x\n")
    assert reference_dir() == (root / "data" / "reference").resolve()  # the fetched folder wins over ../shared
    assert reference_target_dir() == root / "data" / "reference"
    monkeypatch.setenv("LLMDISC_REFERENCE", str(elsewhere))
    assert reference_dir() is None  # when set, the variable is the only place looked at (here: empty)
    (elsewhere / "a.csv").write_text("x\n")
    assert reference_dir() == elsewhere.resolve() and reference_target_dir() == elsewhere.resolve()
    assert relative_to_root(elsewhere / "a.csv") == "$LLMDISC_REFERENCE/a.csv"  # no machine path in products


def test_require_reference_names_the_fix(nowhere: Path) -> None:
    with pytest.raises(ReferenceMissingError, match=re.escape(FIX)) as info:
        require_reference("results", what="the paper's per-trial records")
    assert str(info.value).startswith("the paper's per-trial records: the paper's reference data is not here")
    (nowhere / "empty_reference" / "data").mkdir()
    with pytest.raises(ReferenceMissingError, match=r"results is missing from the reference folder .*fetches only"):
        require_reference("results")


# --- no reference, no network: one clear message ----------------------------------------------------------


def test_census_without_reference_or_network_names_fetch_reference(nowhere: Path) -> None:
    with pytest.warns(LlmdiscWarning, match="not the paper's rows"), pytest.raises(ReferenceMissingError) as info:
        load_dataset("census", states=["WY"])
    message = str(info.value)
    assert "the paper's reference data is not here" in message and FIX in message
    assert "could not be downloaded" in message and "ConnectionError" in message
    assert "LLMDISC_CENSUS_CSV=PATH" in message  # the other ways stay named


def test_paper_records_and_releases_without_reference_name_fetch_reference(nowhere: Path) -> None:
    from llmdisc.scoring.reference import import_paper_trials, reference_results_dir

    with pytest.raises(ReferenceMissingError, match=re.escape(FIX)):
        import_paper_trials(reference_results_dir())
    with pytest.raises(ReferenceMissingError, match=re.escape(FIX)):
        ref.load_paper_release("ctgan")
    with pytest.raises(ReferenceMissingError, match=re.escape(FIX)):
        ref.check_reference()


def test_cli_without_reference_prints_one_line_not_a_traceback(nowhere: Path, capsys: pytest.CaptureFixture) -> None:
    assert cli_main(["data", "prepare", "--dataset", "census"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("llmdisc data: error: the paper's reference data is not here")
    assert "`llmdisc data fetch-reference`" in err and "Traceback" not in err
    assert cli_main(["data", "fetch-reference", "--check"]) == 2
    assert "`llmdisc data fetch-reference`" in capsys.readouterr().err


# --- the pins -------------------------------------------------------------------------------------------


def test_pins_are_the_verbatim_repository_files_only() -> None:
    pins = ref.pinned_files()
    paths = [p.path for p in pins]
    assert len(pins) == 59 and paths == sorted(paths) and len(set(paths)) == 59
    assert not [p for p in paths if p.startswith("derived/") or p.endswith(".md")]  # not in the repository
    assert sum(p.path.startswith("results/") and p.path.rsplit("/", 1)[1].startswith("llm_results_")
               for p in pins) == 17
    assert sum(p.path.startswith("results/human/") for p in pins) == 33
    assert ref.pin_of("data/census/real/census.csv").size == 941_208
    assert all(re.fullmatch(r"[0-9a-f]{64}", p.sha256) and p.size > 0 for p in pins)
    assert ref.file_url("http://h/", "data/census/real/census.csv") == (
        "http://h/SlokomManel/LLM-as-a-Discriminator/360374160f78501b91cde7953ac7e6824b6fad88/"
        "data/census/real/census.csv")
    assert [p.path for p in ref.pinned_files(["data/census/synthetic/*"])] == [
        f"data/census/synthetic/{s}/synthetic.csv" for s in ("ctgan", "gaussian_copula", "tvae")]
    with pytest.raises(ConfigError, match="match no pinned reference file"):
        ref.pinned_files(["nothing/*"])


def test_reference_copy_matches_every_pin(reference: Path) -> None:
    assert ref.check_reference(reference) == []


# --- the paper's Census releases: header checks -----------------------------------------------------------


def test_release_loads_and_a_changed_header_or_extra_column_is_named(
    reference: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _copy_pins(reference, tmp_path / "ref", ["data/census/*"])
    monkeypatch.setenv("LLMDISC_REFERENCE", str(folder))
    release = ref.load_paper_release("ctgan")
    assert release.shape == (32_561, 11) and tuple(release.columns) == acs.CENSUS_COLUMNS
    assert ref.load_paper_census().shape == (32_561, 11)
    path = folder / "data/census/synthetic/ctgan/synthetic.csv"
    original = path.read_text()
    path.write_text(original.replace("hours_per_week", "hours", 1))
    with pytest.raises(DataError) as info:
        ref.load_paper_release("ctgan")
    message = str(info.value)
    assert "the paper's ctgan release" in message and "missing ['hours_per_week'], extra ['hours']" in message
    assert "fix: restore it with `llmdisc data fetch-reference`" in message
    pd.read_csv(reference / "data/census/synthetic/ctgan/synthetic.csv").assign(source=1).to_csv(path, index=False)
    with pytest.raises(DataError, match=re.escape("missing [], extra ['source']")):
        ref.load_paper_release("ctgan")
    header, rest = original.split("\n", 1)
    columns = header.split(",")
    path.write_text(",".join([columns[1], columns[0], *columns[2:]]) + "\n" + rest)
    with pytest.raises(DataError, match=re.escape("(same names, other order)")):
        ref.load_paper_release("ctgan")
    path.write_text(original.replace("\n4", "\n5", 1))  # one value edited, header intact: loads, with a warning
    with pytest.warns(LlmdiscWarning, match="differs from the paper's file"):
        ref.load_paper_release("ctgan")
    with pytest.raises(ConfigError, match="unknown paper release 'copula'"):
        ref.load_paper_release("copula")
