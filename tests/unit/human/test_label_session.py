"""The labelling protocol (llmdisc.human.label_app.session), the ``llmdisc label`` command line, and the page in
Streamlit's own script runner (AppTest: the real app script, executed in-process)."""

from __future__ import annotations

import argparse
import html.parser
import json
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from llmdisc.discrimination.metadata import metadata_block
from llmdisc.discrimination.prompts import render_table
from llmdisc.discrimination.samples import build_trial_queue
from llmdisc.errors import ConfigError, DataError
from llmdisc.human.label_app import session as protocol
from llmdisc.human.label_app import table_view
from llmdisc.human.label_app.schema import COLUMNS, PAPER_COLUMNS


def _tables(n: int = 50) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A real and a synthetic table that can be told apart by their ``origin`` column."""
    rng = np.random.default_rng(7)
    real = pd.DataFrame({"age": rng.integers(18, 90, n), "job": rng.choice(["a", "b", "c"], n),
                         "origin": "r"})
    synthetic = real.assign(origin="s", age=rng.integers(18, 90, n))
    return real, synthetic


def _config(**changes: object) -> protocol.SessionConfig:
    values = dict(annotator_id="A1", dataset="adult", synthesizer="ctgan", n_pairs=4, seed=3, n_rows=5)
    values.update(changes)
    return protocol.SessionConfig(**values)  # type: ignore[arg-type]


class TestPlan:
    @pytest.mark.parametrize("n_pairs", [2, 4, 10, 20])
    def test_exactly_half_of_each_label(self, n_pairs: int) -> None:
        plan = protocol.plan_session(_config(n_pairs=n_pairs))
        labels = [p.true_label for p in plan]
        assert labels.count("REAL") == labels.count("SYNTHETIC") == n_pairs // 2
        assert [p.pair_id for p in plan] == list(range(n_pairs))

    def test_seeded_order_repeats_and_varies_with_the_seed(self) -> None:
        first = protocol.plan_session(_config(n_pairs=10, seed=1))
        assert protocol.plan_session(_config(n_pairs=10, seed=1)) == first
        orders = {tuple(p.true_label for p in protocol.plan_session(_config(n_pairs=10, seed=s)))
                  for s in range(8)}
        assert len(orders) > 1, "the label order should depend on the seed"

    def test_annotators_with_the_same_seed_see_the_same_samples(self) -> None:
        first, second = (protocol.plan_session(_config(annotator_id=a)) for a in ("A1", "B2"))
        assert first == second

    def test_sample_seeds_are_those_of_the_llm_trials(self) -> None:
        plan = protocol.plan_session(_config(n_pairs=6, seed=11))
        queue = build_trial_queue(["adult"], ["ctgan"], ["C1"], 3, run_seed=11)
        llm = {(t.true_label, t.index): t.sample_seed for t in queue}
        assert all(llm[(p.true_label, p.label_index)] == p.sample_seed for p in plan)
        assert len({p.sample_seed for p in plan}) == 6

    @pytest.mark.parametrize("n_pairs", [3, 0, 1])
    def test_odd_or_tiny_sessions_are_refused(self, n_pairs: int) -> None:
        with pytest.raises(ConfigError, match=r"needs an even number of pairs .*fix: use e.g. --pairs 10"):
            _config(n_pairs=n_pairs)

    def test_bad_options_name_the_fix(self) -> None:
        with pytest.raises(ConfigError, match=r"annotator_id='a b/c' is not usable as a file name; fix"):
            _config(annotator_id="a b/c")
        with pytest.raises(ConfigError, match=r"synthesizer='gan' is not known; fix: use one of"):
            _config(synthesizer="gan")
        with pytest.raises(ConfigError, match=r"metadata_source='all' is not known"):
            _config(metadata_source="all")

    def test_session_id_is_stable_and_names_the_plan(self) -> None:
        sid = _config().session_id
        assert sid == _config().session_id
        assert re.fullmatch(r"adult_ctgan_s3_[0-9a-f]{8}", sid)
        assert _config(seed=4).session_id != sid and _config(n_pairs=6).session_id != sid
        assert _config(session="mine").session_id == "mine"

    def test_steps_ask_c1_then_c2_for_each_pair(self) -> None:
        steps = protocol.session_steps(protocol.plan_session(_config()))
        assert [(p.pair_id, c) for p, c in steps] == [(i, c) for i in range(4) for c in ("C1", "C2")]


class TestSamples:
    def test_sample_comes_from_the_table_of_its_label_and_repeats(self) -> None:
        real, synthetic = _tables()
        for pair in protocol.plan_session(_config()):
            sample, row_ids = protocol.draw_pair_sample(pair, real, synthetic, 5)
            source = real if pair.true_label == "REAL" else synthetic
            assert set(sample["origin"]) == {"r" if pair.true_label == "REAL" else "s"}
            pd.testing.assert_frame_equal(sample, source.iloc[row_ids].reset_index(drop=True))
            again, same_ids = protocol.draw_pair_sample(pair, real, synthetic, 5)
            assert same_ids == row_ids and again.equals(sample)

    def test_too_small_table_is_a_clear_error(self) -> None:
        real, synthetic = _tables(3)
        pair = protocol.plan_session(_config())[0]
        with pytest.raises(DataError, match="fewer than the 5 rows"):
            protocol.draw_pair_sample(pair, real, synthetic, 5)

    @pytest.mark.parametrize(("source", "label", "kind"), [
        ("source", "REAL", "real"), ("source", "SYNTHETIC", "synthetic"), ("real", "SYNTHETIC", "real"),
        ("real", "REAL", "real"), ("sample", "SYNTHETIC", "sample")])
    def test_metadata_source_semantics(self, source: str, label: str, kind: str) -> None:
        assert protocol.metadata_table_kind(source, label) == kind


class TestAnswers:
    @pytest.mark.parametrize(("verdict", "confidence", "expected"), [
        (None, None, ["Choose a verdict", "Set your confidence"]),
        ("REAL", None, ["Set your confidence"]),
        (None, 50, ["Choose a verdict"]),
        ("SYNTHETIC", 101, ["Confidence 101 is outside the range 0–100; fix: type a whole number"]),
        ("SYNTHETIC", 150, ["Confidence 150 is outside the range 0–100; fix: type a whole number"]),
        ("SYNTHETIC", -1, ["Confidence -1 is outside the range 0–100; fix"]),
        ("SYNTHETIC", 50.5, ["Confidence 50.5 is not a whole number; fix: type a whole number from 0"]),
        ("maybe", 10, ["Choose a verdict"]),
        ("REAL", 0, []), ("SYNTHETIC", 100, []),
    ])
    def test_both_verdict_and_confidence_are_required(self, verdict: object, confidence: object,
                                                      expected: list[str]) -> None:
        problems = protocol.check_answer(verdict, confidence)  # type: ignore[arg-type]
        assert len(problems) == len(expected)
        for problem, start in zip(problems, expected):
            assert start in problem

    def test_record_has_every_column_and_recomputes_correctness(self) -> None:
        config = _config(metadata_source="source")
        pair = protocol.plan_session(config)[0]
        wrong = "SYNTHETIC" if pair.true_label == "REAL" else "REAL"
        record = protocol.build_record(config, pair, "C2", [4, 1, 2], wrong, 70, "  odd ages ", 12.34567,
                                       timestamp="t")
        assert list(record) == list(COLUMNS)
        assert record["correct"] is False and record["confidence"] == 70 and record["notes"] == "odd ages"
        assert record["row_ids"] == "[4, 1, 2]" and record["n_rows_shown"] == 3
        assert record["sample_seed"] == pair.sample_seed and record["metadata_source"] == "source"
        assert record["session_id"] == config.session_id and record["elapsed_seconds"] == 12.346

    def test_incomplete_answer_is_never_built(self) -> None:
        config = _config()
        pair = protocol.plan_session(config)[0]
        with pytest.raises(ConfigError, match="Set your confidence"):
            protocol.build_record(config, pair, "C1", [1], "REAL", None, "", 1.0)
        with pytest.raises(ConfigError, match="condition='C3'; fix: use C1 or C2"):
            protocol.build_record(config, pair, "C3", [1], "REAL", 5, "", 1.0)


class TestFileAndResume:
    def _answer(self, config: protocol.SessionConfig, path: Path, steps: int) -> None:
        for pair, condition in protocol.session_steps(protocol.plan_session(config))[:steps]:
            protocol.append_answer(path, protocol.build_record(config, pair, condition, [0, 1], "REAL", 60,
                                                               "", 2.0))

    def test_each_answer_is_on_disk_when_append_returns(self, tmp_path: Path) -> None:
        config = _config()
        path = protocol.session_path(config, tmp_path)
        assert path == tmp_path / "A1" / f"{config.session_id}.csv"
        self._answer(config, path, 3)
        lines = path.read_text(encoding="utf-8").splitlines()
        assert lines[0] == ",".join(COLUMNS) and len(lines) == 4
        answers = protocol.read_session(path)
        assert len(answers) == 3 and list(answers["condition"]) == ["C1", "C2", "C1"]
        assert json.loads(answers["row_ids"].iloc[0]) == [0, 1]

    def test_resume_at_first_unanswered_step_and_finish(self, tmp_path: Path) -> None:
        config = _config()
        plan = protocol.plan_session(config)
        path = protocol.session_path(config, tmp_path)
        assert protocol.resume_index(config, plan, protocol.read_session(path)) == 0
        self._answer(config, path, 3)
        answers = protocol.read_session(path)
        assert protocol.resume_index(config, plan, answers) == 3
        assert protocol.is_answered(answers, plan[1], "C1")
        assert not protocol.is_answered(answers, plan[1], "C2")
        path.unlink()
        self._answer(config, path, 8)
        assert protocol.resume_index(config, plan, protocol.read_session(path)) == 8

    def test_a_crash_mid_write_loses_only_the_partial_line(self, tmp_path: Path) -> None:
        config = _config()
        path = protocol.session_path(config, tmp_path)
        self._answer(config, path, 2)
        with open(path, "a", encoding="utf-8") as fh:
            fh.write("A1,half-a-line")
        assert len(protocol.read_session(path)) == 2
        plan = protocol.plan_session(config)
        record = protocol.build_record(config, plan[1], "C1", [3], "SYNTHETIC", 5, "", 1.0)
        protocol.append_answer(path, record)
        answers = protocol.read_session(path)
        assert len(answers) == 3 and "half-a-line" not in path.read_text(encoding="utf-8")

    def test_a_file_of_another_plan_is_not_resumed(self, tmp_path: Path) -> None:
        other = _config(seed=99, session="shared")
        path = protocol.session_path(other, tmp_path)
        self._answer(other, path, 2)
        mine = _config(session="shared")
        with pytest.raises(DataError, match=r"line 2 of session shared .* does not match this session's"):
            protocol.resume_index(mine, protocol.plan_session(mine), protocol.read_session(path))

    def test_records_with_wrong_columns_are_refused(self, tmp_path: Path) -> None:
        with pytest.raises(DataError, match="expected .*fix: build it with llmdisc.human.label_app.session"):
            protocol.append_answer(tmp_path / "x.csv", {"annotator_id": "A1"})
        (tmp_path / "old.csv").write_text(",".join(PAPER_COLUMNS) + "\n", encoding="utf-8")
        with pytest.raises(DataError, match=r"old.csv: session file lacks columns \['sample_seed'"):
            protocol.read_session(tmp_path / "old.csv")

    def test_summary_per_condition(self, tmp_path: Path) -> None:
        config = _config()
        path = protocol.session_path(config, tmp_path)
        self._answer(config, path, 8)  # always REAL: p_REAL 1, p_SYN 0, DRS 0, accuracy 0.5
        summary = protocol.session_summary(protocol.read_session(path)).set_index("condition")
        assert list(summary.index) == ["C1", "C2"]
        assert summary.loc["C1", "n"] == 4 and summary.loc["C1", "accuracy"] == 0.5
        assert summary.loc["C2", "p_real"] == 1.0 and summary.loc["C2", "drs"] == 0.0
        assert summary.loc["C2", "mean_confidence"] == 60.0


class TestCommand:
    def _args(self, **changes: object) -> argparse.Namespace:
        from llmdisc.cli.main import build_parser

        argv = ["label", "--annotator", "A1", "--dataset", "adult", "--synthesizer", "tvae", "--pairs", "4",
                "--port", "8765", "--real", "r.csv"]
        return build_parser().parse_args(argv + [str(x) for kv in changes.items() for x in kv])

    def test_streamlit_serves_on_loopback_headless_with_the_session_options(self) -> None:
        from llmdisc.cli.commands.label import streamlit_command

        command = streamlit_command(self._args())
        assert command[:4] == [sys.executable, "-m", "streamlit", "run"]
        assert command[4].endswith("label_app/app.py")
        text = " ".join(command)
        for fragment in ("--server.address 127.0.0.1", "--server.port 8765", "--server.headless true",
                         "--browser.gatherUsageStats false",
                         "-- --annotator A1 --dataset adult --synthesizer tvae --pairs 4 --seed 0 "
                         "--metadata-source real --n-rows 20"):
            assert fragment in text
        assert command[command.index("--real") + 1] == str(Path("r.csv").resolve())

    def test_bad_session_options_fail_before_the_server_starts(self) -> None:
        from llmdisc.cli.commands.label import streamlit_command

        with pytest.raises(ConfigError, match="even number of pairs"):
            streamlit_command(self._args(**{"--pairs": 5}))


    def test_missing_or_small_tables_are_reported_before_serving(self, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
        from llmdisc.cli.commands.label import check_tables
        from llmdisc.cli.main import main

        real, synthetic = _tables(30)
        real.to_csv(tmp_path / "real.csv", index=False)
        synthetic.to_parquet(tmp_path / "syn.parquet")
        args = self._args(**{"--real": tmp_path / "real.csv", "--synthetic": tmp_path / "syn.parquet",
                             "--n-rows": 20})
        assert check_tables(args) == (30, 30)
        with pytest.raises(DataError, match="the real table has 30 rows, fewer than --n-rows 40"):
            check_tables(self._args(**{"--real": tmp_path / "real.csv",
                                       "--synthetic": tmp_path / "syn.parquet", "--n-rows": 40}))
        status = main(["label", "--annotator", "A1", "--dataset", "adult", "--synthesizer", "ctgan",
                       "--real", str(tmp_path / "nope.csv"), "--synthetic", str(tmp_path / "syn.parquet")])
        assert status == 2
        assert "table file 'nope.csv' does not exist; fix: pass an existing" in capsys.readouterr().err


def _markdown_cells(markdown: str) -> list[list[str]]:
    """Cells of a tabulate pipe table, header row first, cut at the column widths its rule line gives
    (so a ``|`` inside a value does not split it); stripped of their padding."""
    header, rule, *rows = markdown.split("\n")
    widths = [len(part) for part in rule[1:-1].split("|")]
    table = []
    for line in [header, *rows]:
        cells, start = [], 1
        for width in widths:
            assert line[start - 1] == "|", f"not a cell boundary at {start - 1} of {line!r}"
            cells.append(line[start:start + width].strip())
            start += width + 1
        table.append(cells)
    return table


class _CellTexts(html.parser.HTMLParser):
    """Texts of the <th>/<td> cells of an HTML table, row by row (entities decoded, padding stripped)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[list[str]] = []
        self.pre: list[str] = []
        self._cell: list[str] | None = None
        self._in_pre = False

    def handle_starttag(self, tag: str, attrs: list) -> None:  # type: ignore[type-arg]
        if tag == "tr":
            self.rows.append([])
        elif tag in ("th", "td"):
            self._cell = []
        elif tag == "pre":
            self._in_pre = True

    def handle_endtag(self, tag: str) -> None:
        if tag in ("th", "td") and self._cell is not None:
            self.rows[-1].append("".join(self._cell).strip())
            self._cell = None
        elif tag == "pre":
            self._in_pre = False

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
        if self._in_pre:
            self.pre.append(data)


