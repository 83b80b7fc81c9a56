"""Key columns, date columns and SDV metadata in the audit's column plan (``audit.schema``, ``audit.sdv_metadata``)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from llmdisc.audit.errors import (EXIT_COLUMNS, EXIT_MISSING, EXIT_UNPARSABLE, DateParseError, InputMissingError,
                                  MetadataColumnsError, MetadataError)
from llmdisc.audit.llm import frequent_red_flags, is_cue
from llmdisc.audit.schema import (detect_date_format, identifier_summary, is_identifier, plan_columns,
                                  prepare_tables)
from llmdisc.audit.sdv_metadata import read_sdv_metadata


def _table(n: int = 60, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "row_number": np.arange(1000, 1000 + n),  # running number, name says nothing
        "customer_id": rng.choice(10**9, n, replace=False),  # sparse, name says key
        "code": [f"C{i:05d}" for i in rng.choice(99999, n, replace=False)],  # text key
        "income": rng.choice(10**6, n, replace=False) + 10**6,  # distinct integers, a measurement
        "score": rng.normal(size=n),  # distinct floats
        "joined": pd.date_range("2019-01-01", periods=n, freq="3D").strftime("%d/%m/%Y"),
        "city": rng.choice(["Oslo", "Bergen"], n),
    })


def test_keys_are_unique_integer_or_text_columns_that_look_like_keys() -> None:
    table = _table()
    found = {c for c in table if is_identifier(table[c], c, len(table))}
    assert found == {"row_number", "customer_id", "code"}
    with_gap = table["row_number"].copy()
    with_gap.iloc[0] = np.nan
    assert not is_identifier(with_gap, "row_number", len(table))  # a missing value: not a key
    assert not is_identifier(pd.Series([1, 1, 2]), "id", 3)  # a repeat: not a key
    assert not is_identifier(pd.Series([True, False]), "id", 2)


def test_dates_are_detected_in_their_format_and_parsed_strictly() -> None:
    assert detect_date_format(pd.Series(["2020-07-23", None, "2021-01-02"])) == "%Y-%m-%d"
    assert detect_date_format(pd.Series(["23/07/2020", "02/01/2021"])) == "%d/%m/%Y"
    assert detect_date_format(pd.Series(["2020-07-23 10:11:12"])) == "%Y-%m-%d %H:%M:%S"
    assert detect_date_format(pd.Series(["Oslo", "2020-07-23"])) is None
    assert detect_date_format(pd.Series([20200723, 20210102])) is None  # numbers are not date strings


def test_plan_and_tables_without_metadata() -> None:
    real, synthetic = _table(seed=1), _table(seed=2)
    synthetic["row_number"] = np.arange(len(synthetic))  # the synthesizer's fresh ids
    plan = plan_columns(real, n_rows_in_file=len(real))
    assert plan.identifiers == ("row_number", "customer_id", "code")
    assert set(plan.excluded) == set(plan.identifiers) and not set(plan.kinds) & set(plan.identifiers)
    assert plan.kinds["joined"] == "datetime" and plan.date_formats["joined"] == "%d/%m/%Y"
    llm, checks, check_kinds = prepare_tables({"real": real, "synthetic": synthetic}, plan)
    assert list(llm["real"].columns) == ["income", "score", "joined", "city"]
    assert llm["real"]["joined"].iloc[0] == "01/01/2019"  # shown to the LLM as it is written
    assert checks["real"]["joined"].iloc[:2].tolist() == [17897, 17900]  # days since 1970-01-01
    assert check_kinds["joined"] == "numerical"
    summary = {s["column"]: s for s in identifier_summary({"real": real, "synthetic": synthetic}, plan.identifiers)}
    assert summary["row_number"]["separates"] is True
    assert "ranges real 1000–1059, synthetic 0–59 do not overlap" in summary["row_number"]["sentence"]
    assert summary["code"]["separates"] is None and summary["code"]["numeric"] is False
    kept = plan_columns(real, n_rows_in_file=len(real), keep_identifiers=True)
    assert kept.excluded == {} and kept.kinds["row_number"] == "numerical" and kept.kinds["code"] == "categorical"


def test_a_date_the_format_does_not_parse_is_named() -> None:
    real, synthetic = _table(seed=1), _table(seed=2)
    synthetic.loc[5, "joined"] = "31/02/2020"
    plan = plan_columns(real, n_rows_in_file=len(real))
    with pytest.raises(DateParseError, match=re.escape("the synthetic table holds '31/02/2020'")) as info:
        prepare_tables({"real": real, "synthetic": synthetic}, plan)
    assert info.value.exit_status == EXIT_COLUMNS and "--categorical joined" in str(info.value)


def _sdv(path: Path, columns: dict, *, tables: bool, key: str | None = None) -> Path:
    table = {"columns": columns, **({"primary_key": key} if key else {})}
    body = {"tables": {"t": table}, "METADATA_SPEC_VERSION": "V1"} if tables else table
    path.write_text(json.dumps(body), encoding="utf-8")
    return path


@pytest.mark.parametrize("tables", [True, False], ids=["multi-table form", "single-table form"])
def test_sdv_metadata_sets_every_role(tmp_path: Path, tables: bool) -> None:
    real = _table()
    real["email"] = [f"u{i}@example.org" for i in range(len(real))]
    columns = {"row_number": {"sdtype": "id"}, "customer_id": {"sdtype": "numerical"},
               "code": {"sdtype": "categorical"}, "income": {"sdtype": "numerical"},
               "score": {"sdtype": "numerical"}, "joined": {"sdtype": "datetime", "datetime_format": "%d/%m/%Y"},
               "city": {"sdtype": "categorical"}, "email": {"sdtype": "email", "pii": True}}
    meta = read_sdv_metadata(_sdv(tmp_path / "m.json", columns, tables=tables, key="row_number"), list(real))
    plan = plan_columns(real, n_rows_in_file=len(real), metadata=meta, categorical=["income"])
    assert plan.identifiers == ("row_number",)  # the metadata decides: customer_id is a number here
    assert plan.excluded == {"row_number": "key column, unique per row",
                             "email": "personal information (sdtype email)"}
    assert plan.kinds == {"customer_id": "numerical", "code": "categorical", "income": "categorical",
                          "score": "numerical", "joined": "datetime", "city": "categorical"}
    assert plan.how["income"] == "--metadata m.json: sdtype numerical, overridden by --categorical"
    assert plan.date_formats == {"joined": "%d/%m/%Y"}


def test_sdv_metadata_errors_name_the_problem_and_the_fix(tmp_path: Path) -> None:
    columns = ["a", "b"]
    with pytest.raises(InputMissingError, match="metadata file 'x.json' does not exist") as info:
        read_sdv_metadata(tmp_path / "x.json", columns)
    assert info.value.exit_status == EXIT_MISSING
    (tmp_path / "list.json").write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(MetadataError, match=r"not SDV metadata.*fix: pass the file SDV writes") as info:
        read_sdv_metadata(tmp_path / "list.json", columns)
    assert info.value.exit_status == EXIT_UNPARSABLE
    with pytest.raises(MetadataColumnsError, match=re.escape("lacks column(s) ['b'] and describes column(s) ['c']")) as info:
        read_sdv_metadata(_sdv(tmp_path / "c.json", {"a": {"sdtype": "id"}, "c": {"sdtype": "numerical"}},
                               tables=True), columns)
    assert info.value.exit_status == EXIT_COLUMNS
    with pytest.raises(MetadataError, match="sdtype 'numeric', which SDV does not know; fix: use one of numerical"):
        read_sdv_metadata(_sdv(tmp_path / "s.json", {"a": {"sdtype": "numeric"}, "b": {"sdtype": "id"}},
                               tables=False), columns)
    with pytest.raises(MetadataError, match="datetime_format 'YYYY-MM-DD', which is not a strftime format"):
        read_sdv_metadata(_sdv(tmp_path / "f.json", {"a": {"sdtype": "datetime", "datetime_format": "YYYY-MM-DD"},
                                                     "b": {"sdtype": "id"}}, tables=False), columns)
    with pytest.raises(MetadataColumnsError, match="primary_key 'z' is not one of its columns"):
        read_sdv_metadata(_sdv(tmp_path / "k.json", {"a": {"sdtype": "id"}, "b": {"sdtype": "id"}},
                               tables=False, key="z"), columns)


def test_red_flags_are_cue_text_only() -> None:
    for not_cue in ("REAL", "real", "SYNTHETIC", "Synthetic.", "Synthetism", "nan", "", "  ", None, float("nan"),
                    "N/A", "Verdict: SYNTHETIC", "<list of specific suspicious patterns you noticed, if any>"):
        assert not is_cue(not_cue), not_cue
    for cue in ("ages end in 0", "real-looking names", "salary rounded"):
        assert is_cue(cue), cue
    trials = pd.DataFrame({"status": ["valid", "valid", "error"], "true_label": ["REAL", "SYNTHETIC", "REAL"],
                           "red_flags": [["REAL", "Ages end in 0", "nan"], ["ages end in 0.", None], ["x"]]})
    assert frequent_red_flags(trials) == [{"red_flag": "Ages end in 0", "count": 2, "on_real": 1, "on_synthetic": 1}]
