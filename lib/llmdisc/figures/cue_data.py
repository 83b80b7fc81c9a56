"""Notebook 10's inputs: every cue string (our trials, the paper's, the human notes), coded and checked into
the ``cues_*`` tables (in the figures stage because it reads the human label files).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from llmdisc.data.reference import paper_release_path
from llmdisc.errors import ConfigError, DataError
from llmdisc.paths import project_root, reference_dir, relative_to_root, results_dir
from llmdisc.scoring import cue_tables
from llmdisc.scoring.cue_validity import (
    TableVocabulary,
    check_cues,
    load_paraphrase_set,
    paraphrase_accuracy,
    paraphrase_summary,
    parser_agreement,
    parser_coverage,
    row_fact_conflicts,
    validity_table,
)
from llmdisc.scoring.metrics import wilson_interval
from llmdisc.scoring.paper_samples import paper_release_tables, paper_samples, verify_paper_samples
from llmdisc.scoring.cues import (
    code_cues,
    coder_agreement,
    cue_strings,
    has_text,
    input_quality_table,
    load_codebook,
    note_cues,
)

REFERENCE_SET = "cue_reference_v1.csv"
CLAIMS_SET = "cue_claims_v1.csv"
PARAPHRASE_SET = Path("tests") / "fixtures" / "cue_paraphrases"
"""Hand-checked paraphrased cues on small tables with known truth (root-relative; the tests use it too)."""


def fixture_path(name: str) -> Path:
    """The hand-coded reference set ``name``, shipped with the package (``llmdisc/scoring/cue_reference/``)."""
    import importlib.resources

    return Path(str(importlib.resources.files("llmdisc.scoring").joinpath("cue_reference").joinpath(name)))


def paper_real_tables() -> dict[str, pd.DataFrame]:
    """The paper's real tables in file order: Adult (UCI ``adult.data``, ``?`` rows dropped) and Census."""
    from llmdisc.data import load_adult
    from llmdisc.data.acs import reference_census_csv

    tables: dict[str, pd.DataFrame] = {"adult": load_adult()[0]}
    census = reference_census_csv()
    if census is not None:
        tables["census-codes"] = pd.read_csv(census)
    return tables


def our_samples(trials: pd.DataFrame) -> tuple[dict, dict, dict[str, pd.DataFrame]]:
    """Rebuild the rows each of our trials showed: ``(samples, reasons, reals)`` keyed like ``check_cues``."""
    from llmdisc.discrimination import load_trial_tables
    from llmdisc.synthesis.controls import CONTROLS

    samples, reasons, reals, cache = {}, {}, {}, {}
    for rec in trials.to_dict("records"):
        key = ("llmdisc", rec.get("run_id"), rec.get("trial_id"), None)
        dkey, synth = rec.get("dataset_key"), rec.get("synthetic_method")
        control = synth in CONTROLS  # the control tables are rebuilt exactly as the trials built them
        seed = int(rec.get("run_seed") or 0)
        try:
            if (dkey, synth, seed) not in cache:
                cache[(dkey, synth, seed)] = load_trial_tables(dkey, [] if control else [synth], controls=control,
                                                               seed=seed)[0][dkey]
            tables = cache[(dkey, synth, seed)]
        except (DataError, ConfigError, FileNotFoundError, OSError) as exc:
            samples[key], reasons[key] = None, f"tables of {dkey}/{synth} not found ({type(exc).__name__})"
            continue
        reals[dkey] = tables["real"]
        source = tables["real"] if rec.get("true_label") == "REAL" else tables[synth]
        ids = rec.get("row_ids")
        if ids is None or len(ids) == 0:
            samples[key], reasons[key] = None, "the record has no row_ids"
            continue
        samples[key] = source.iloc[list(ids)].reset_index(drop=True)
    return samples, reasons, reals


def _accuracy_row(attrs: dict, *, fixture: str, measure: str) -> dict[str, Any]:
    """One row of ``cues_parser_accuracy`` from :func:`parser_agreement`'s counts, with Wilson intervals."""
    rec = wilson_interval(attrs["n_correct"], attrs["n_expected"])
    prec = wilson_interval(attrs["n_correct"], attrs["n_parsed"])
    return {"fixture": fixture, "measure": measure, "subset": "all", "expected_kind": "all",
            "n_strings": attrs["n_strings"], "n_expected": attrs["n_expected"], "n_parsed": attrs["n_parsed"],
            "n_correct": attrs["n_correct"], "recall": rec.value, "recall_ci_low": rec.ci_low,
            "recall_ci_high": rec.ci_high, "precision": prec.value, "precision_ci_low": prec.ci_low,
            "precision_ci_high": prec.ci_high, "exact_share": attrs["exact_share"]}