def _parse(markup: str) -> _CellTexts:
    parser = _CellTexts()
    parser.feed(markup)
    parser.close()
    return parser


class TestTableView:
    """The sample table and metadata block the annotator sees, against the text the LLM receives."""

    TRICKY = pd.DataFrame({"a_b|c": [1.5, np.nan, -3.25e-7, 123456.789],
                           "text": ["x|y", "<=50K", None, "a & b <i>no</i>"],
                           "count": [1, 2, -3, 40],
                           "flag": [True, False, True, False]})

    @pytest.mark.parametrize("which", ["tricky", "adult"])
    def test_cells_are_those_of_the_markdown_in_order(self, which: str) -> None:
        if which == "adult":
            from llmdisc.data import load_dataset

            sample = load_dataset("adult").sample(20, random_state=4)
        else:
            sample = self.TRICKY
        shown = _parse(table_view.sample_table_html(sample)).rows
        expected = _markdown_cells(render_table(sample))
        assert shown == expected
        assert shown[0] == [str(c) for c in sample.columns] and len(shown) == len(sample) + 1
        if which == "tricky":  # the values tabulate reformats, as the LLM reads them
            assert [row[0] for row in shown[1:]] == ["1.5", "nan", "-3.25e-07", "123457"]
            assert [row[1] for row in shown[1:]] == ["x|y", "<=50K", "", "a & b <i>no</i>"]

    def test_markup_is_escaped_one_line_and_headers_wrap_at_underscores(self) -> None:
        markup = table_view.sample_table_html(self.TRICKY)
        assert "\n" not in markup and "<i>" not in markup and "&lt;=50K" in markup
        assert "<th" in markup and "a_<wbr>b|c</th>" in markup
        assert markup.startswith(f'<div class="{table_view.SAMPLE_CLASS}">')

    def test_font_shrinks_with_the_narrowest_layout(self) -> None:
        narrow = pd.DataFrame({"a": [1, 2]})
        wide = pd.DataFrame({f"column_{i}": ["Married-civ-spouse", "Never-married"] for i in range(15)})
        long_word = narrow.assign(b="Supercalifragilistic")
        same_with_spaces = narrow.assign(b="Super cali fragi listic")
        width = table_view.sample_min_width_em
        assert 0 < width(narrow) < width(same_with_spaces) < width(long_word) < width(wide)
        # Headers wrap after "_" and values after "-": neither counts as one long word.
        assert width(pd.DataFrame({"hours_per_week": [1]})) < width(pd.DataFrame({"hoursperweek": [1]}))
        hyphens, one_word = (pd.DataFrame({"x": [v]}) for v in ("Married-civ-spouse", "Marriedcivspouse"))
        assert width(hyphens) < width(one_word)
        assert table_view.sample_font_size(wide) == (f"clamp({table_view.SMALLEST_FONT_REM}rem, "
                                                     f"calc(100cqi / {width(wide)}), "
                                                     f"{table_view.LARGEST_FONT_REM}rem)")

    def test_metadata_text_is_kept_exactly(self) -> None:
        text = metadata_block(self.TRICKY.assign(note=["<b>", "&", "x" * 300, "y"]), include_row_count=False)
        markup = table_view.metadata_html(text)
        assert "\n" not in markup and markup.startswith(f'<pre class="{table_view.METADATA_CLASS}">')
        assert "".join(_parse(markup).pre) == text and "<b>" not in markup


