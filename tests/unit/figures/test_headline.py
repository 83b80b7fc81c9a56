"""The headline figure: the README's committed PNG is what the committed tables draw, and it shows the same
separations the results tables print."""

from __future__ import annotations

import shutil

import pandas as pd
from matplotlib.testing.compare import compare_images
from PIL import Image

from llmdisc.figures import headline
from llmdisc.figures.plots import save_figure
from llmdisc.paths import project_root
from llmdisc.scoring.readings import collect

TABLES = project_root() / "results" / "tables"
COMMITTED = project_root() / "figures" / "headline.png"


def test_the_committed_figure_is_what_the_committed_tables_draw(tmp_path):
    save_figure(headline.draw_headline(TABLES), "headline", tmp_path, dpi=headline.DPI)
    drawn = tmp_path / "headline.png"
    # about the README's width, and the same pixels (tolerance for anti-aliasing only)
    assert 850 <= Image.open(drawn).size[0] <= 900
    assert compare_images(str(COMMITTED), str(drawn), tol=2) is None, (
        "figures/headline.png differs from what results/tables draw: run notebook 07 (make reproduce)")


def test_every_marker_is_a_separation_the_results_tables_print():
    frame = headline.headline_frame(TABLES)
    cells = collect(TABLES)
    assert set(frame["instrument"]) <= set(headline.INSTRUMENTS)
    assert not frame.duplicated(["dataset", "group", "instrument"]).any()  # one marker per instrument and row
    for row in frame.itertuples():
        sep = cells[row.instrument][(row.dataset, row.group)].separation
        assert (row.d, row.direction) == (sep.d, sep.direction)
        if row.instrument != "c2st":
            assert (row.low, row.high) == (sep.low, sep.high) and row.n_real >= 10
    # both controls are in it for the sample instruments
    groups = set(frame.loc[frame["instrument"] == "joint", "group"])
    assert {"shuffled_columns", "real_vs_real"} <= groups


def test_a_changed_table_changes_the_figure(tmp_path):
    tables = tmp_path / "tables"
    shutil.copytree(TABLES, tables)
    joint = pd.read_csv(tables / "joint_cells.csv")
    joint.loc[joint["source"] == "tvae", "auc"] = 0.5
    joint.to_csv(tables / "joint_cells.csv", index=False)
    save_figure(headline.draw_headline(tables), "headline", tmp_path, dpi=headline.DPI)
    assert compare_images(str(COMMITTED), str(tmp_path / "headline.png"), tol=2) is not None
    assert "smollm2" in headline.sample_models(tables)


def test_an_empty_tables_folder_draws_a_note_not_an_error(tmp_path):
    save_figure(headline.draw_headline(tmp_path), "headline", tmp_path, dpi=headline.DPI)
    assert Image.open(tmp_path / "headline.png").size[0] <= 900