def cue_analysis(*, trials_dir: Path | None = None, include_ours: bool = True, include_paper: bool = True,
                 include_humans: bool = True) -> dict[str, Any]:
    """Every cue table from our trials (``trials_dir``), the paper's and the human notes: ``{"tables",
    "inputs" (relative paths read), "input_paths", "counts", "coded", "paper_samples"}`` (the
    :class:`~llmdisc.scoring.paper_samples.SampleVerification` or None). DataError when there is nothing to
    read.
    """
    from llmdisc.discrimination import load_trials
    from llmdisc.human import read_labels
    from llmdisc.scoring.reference import import_paper_trials, paper_trial_files

    codebook = load_codebook()
    themes = codebook.theme_ids
    inputs: list[str] = []
    input_paths: list[Path] = []  # the files themselves, for the manifest's hashes

    def read(paths: list[Path]) -> None:
        input_paths.extend(paths)
        inputs.extend(relative_to_root(p) for p in paths)

    cue_frames, trial_frames = [], {}
    trials_dir = trials_dir or results_dir() / "trials"
    ours = pd.DataFrame()
    if include_ours and trials_dir.is_dir() and any(trials_dir.glob("*.jsonl")):
        ours = load_trials(trials_dir)
        trial_frames["llmdisc"] = ours
        cue_frames.append(cue_strings(ours, source="llmdisc"))
        read(sorted(trials_dir.rglob("*.jsonl")))
    paper = pd.DataFrame()
    verification = None
    if include_paper and reference_dir() is not None:
        files = paper_trial_files()
        paper = import_paper_trials(files)
        trial_frames["paper"] = paper
        cue_frames.append(cue_strings(paper, source="paper"))
        read([Path(f) for f in files])
    if include_humans and reference_dir() is not None:
        labels, _, files = read_labels([reference_dir() / "results" / "human"])
        cue_frames.append(note_cues(labels))
        input_paths.extend(sorted((reference_dir() / "results" / "human").rglob("*.csv")))
        inputs.extend(relative_to_root(Path(f)) for f in files)  # read_labels' files are names for display
    if not cue_frames:
        raise DataError("no trial records and no paper reference data; fix: run notebook 04, or run `llmdisc data "
                        "fetch-reference` (or `make reference`), or set LLMDISC_REFERENCE")
    cues = pd.concat(cue_frames, ignore_index=True)
    coded = code_cues(cues, codebook)
    usable = coded[has_text(coded)]
    per_trial = cue_tables.trial_themes(coded, themes)
    per_trial["has_cue"] = per_trial["answer"].str.replace("\u241e", "").str.strip().ne("")
    tables: dict[str, pd.DataFrame] = {}
    cells = ["source", "provider", "model", "dataset", "condition", "true_label"]
    tables["cues_theme_frequency"] = cue_tables.theme_share_table(per_trial, themes, cells)
    tables["cues_theme_by_field"] = cue_tables.theme_share_table(
        cue_tables.trial_themes(coded[coded["source"] != "human"].assign(
            trial_id=lambda d: d["trial_id"].astype(str) + "|" + d["field"]), themes).assign(
            field=lambda d: d["trial_id"].str.rsplit("|", n=1).str[-1]),
        themes, ["source", "provider", "model", "field"])
    llm = per_trial[per_trial["source"] != "human"]
    tables["cues_correct_vs_wrong"] = cue_tables.theme_share_table(
        llm, themes, ["source", "provider", "model", "dataset", "correct"])
    tables["cues_condition_shift"] = cue_tables.condition_shift_table(per_trial, themes)
    tables["cues_recognition"] = cue_tables.recognition_table(per_trial)
    humans_and_models = per_trial.assign(who=per_trial["source"].map({"human": "human"}).fillna("model"))
    noted = humans_and_models[humans_and_models["has_cue"]]
    tables["cues_humans_vs_models"] = cue_tables.theme_share_table(
        noted, themes, ["who", "source", "provider", "model", "dataset", "condition"])
    tables["cues_input_quality"] = input_quality_table(cues, trial_frames)
    ref_path = fixture_path(REFERENCE_SET)
    if ref_path.is_file():
        reference = pd.read_csv(ref_path, keep_default_na=False)
        parts = {"all": reference, "test_fold": reference[reference["fold"] == "test"],
                 "test_fold_without_codebook_examples": reference[(reference["fold"] == "test")
                                                                  & ~reference["in_codebook_examples"].astype(bool)]}
        tables["cues_coder_agreement"] = pd.concat(
            [coder_agreement(p, codebook).assign(subset=name) for name, p in parts.items()], ignore_index=True)
        read([ref_path])
    reals = paper_real_tables() if not paper.empty else {}
    vocabularies = {k: TableVocabulary.from_table(v) for k, v in reals.items()}
    checked_parts = []
    parsed = []  # the strings the parser read: those of a table with a vocabulary (the rest are not parsed)
    paper_cues = usable[usable["source"] == "paper"]
    if not paper_cues.empty:
        if "census-codes" in reals:  # rebuild the Census samples from the paper's files and verify them
            releases = paper_release_tables()
            verification = verify_paper_samples(paper, synthetic_tables=releases,
                                                real_tables={"census-codes": reals["census-codes"]})
            read([paper_release_path(m) for _, m in sorted(releases)])
        samples, reasons = paper_samples(paper_cues, reals, verification=verification)
        # the paper's C2 metadata described the whole source table: the real table, or the release shown
        metadata = {}
        for rec in paper_cues[paper_cues["condition"] == "C2"].to_dict("records"):
            key = tuple(rec.get(k) for k in ("source", "run_id", "trial_id", "line_no"))
            if samples.get(key) is None:
                continue
            if rec["true_label"] == "REAL" and rec["dataset_key"] in reals:
                metadata[key] = reals[rec["dataset_key"]]
            elif verification is not None:
                metadata[key] = releases.get((rec["dataset_key"], rec["synthetic_method"]))
        paper_checked = check_cues(paper_cues, samples, vocabularies=vocabularies, reals=reals,
                                   metadata_tables=metadata, unavailable_reasons=reasons)
        checked_parts.append(paper_checked)
        parsed.append(paper_cues[paper_cues["dataset_key"].isin(list(vocabularies))])
        tables["cues_row_fact_conflicts"] = row_fact_conflicts(paper_checked)
    human_cues = usable[usable["source"] == "human"].assign(
        dataset_key=lambda d: d["dataset"].map({"adult": "adult", "census": "census-codes"}))
    if not human_cues.empty and vocabularies:
        checked_parts.append(check_cues(human_cues, {}, vocabularies=vocabularies, reals=reals,
                                        unavailable_reasons={}).assign(
            detail="the human study did not record which rows each annotator saw"))
        parsed.append(human_cues[human_cues["dataset_key"].isin(list(vocabularies))])
    our_cues = usable[usable["source"] == "llmdisc"]
    if not our_cues.empty:
        samples, reasons, our_reals = our_samples(ours)
        vocab_ours = {k: TableVocabulary.from_table(v) for k, v in our_reals.items()}
        our_cues = our_cues.assign(line_no=None)
        checked_parts.append(check_cues(our_cues, samples, vocabularies=vocab_ours, reals=our_reals,
                                        unavailable_reasons=reasons))
        parsed.append(our_cues[our_cues["dataset_key"].isin(list(vocab_ours))])
    checked = pd.concat([c for c in checked_parts if not c.empty], ignore_index=True) if checked_parts else \
        pd.DataFrame(columns=["source", "provider", "model", "true_label", "claim_kind", "verdict"])
    keep = ["source", "provider", "model", "dataset", "synthetic_method", "condition", "true_label", "predicted_label", "field",
            "claim_kind", "claim", "verdict", "detail", "text"]
    tables["cues_validity_claims"] = checked.reindex(columns=keep)
    tables["cues_validity"] = validity_table(checked, by=("source", "provider", "model", "true_label"))
    cell_by = ("source", "provider", "model", "dataset", "synthetic_method", "true_label")
    for name, by in (("by_cell", cell_by), ("by_kind", ("source", "true_label", "claim_kind"))):
        table = validity_table(checked, by=by)
        tables[f"cues_validity_{name}"] = table[table["n_claims"] > 0].reset_index(drop=True) if len(table) \
            else table
    parsed = [c for c in parsed if not c.empty]
    parsed_cues = pd.concat(parsed) if parsed else usable.iloc[:0]
    tables["cues_parser_coverage"] = parser_coverage(parsed_cues, checked, ("source", "true_label"), themes=themes)
    accuracy = []
    claims_path = fixture_path(CLAIMS_SET)
    if claims_path.is_file() and vocabularies:
        claim_ref = pd.read_csv(claims_path, keep_default_na=False)
        agreement = parser_agreement(claim_ref[claim_ref["dataset_key"].isin(list(vocabularies))], vocabularies)
        accuracy.append(_accuracy_row(agreement.attrs, fixture=CLAIMS_SET,
                                      measure="claims of real cue strings equal the hand-written claims"))
        read([claims_path])
    paraphrase_dir = project_root() / PARAPHRASE_SET
    if (paraphrase_dir / "cues.csv").is_file():
        lines, shown, para_reals = load_paraphrase_set(paraphrase_dir)
        per_line = paraphrase_accuracy(lines, shown, para_reals)
        tables["cues_parser_paraphrases"] = per_line
        accuracy.extend(paraphrase_summary(per_line).assign(
            fixture=PARAPHRASE_SET.as_posix(), measure="kind and truth of paraphrased cues on known tables"
        ).to_dict("records"))
        read([paraphrase_dir / "cues.csv", *sorted((paraphrase_dir / "tables").glob("*.csv"))])
    if accuracy:
        order = ["fixture", "measure", "subset", "expected_kind", "n_strings", "n_expected", "n_parsed", "n_correct",
                 "recall", "recall_ci_low", "recall_ci_high", "precision", "precision_ci_low", "precision_ci_high",
                 "exact_share"]
        tables["cues_parser_accuracy"] = pd.DataFrame(accuracy).reindex(columns=order)
    counts = {"cue_strings": int(len(cues)), "cue_strings_with_text": int(len(usable)),
              "trials_or_answers": int(len(per_trial)), "claims": int(len(checked)),
              "codebook_version": codebook.version}
    return {"tables": tables, "inputs": inputs, "input_paths": input_paths, "counts": counts, "coded": coded,
            "paper_samples": verification}
