"""What the run found, generated from ``results/tables/`` (:func:`findings_markdown`: the README's results
block and the landing page's first section): every instrument's separation D = 2·|AUC − 0.5| from real data,
judged by the control rule of docs/glossary.md (:func:`control_verdict`).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from llmdisc.discrimination.likelihood.base import DEFAULT_LIKELIHOOD_MODEL
from llmdisc.scoring.readings import (ALPHA, EXPECTED, HOLM_FAMILY, INSTRUMENTS, MIN_N, NEGATIVE, POSITIVE,
                                      ROW_SEPARATION, TITLES, WORDS, Cell, collect, p_text, read_table)
from llmdisc.scoring.separation import (Separation, auc_interval, equivalent_to_chance, minimum_detectable_separation, separation)

def effect_needed(cells: dict[tuple[str, str], Cell], dataset: str) -> float | None:
    """The smallest D a release cell of ``dataset`` could detect with 80 % power at Holm's first-step level α/m
    (:data:`HOLM_FAMILY`) at its fewest units a class; None without a release cell there."""
    family = [c for k, c in cells.items() if k[1] not in (POSITIVE, NEGATIVE) and c.p is not None]
    here = [c for k, c in cells.items() if k[0] == dataset and k[1] not in (POSITIVE, NEGATIVE) and c.enough]
    if not here:
        return None
    n = min(min(c.n_real, c.n_other) for c in here)
    return minimum_detectable_separation(n, n, alpha=ALPHA / max(1, len(family)))


def control_verdict(cells: dict[tuple[str, str], Cell], dataset: str, instrument: str) -> tuple[str, str]:
    """``(status, words)`` of the control rule (docs/glossary.md) for one instrument on one dataset:
    ``passed``, ``weak``, ``cannot say``, ``biased``, ``unjudged`` or ``not measured``, and the figures behind
    it."""
    lower, higher = WORDS[instrument]
    positive, negative = cells.get((dataset, POSITIVE)), cells.get((dataset, NEGATIVE))
    needed = effect_needed(cells, dataset)
    if needed is None:
        return "not measured", f"no release cell with {MIN_N} samples a class"
    for name, control in (("positive control (columns shuffled)", positive), ("real-vs-real control", negative)):
        if control is None or not control.enough:
            counts = "not run" if control is None else f"n = {control.n_real} / {control.n_other}"
            return "unjudged", f"too few samples in its {name} ({counts})"
    pos, neg = positive.separation, negative.separation
    expected = higher if EXPECTED[instrument] == "higher" else lower
    n = min(positive.n_real, positive.n_other)
    if pos.low > 0 and pos.direction != EXPECTED[instrument]:
        return "cannot say", (f"its positive control (columns shuffled) reads the wrong way: {pos.words(lower, higher)}, "
                              f"where {expected} is what it should find")
    weak = (f"its positive control (columns shuffled) reaches {pos.words(lower, higher)} ({n} samples a group), and "
            f"its lower bound is not above the D {needed:.2f} a release would need to differ by to be seen (80 % "
            "power, Holm)")
    if pos.low <= 0:
        return "cannot say", weak
    if neg.low > 0:
        return "biased", f"it tells real from real: {neg.words(lower, higher)}"
    if not equivalent_to_chance(negative.auc, negative.n_real, negative.n_other, needed):
        return "unjudged", (f"real vs real ({neg.words(lower, higher)}) cannot be shown below D {needed:.2f} "
                            "(equivalence test, 90 % interval)")
    if pos.low <= needed:  # it sees its control: a release it tells apart is told apart, of the others it cannot say
        return "weak", weak
    return "passed", (f"its controls pass (columns shuffled {pos.words(lower, higher)}; real vs real "
                      f"D {neg.d:.2f}, shown below {needed:.2f})")


C2ST_CLASSIFIERS = {"c2st_auc_hist_gb": "gradient-boosted", "c2st_auc_logistic": "logistic (all columns)",
                    "paper_c2st_auc": "the paper's logistic (numeric columns, first rows)"}
"""The C2STs of the baselines' headline table, in the words the findings use."""