class TestPage:
    """The real app script run by Streamlit's AppTest runner (no browser; the browser test is separate)."""

    def _app(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
        from streamlit.testing.v1 import AppTest

        real, synthetic = _tables()
        real.to_csv(tmp_path / "real.csv", index=False)
        synthetic.to_csv(tmp_path / "syn.csv", index=False)
        monkeypatch.setattr(sys, "argv", [
            "app.py", "--annotator", "A1", "--dataset", "toy", "--synthesizer", "ctgan", "--pairs", "2",
            "--n-rows", "5", "--metadata-source", "sample", "--labels-dir", str(tmp_path / "human"),
            "--real", str(tmp_path / "real.csv"), "--synthetic", str(tmp_path / "syn.csv")])
        app = AppTest.from_file(str(Path(protocol.__file__).with_name("app.py")), default_timeout=60)
        return app.run()

    def test_streamlit_magic_writes_nothing_of_the_script_to_the_page(self) -> None:
        """Issue 39 item 8: a bare string under a constant (a note for developers) was written above the
        title. Streamlit's own magic pass over app.py must add no ``st.write`` (``transparent_write``)."""
        import ast

        from streamlit.runtime.scriptrunner import magic

        path = Path(protocol.__file__).with_name("app.py")
        tree = magic.add_magic(path.read_text(encoding="utf-8"), str(path))
        written = [f"line {node.lineno}: {ast.unparse(node.args[0])[:80] if node.args else ''}"
                   for node in ast.walk(tree)
                   if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                   and node.func.attr == "transparent_write"]
        assert not written, f"Streamlit magic would write these to the page (make them # comments): {written}"

    def test_unset_confidence_is_refused_and_nothing_is_saved(self, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
        app = self._app(tmp_path, monkeypatch)
        assert not app.exception
        assert app.radio[0].value is None and app.number_input[0].value is None
        app.radio[0].set_value("REAL")
        app = app.button[0].click().run()
        assert [e.value for e in app.error] == [protocol.check_answer("REAL", None)[0]]
        assert not list((tmp_path / "human").rglob("*.csv"))

    def test_answers_are_saved_one_by_one_and_the_summary_comes_last(self, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
        app = self._app(tmp_path, monkeypatch)
        for step in range(4):
            shown = " ".join(str(m.value) for m in [*app.markdown, *app.header, *app.caption])
            assert not re.search(r"correct|wrong|accuracy|✓|✅|❌", shown, re.I), shown
            assert ("metadata" in app.header[0].value) == (step % 2 == 1)
            app.radio[0].set_value("SYNTHETIC")
            app.number_input[0].set_value(40 + step)
            app = app.button[0].click().run()
            assert not app.exception
            files = list((tmp_path / "human" / "A1").glob("*.csv"))
            assert len(protocol.read_session(files[0])) == step + 1
            # The next page opens with a line naming the answer just saved.
            saved = f"Answer saved: step {step + 1} (sample {step // 2 + 1}, C{step % 2 + 1})."
            assert app.success[0].value == saved
        assert "Session complete" in app.success[1].value
        summary = app.table[0].value
        assert list(summary.index) == ["C1", "C2"] and list(summary["drs"]) == [0.0, 0.0]

    def test_the_page_shows_the_sample_table_the_exact_markdown_and_the_metadata(
            self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        app = self._app(tmp_path, monkeypatch)
        config = protocol.SessionConfig(annotator_id="A1", dataset="toy", synthesizer="ctgan", n_pairs=2,
                                        seed=0, metadata_source="sample", n_rows=5)
        real, synthetic = (protocol.read_table_file(str(tmp_path / name)) for name in ("real.csv", "syn.csv"))
        sample, _ = protocol.draw_pair_sample(protocol.plan_session(config)[0], real, synthetic, 5)
        for condition in ("C1", "C2"):
            bodies = [element.proto.body for element in app.get("html")]
            assert table_view.PAGE_CSS in bodies
            assert table_view.sample_table_html(sample) in bodies, condition
            assert [e.label for e in app.expander] == ["Exact text the model receives (Markdown)"]
            assert [c.value for c in app.expander[0].code] == [render_table(sample)]
            metadata = table_view.metadata_html(metadata_block(sample, include_row_count=False))
            assert (metadata in bodies) == (condition == "C2")
            assert not app.code[1:]  # no other verbatim block: the metadata is the wrapping <pre>
            app.radio[0].set_value("REAL")
            app.number_input[0].set_value(50)
            app = app.button[0].click().run()