def _c2st_controls_sentence(table: pd.DataFrame | None, datasets: list[str]) -> list[str]:
    """Per dataset and C2ST of ``baselines_headline``: D on the shuffled-columns control beside real vs
    real."""
    if table is None:
        return []
    synth = "synthesizer" if "synthesizer" in table else "synthetic_method"
    key = "dataset_key" if "dataset_key" in table else "dataset"
    if not table[synth].isin([POSITIVE, "real_holdout"]).any():
        return ["- **Can the classifiers see how values go together?** Not measured here: this run gives the C2STs "
                "no shuffled-columns or real-vs-real control."]
    parts, blind = [], set()
    for dataset in datasets:
        rows = table[table[key] == dataset].set_index(synth)
        if POSITIVE not in rows.index or "real_holdout" not in rows.index:
            continue
        readings = []
        for column, name in C2ST_CLASSIFIERS.items():
            if column not in rows or pd.isna(rows.loc[POSITIVE, column]):
                continue
            shuffled, real = (2 * abs(float(rows.loc[g, column]) - 0.5) for g in (POSITIVE, "real_holdout"))
            if shuffled <= ROW_SEPARATION:
                blind.add(name)
            readings.append(f"{name} D {shuffled:.2f} ({'told apart' if shuffled > ROW_SEPARATION else 'not told apart'}"
                            f"; real vs real {real:.2f})")
        parts.append(f"{dataset}: " + ", ".join(readings))
    if not parts:
        return []
    sees = [n for n in C2ST_CLASSIFIERS.values() if n not in blind]
    return ["- **Can the classifiers see how values go together?** On the shuffled-columns control (every value "
            "real, how values go together destroyed; thousands of rows a side, told apart above D "
            f"{ROW_SEPARATION:g}): " + "; ".join(parts) + ". "
            + ("Every one sees it on every dataset; " if len(sees) == len(C2ST_CLASSIFIERS) else
               f"Only the {', '.join(sees)} sees it on every dataset; " if sees else "None sees it; ")
            + "a C2ST that misses this control says nothing of joint structure when it reads a release as real."]


def _instrument_sentence(cells: dict[tuple[str, str], Cell], datasets: list[str], instrument: str) -> str:
    """Per dataset: what the control rule allows the instrument to say of the releases."""
    parts = []
    for dataset in datasets:
        status, words = control_verdict(cells, dataset, instrument)
        if status == "not measured":
            parts.append(f"{dataset}: too few samples ({words})")
            continue
        releases = {k[1]: c for k, c in cells.items() if k[0] == dataset and k[1] not in (POSITIVE, NEGATIVE)}
        told = [g for g, c in releases.items() if c.separated]
        if status == "weak" and told:
            parts.append(f"{dataset}: it tells {len(told)} of its {len(releases)} releases apart (Holm p < 0.05; it "
                         f"sees its positive control and reads real vs real at chance); of the other "
                         f"{len(releases) - len(told)} it cannot say — {words}")
            continue
        if status != "passed":
            parts.append(f"{dataset}: {'cannot say' if status != 'biased' else 'biased, so it vouches for nothing'}"
                         f" — {words}")
            continue
        lower, higher = WORDS[instrument]
        missed = [f"{g} {c.separation.words(lower, higher)}" for g, c in releases.items()
                  if g not in told and c.separation is not None]
        text = f"{dataset}: {words}; it tells {len(told)} of its {len(releases)} releases apart (Holm p < 0.05)"
        if missed:
            text += (f"; not told apart: {', '.join(missed)}, where a release differing by D "
                     f"{effect_needed(cells, dataset):.2f} would have been seen 4 times in 5")
        parts.append(text)
    return "; ".join(parts)


def _calibration_sentence(table: pd.DataFrame | None) -> list[str]:
    if table is None or "run_seed" not in table:
        return []
    pooled = table[table["run_seed"].astype(str) == "all"]
    parts = []
    for row in pooled.to_dict("records"):
        verdict = "uniform, as it must be" if row["ks_p"] >= ALPHA else "not uniform"
        parts.append(f"{row['dataset_key']}: {int(row['samples'])} samples from run seeds {row['seeds']}, KS p "
                     f"{p_text(row['ks_p'])} ({verdict}; ranks of the sample among its permutations "
                     f"{row['rank_counts']}, χ² p {p_text(row['rank_chi2_p'])}; mean C {row['mean_C']:+.2f} ± "
                     f"{row['se_C']:.2f} nats)")
    if not parts:
        return []
    backend = f" ({table['backend'].iloc[0]})" if "backend" in table else ""
    return ["- **Is the joint contrast's per-sample test calibrated?** On shuffled-columns samples, where a sample "
            f"and its recombinations are exchangeable, its p-values must be uniform{backend}: " + "; ".join(parts)
            + "."]


def _variety_sentence(table: pd.DataFrame | None) -> list[str]:
    """Per dataset, where the joint contrast's reading of a group follows its variety
    (:mod:`llmdisc.scoring.variety`)."""
    if table is None or "variety_slope_low" not in table:
        return []
    raw = table[(table["score"] == "contrast") & table["variety_slope"].notna()].set_index(["dataset_key", "source"])
    adjusted = table[table["score"] == "contrast_adjusted"].set_index(["dataset_key", "source"])
    parts = []
    for dataset, rows in raw.groupby(level=0, sort=True):
        first = rows.iloc[0]
        slope = (f"{first['variety_slope']:+.0f} [{first['variety_slope_low']:+.0f}, "
                 f"{first['variety_slope_high']:+.0f}] nats per unit of variety over the "
                 f"{int(first['n_reference'])} real reference samples (r {first['variety_r']:+.2f})")
        said = []
        for (_, source), row in rows.iterrows():
            before = _separation(row)
            after = _separation(adjusted.loc[(dataset, source)]) if (dataset, source) in adjusted.index else None
            if after is not None and _reading(before) != _reading(after):
                said.append(f"{source} (variety {row['other_variety']:.2f}): {_told(before)} raw, {_told(after)} "
                            "adjusted")
            elif after is None and _reading(before):
                # C tends to rise with variety, so only a less varied group reading lower (or a more varied one
                # reading higher) could owe its reading to variety
                higher = _reading(before) == "higher"
                gap = row["other_variety"] - row["real_variety"]
                varied = gap > 0 if higher else gap < 0
                said.append(f"{source} {_told(before)}, variety {row['other_variety']:.2f} ("
                            + ("" if varied else "not ") + ("more" if higher else "less") + " varied: variety "
                            + ("could explain it" if varied else "does not explain it") + ")")
        if (dataset, rows.index[0][1]) in adjusted.index:
            parts.append(f"{dataset}: real samples' variety {first['real_variety']:.2f}, C rising {slope}; "
                         + ("; ".join(said) if said else "no group's reading changes"))
        else:
            parts.append(f"{dataset}: real samples' variety {first['real_variety']:.2f}; C's slope on variety, "
                         f"{slope}, covers 0, so its readings are left unadjusted"
                         + ("; told apart: " + "; ".join(said) if said else ""))
    return ["- **Does the joint reading follow the samples' variety?** A column whose values are all alike adds "
            "nothing to C, so a release with fewer distinct values can read less structured without losing a "
            "dependence. Variety = (distinct values − 1) / (rows − 1) per column, averaged (0 = all alike, 1 = all "
            "different); where C's slope on variety among the real reference samples is told apart from 0 "
            "(95 % interval), adjusted = C minus that line; a reading is told apart when D's 95 % interval "
            "excludes 0 (no Holm): " + " — ".join(parts) + "."]


def _separation(row: pd.Series) -> Separation | None:
    return Cell(row["auc"], None, int(row["n_real"]), int(row["n_syn"])).separation


def _reading(separation: Separation | None) -> str:
    """``higher`` or ``lower`` where the interval shows a direction, else ``""``."""
    return separation.direction if separation is not None and separation.low > 0 else ""


def _told(separation: Separation) -> str:
    """D with its interval and its reading (``less structured`` …) or ``not told apart``."""
    if _reading(separation):
        return separation.words(*WORDS["joint"])
    return f"D {separation.d:.2f} [{separation.low:.2f}, {separation.high:.2f}], not told apart"


def model_note(tables_dir: Path, table: str, fallback: str) -> str:
    """The models that wrote ``table`` (its ``model`` column), or ``fallback``."""
    frame = read_table(tables_dir, table)
    if frame is None or "model" not in frame:
        return fallback
    models = sorted({str(m) for m in frame["model"].dropna()})
    return ", ".join(models) if models else fallback


def _sentences(found: dict[str, dict[tuple[str, str], Cell]], datasets: list[str], tables_dir: Path) -> list[str]:
    lines = []
    c2st = found["c2st"]
    if c2st:
        parts, counts = [], []
        for whose, paper in (("our", False), ("the paper's own", True)):
            cells = [c for k, c in c2st.items() if k[1] not in (POSITIVE, NEGATIVE) and k[1].startswith("paper_") == paper]
            if cells:
                ds, told = [c.separation.d for c in cells], sum(c.separated for c in cells)
                counts.append((told, len(cells)))
                parts.append(f"{'every one' if told == len(cells) else told} of {whose} {len(cells)} releases "
                             f"(D {min(ds):.2f}–{max(ds):.2f})")
        if parts:
            told_all, n_all = map(sum, zip(*counts))
            answer = "Yes" if told_all == n_all else "No" if told_all == 0 else "Partly"
            lines.append(f"- **Can a classifier tell the releases from real rows?** {answer}, by a gradient-boosted "
                         "C2ST on thousands of rows: " + "; ".join(parts) + ".")
        lines += _c2st_controls_sentence(read_table(tables_dir, "baselines_headline"), datasets)
    for name, question, table in (
            ("likelihood", "Does the table likelihood see what a classifier sees?", "likelihood_cells"),
            ("joint", "Does the joint-structure statistic see whether a row's values belong together?",
             "joint_cells")):
        cells = found[name]
        if not cells:
            where = (" (a run with `likelihood.joint: true`, as in `configs/default.yaml`, measures it; "
                     "`llmdisc audit` reads it on a release by default)") if name == "joint" else ""
            lines.append(f"- **{question}** Not measured here{where}.")
            continue
        model = model_note(tables_dir, table, DEFAULT_LIKELIHOOD_MODEL)
        lines.append(f"- **{question}** (model: {model}) " + _instrument_sentence(cells, datasets, name) + ".")
        if name == "joint":
            lines += _calibration_sentence(read_table(tables_dir, "joint_calibration"))
            lines += _variety_sentence(read_table(tables_dir, "joint_cells"))
    prob, verdict = found["probability"], found["verdict"]
    if not any(c.enough for c in prob.values()):
        lines.append("- **Can the LLM's verdict tell them apart?** Not measured here (too few trials per cell).")
    else:
        model = model_note(tables_dir, "llm_probability_cells", "the run's model")
        lines.append(f"- **Can the LLM's verdict tell them apart?** (p_synthetic in C1; model: {model}) "
                     + _instrument_sentence(prob, datasets, "probability") + ".")
    if not verdict:
        lines.append("- **Generated verdicts (the paper's reading)**: not in this run (`configs/paper.yaml` generates "
                     "them).")
    elif not any(c.note for c in verdict.values()):
        lines.append("- **Generated verdicts (the paper's reading)**: too few per cell here to give a DRS.")
    return lines


def findings_markdown(tables_dir: Path, *, heading: str = "###") -> list[str]:
    """The summary as Markdown lines (a ``heading``-level title, one sentence per question, the side-by-side
    table, notes); one "no results yet" line when ``tables_dir`` holds no table."""
    found = collect(Path(tables_dir))
    keys = sorted({k for cells in found.values() for k in cells})
    if not keys:
        return ["_No results yet: run `make reproduce` to fill this summary from `results/tables/`._"]
    datasets = sorted({k[0] for k in keys})
    shown = [i for i in INSTRUMENTS if found[i]]  # an instrument this run did not measure gets no column
    lines = [f"{heading} What the run found", "", *_sentences(found, datasets, Path(tables_dir)), "",
             "Separation D = 2·|AUC − 0.5| of each group from real data, per instrument (0 = not told apart, 1 = "
             "every sample told apart), its 95 % interval, the direction in words and the Holm-adjusted p "
             "(AUC = P(a sample of the group scores higher than a real one); `docs/glossary.md`):", "",
             "| dataset | group | " + " | ".join(TITLES[i] for i in shown) + " |",
             "|---|---|" + "---|" * len(shown)]
    order = {POSITIVE: 1, NEGATIVE: 2}
    for dataset, group in sorted(keys, key=lambda k: (k[0], order.get(k[1], 0), k[1])):
        name = {POSITIVE: "positive control (columns shuffled)", NEGATIVE: "negative control (real vs real)"}.get(
            group, group)
        cells = [(i, found[i].get((dataset, group))) for i in shown]
        lines.append(f"| {dataset} | {name} | " + " | ".join(
            "–" if c is None else c.text(WORDS.get(i, ("lower", "higher"))) for i, c in cells) + " |")
    lines += ["", f"Cells with fewer than {MIN_N} samples per class show their n instead of a figure. The intervals "
              "are score intervals recomputed from each cell's AUC and n (never of zero width). "
              f"{HOLM_FAMILY}. An instrument speaks of a dataset's releases only when its positive control is told "
              "apart in the expected direction by more than the D a release would need to differ by to be seen "
              "(80 % power at Holm's first-step level), and real vs real is shown below that D. Each release is one "
              "seeded fit of its synthesizer: what is said of it is said of that release, not of the synthesizer "
              "(the spread between fits was not measured)."]
    return lines + design_markdown(read_table(Path(tables_dir), "joint_design"))


def _design_control(row: pd.Series) -> Separation:
    """A design row's shuffled-columns control as D with its score interval (auc = P(real C > other C))."""
    auc, n_other = float(row["auc_control"]), int(row.get("n_control", row["n_real"]) or row["n_real"])
    return separation(auc, *auc_interval(auc, int(row["n_real"]), n_other))


def design_markdown(design: pd.DataFrame | None) -> list[str]:
    """The joint-structure design study (``joint_design.csv``) as Markdown lines; the cost is in tokens, since
    seconds depend on what else the machine ran."""
    if design is None:
        return []
    lines = ["", "How the joint-structure design was chosen (`llmdisc bench joint-design`, one factor at a time from "
             "the base: Markdown table, k = 2 recombinations, 40 real reference rows before the sample): the "
             "separation D of shuffled-columns samples from real holdout samples (1 = every shuffled sample less "
             "structured than every real one) and, for the base, of real train samples (0 expected). The model is "
             "the embedded SmolLM2-135M unless the row names an opt-in one (`--model`):", "",
             "| model | dataset | design | n per group | shuffled columns D | real vs real D | tokens per sample |",
             "|---|---|---|---|---|---|---|"]
    for _, row in design.iterrows():
        n_real, control = int(row["n_real"]), _design_control(row)
        # P(real > other) above 0.5 means the other group is the less structured one
        way = {"higher": "less structured", "lower": "more structured"}.get(control.direction, "")
        rr = "–" if pd.isna(row["auc_real_vs_real"]) else f"{2 * abs(row['auc_real_vs_real'] - 0.5):.2f}"
        model = row.get("model", "–")  # tables written before the model was a column do not say
        lines.append(f"| {model} | {row['dataset_key']} | {row['design']} | {n_real} | "
                     f"{control.d:.2f} [{control.low:.2f}, {control.high:.2f}]" + (f", {way}" if way else "") +
                     f" | {rr} | {row['tokens_run_per_sample']:,.0f} |")
    return lines + _cheapest_design(design)


DESIGN_D = 0.8
"""The shuffled-columns D a design must reach (point estimate) to be named, besides being told apart."""


def _cheapest_design(design: pd.DataFrame) -> list[str]:
    """Per dataset, the cheapest design of the embedded model whose shuffled-columns control is told apart the
    right way with D at least :data:`DESIGN_D` (or none)."""
    if "model" in design:
        design = design[design["model"] == DEFAULT_LIKELIHOOD_MODEL]
    if design.empty:  # only opt-in models measured: nothing to say of the embedded one
        return []

    def qualifies(row: pd.Series) -> bool:
        control = _design_control(row)
        return control.direction == "higher" and control.low > 0 and control.d >= DESIGN_D

    rows = design[design.apply(qualifies, axis=1)]
    found = []
    for dataset, group in rows.groupby("dataset_key", sort=False):
        best = group.loc[group["tokens_run_per_sample"].idxmin()]
        found.append(f"on {dataset}, `{best['design']}` ({best['tokens_run_per_sample']:,.0f} tokens a sample, "
                     f"D {2 * abs(best['auc_control'] - 0.5):.2f})")
    missing = [d for d in dict.fromkeys(design["dataset_key"]) if d not in set(rows["dataset_key"])]
    if missing:
        found.append(f"none on {', '.join(missing)}")
    return ["", f"Cheapest design of the embedded model whose shuffled-columns control is told apart (D's lower bound "
            f"above 0) with D ≥ {DESIGN_D}: " + "; ".join(found) + ". The runs and the audit write the table as CSV "
            "(`likelihood.joint_serialisation`), with k = 2 and 20 reference rows (`configs/default.yaml`)."]
