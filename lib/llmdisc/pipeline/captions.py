"""The supplementary's words in one place: figure captions, table descriptions and the research questions.

Every figure that notebook 07 saves (``figures/<name>.png``) is shown in the supplementary with the numbered
caption kept here under its file name: what is plotted, what n is, what the interval is and how to read 0, 0.5
and 1. :data:`RESEARCH_QUESTIONS` lists what the study asks, each with the notebook section, figures and table
that answer it; the landing page (:mod:`llmdisc.pipeline.landing`) is generated from it and from
``results/tables/``. A figure or table missing from a run is left out, never an error; a figure without an
entry here gets a caption saying so (add one here).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping


@dataclass(frozen=True)
class FigureCaption:
    """The caption of one figure, in four parts a reader needs to read it."""

    title: str
    """One line: what the figure shows."""
    plotted: str
    """What is on the axes, panels, colours and markers."""
    n: str
    """What n is; ``{field}`` placeholders are filled from the run's tables (see :func:`caption_text`)."""
    interval: str
    """What the error bars or bands are (or that there are none)."""
    reading: str
    """How to read 0, 0.5 and 1 (or the figure's reference lines)."""


_DRS_READING = ("DRS 0: the model never tells the labels apart (for instance it always answers one label); "
                "0.5: balanced chance-level discrimination (dashed line); 1: every real sample called REAL "
                "and every synthetic one SYNTHETIC: the release is distinguishable.")

FIGURE_CAPTIONS: dict[str, FigureCaption] = {
    "drs_by_cell": FigureCaption(
        "Disclosure Risk Score by synthesizer and condition.",
        "DRS = min(p_REAL, p_SYN) per synthesizer (x) and condition (colour: C1 table only, C2 table + "
        "metadata), one panel per dataset × provider/model, never pooled.",
        "n on each bar = valid trials of the cell ({n_valid} valid trials in {n_cells} cells in this run).",
        "Error bars: 95 % bootstrap interval of the DRS (seeded; seeds in results/tables/llm_cells.csv).",
        _DRS_READING),
    "drs_decomposition": FigureCaption(
        "Which half of the task limits the DRS: p_REAL against p_SYN.",
        "p_REAL (real samples called REAL) and p_SYN (synthetic samples called SYNTHETIC) per synthesizer and "
        "condition, one panel per dataset × provider/model.",
        "n on each bar = valid trials with a real (p_REAL) or a synthetic (p_SYN) sample.",
        "Error bars: Wilson 95 % interval of the share.",
        "0: no sample of that label recognised; 0.5: half of them; 1: all of them. An always-REAL answerer sits "
        "at p_REAL = 1, p_SYN = 0 (DRS 0)."),
    "label_bias_confidence": FigureCaption(
        "Label bias and stated confidence.",
        "Bars: share of REAL answers per cell; diamonds: mean stated confidence / 100.",
        "n on each bar = valid trials of the cell.",
        "None: both values are shown as observed (no interval).",
        "REAL-answer rate 0: always SYNTHETIC; 0.5: balanced answers (the true share of real samples); "
        "1: always REAL. Confidence 0.5 = 50 of 100, 1 = fully sure."),
    "condition_change": FigureCaption(
        "Does the metadata block change the DRS? C1 against C2.",
        "DRS under C1 (table only) and C2 (table + metadata) per synthesizer, joined by a line; legend: the "
        "two-sided permutation p-value of DRS(C2) − DRS(C1) (3,000 shuffles of the condition labels).",
        "n = valid trials per condition of each cell (columns n_c1, n_c2 of results/tables/llm_condition_tests.csv).",
        "No error bars: the permutation p-value is the uncertainty shown.",
        _DRS_READING + " A flat line: no change; p < 0.05: a change unlikely under shuffled conditions."),
    "seed_stability": FigureCaption(
        "Seed stability of the matched-N DRS.",
        "Mean DRS over re-draw seeds per synthesizer and condition, one panel per dataset × model "
        "(the paper's own trials from notebook 08 where our run has too few valid trials per model).",
        "n = seeds of the re-draw (50 in the paper's analysis, seeds 1000–1049).",
        "Error bars: 2.5–97.5 % range of the DRS over the seeds (not a confidence interval).",
        _DRS_READING),
    "llm_vs_baselines": FigureCaption(
        "The LLM against the classifier and distance baselines.",
        "LLM DRS (y) against a baseline metric (x: C2ST ROC-AUC or the DCR share), one point per synthesizer; "
        "colour = condition, marker = dataset; legend: Kendall's τ across the synthesizers.",
        "n = valid trials of each LLM cell (results/tables/llm_cells.csv); the baselines' sizes are in "
        "results/tables/baselines_headline.csv.",
        "Vertical bars: 95 % bootstrap interval of the DRS.",
        "y: " + _DRS_READING + " x: ROC-AUC 0.5 = the classifier cannot tell real from synthetic rows, 1 = it "
        "always can; DCR share 0.5 = synthetic rows as close to the training data as the holdout is."),
    "human_vs_llm": FigureCaption(
        "Humans against the LLM, per cell: like with like only.",
        "Pooled human DRS (x) against an LLM's DRS (y) per dataset × synthesizer × condition; colour and marker = "
        "condition. First panel: pairs on the same releases under the same protocol (the paper's LLM records "
        "against the paper's annotators; our cells against a pilot of our own), with the dashed line y = x. "
        "Other panels: pairs that differ in release or protocol, titled with what differs, without that line.",
        "n = cells shared by a human pilot and LLM cells ({n_human} human labels in the pilot); every pair, "
        "with what differs, in results/tables/llm_human_pairs.csv.",
        "None drawn: each point is a point estimate (intervals in results/tables/human_cells.csv).",
        "First panel: on the diagonal humans and the LLM are equally able, above it the LLM is better. Other "
        "panels compare different releases under different protocols: no such reading. " + _DRS_READING),
    "calibration": FigureCaption(
        "Confidence calibration (reliability diagram).",
        "Observed accuracy (y) against mean stated confidence / 100 (x) in confidence bins, one line per model.",
        "n next to each point = valid trials in the bin.",
        "None: bin means only.",
        "On the dashed diagonal: calibrated (stated 0.5 → right half the time, 1 → always right); below it: "
        "over-confident; accuracy 0.5 = chance on a balanced task."),
    "encoding_effect": FigureCaption(
        "Encoding effect: Census as PUMS integer codes against text labels.",
        "DRS per synthesizer for each encoding × condition (colour), one panel per provider/model.",
        "n on each bar = valid trials of the cell.",
        "Error bars: 95 % bootstrap interval of the DRS.",
        _DRS_READING + " Only the codes encoding is drawn unless the run includes census-labels."),
    "protocol_effect": FigureCaption(
        "The paper's fixed 20-row sample repeats one prompt; fresh samples do not.",
        "Effective N (distinct prompts, or distinct answers where the paper's records hold no prompt) against "
        "the valid trials of each cell; colour = protocol (ours: fresh samples; the paper's: fixed sample).",
        "n = valid trials per cell (x); one point per cell.",
        "None: counts.",
        "On the dashed diagonal: every trial is a distinct sample (the trials are independent); far below it: "
        "the trials repeat one prompt and their n overstates the evidence."),
    "probability_roc": FigureCaption(
        "The verdict as a probability: ROC curves of the label score.",
        "ROC curve of the score log P(SYNTHETIC) − log P(REAL) per cell (true-positive rate against false-positive "
        "rate, a synthetic sample being the positive class); legend: the cell's AUC.",
        "n = real and synthetic samples scored in the cell (columns n_real, n_syn of "
        "results/tables/llm_probability_cells.csv).",
        "The AUC's 95 % score interval and its permutation p-value are in the table (auc_ci_low, auc_ci_high, "
        "auc_p_value).",
        "AUC 0.5 (the diagonal): the score does not rank the labels; 1: every synthetic sample ranked above every "
        "real one; 0: perfectly the wrong way round (a ranking an adversary with a few labelled samples would flip)."),
    "probability_raw_vs_calibrated": FigureCaption(
        "DRS of the probability score under three decisions: raw, batch-calibrated, contextual.",
        "Per cell, the DRS when SYNTHETIC is decided by p_synthetic > 0.5 (raw, the model's bias included), by "
        "the cell's median score (batch-calibrated) or by a content-free table's score (contextual); neither "
        "calibration reads the cell's labels.",
        "n = real and synthetic samples scored in the cell (n_real, n_syn in "
        "results/tables/llm_probability_cells.csv).",
        "Intervals, where drawn, are those of results/tables/llm_probability_cells.csv.",
        _DRS_READING),
    "likelihood_scores": FigureCaption(
        "Table likelihood: how probable the model finds each 20-row sample.",
        "Per dataset × model panel, the mean token log-likelihood of each sample's table (nats per token), real "
        "holdout first, then each release and both controls (columns shuffled; real train rows as real_vs_real); "
        "x labels carry each group's AUC against real holdout.",
        "n = samples per group (points); columns n_real, n_syn of results/tables/likelihood_cells.csv.",
        "None drawn: the AUC's 95 % score interval and permutation p are in results/tables/likelihood_cells.csv.",
        "AUC 0.5: the release's tables are as probable as real ones; near 0: less probable (odd values); near 1: "
        "more probable (collapsed, repetitive values). It reads values: the shuffled-columns control sits near 0.5."),
    "likelihood_columns": FigureCaption(
        "Which columns make a release's rows improbable.",
        "Per dataset × model panel, the columns with the largest difference: each group's mean nats per row spent "
        "on that column minus real holdout's, one colour per release or control.",
        "n = samples per group, as in results/tables/likelihood_columns.csv.",
        "None: means of the per-sample splits; the per-sample values are in the likelihood records.",
        "0: the column costs as many nats as in real rows (as real_vs_real should, like an AUC of 0.5); above 0: "
        "the group's values of that column are less probable than real ones."),
    "joint_contrast": FigureCaption(
        "Joint structure: does each 20-row sample hold together as real rows do?",
        "Per dataset panel, the contrast C = log P(sample) − mean log P(its values recombined within the same rows) "
        "of each sample, real holdout first, then each release and both controls (columns shuffled; real train "
        "rows as real_vs_real); bars = medians; x labels carry each group's AUC against real holdout.",
        "n = samples per group (points); columns n_real, n_syn of results/tables/joint_cells.csv.",
        "None drawn: the AUC's 95 % score interval and permutation p are in results/tables/joint_cells.csv.",
        "C near 0: the model sees no tie between the columns (the shuffled-columns control must sit there); real "
        "rows well above 0. AUC 0.5: not told apart; below 0.5: the group holds together less than real rows."),
    "joint_dependence": FigureCaption(
        "Which columns became less predictable from the columns before them (the free split of C).",
        "Heatmap per dataset: rows = columns of the table, columns = each release and control; colour = the "
        "group's mean share of C for that column minus real holdout's (nats per sample).",
        "n = samples per group, as in results/tables/joint_columns.csv.",
        "None: means of the per-sample splits; the per-sample values are in the joint records.",
        "0 (white): as in real rows (what the real-vs-real column shows, like an AUC of 0.5); blue: that column is "
        "less predictable from the columns before it than in real rows (the free split credits a tie to its later "
        "column, so an early column of a lost tie can stay white); red: more regular than real rows (a collapsed "
        "synthesizer)."),
    "headline": FigureCaption(
        "How far each release and control is from real data, per instrument (the README's figure).",
        "Per dataset (panel) and release or control (row), one marker per instrument: C2ST (gradient-boosted trees "
        "on rows), table likelihood, joint structure and verdict probability (C1) of the language model the title "
        "names; filled = the direction the instrument's positive control must show (less probable, less "
        "structured, called synthetic more often), hollow = the other way.",
        "n = samples of 20 rows a group for the sample instruments (in the title; results/tables/*_cells.csv), "
        "thousands of rows a side for the C2ST.",
        "Bars: the 95 % score interval of the AUC, mapped to D; none for the C2ST (narrower than its marker).",
        "D = 2·|AUC − 0.5|: 0 = not told apart, 1 = every sample told apart; a control only counts when the "
        "results table's control rule says so."),
    "discriminators_side_by_side": FigureCaption(
        "Every discriminator side by side, on one scale.",
        "Per dataset (panel) and synthesizer or control (row), one marker per discriminator × statistic × model × "
        "condition, top to bottom as in the legend: the LLM's verdict (DRS), the verdict as a probability (AUC of "
        "log P(SYNTHETIC) − log P(REAL), batch-calibrated and contextual DRS), the likelihood discriminator (AUC "
        "of the mean token log-likelihood, band-rule DRS; its real-vs-real control drawn as real_holdout), the "
        "joint-structure contrast (AUC of C, band-rule DRS, read the same way; condition = serialisation, "
        "permutations k, reference rows m), the C2ST (out-of-fold ROC-AUC per classifier) and the human pilot "
        "(pooled annotators' DRS; the pilot labelled the paper's samples, not this run's). Colour = discriminator; circle = an AUC read as separation "
        "2·|AUC − 0.5|, other markers = a DRS; open = C2.",
        "n beside each marker = valid trials (LLM verdict), scored samples (probability, likelihood, joint), rows "
        "(C2ST, where its table gives them) or labels (human pilot); column n of "
        "results/tables/discriminators_side_by_side.csv.",
        "Bars: each statistic's 95 % interval (bootstrap for a DRS, score intervals for the LLM's, the likelihood's and "
        "the joint contrast's AUC, Nadeau–Bengio corrected for the C2ST; none where the C2ST comes from the "
        "headline table), an AUC's mapped end by end and starting at 0 when it holds 0.5.",
        "Separation 0: chance (AUC 0.5); 1: perfect separation either way (AUC 0 or 1; the direction is in the "
        "table). DRS 0: cannot tell; about 0.5 (dotted): what balanced guessing gets; 1: every sample told apart. "
        "The two readings agree at 1, not at chance: compare a DRS with a DRS and a separation with a separation."),
}


@dataclass(frozen=True)
class ResearchQuestion:
    """One question of the study and where in the supplementary it is answered."""

    key: str
    question: str
    notebook: str
    """Notebook number (``"07"``) whose section answers it."""
    section: str
    """Heading number in that notebook (``"3"`` for ``## 3. …``); an empty string points to the page."""
    figures: tuple[str, ...] = ()
    table: str = ""
    """The results table (``results/tables/<table>.csv``) holding the numbers."""


RESEARCH_QUESTIONS: tuple[ResearchQuestion, ...] = (
    ResearchQuestion("RQ1", "Can an LLM shown a 20-row sample tell a REAL table from a SYNTHETIC release?",
                     "07", "2", ("drs_by_cell", "drs_decomposition", "label_bias_confidence"), "llm_cells"),
    ResearchQuestion("RQ2", "Does the metadata block (C2: table + distributional statistics) change the DRS?",
                     "07", "3", ("condition_change",), "llm_condition_tests"),
    ResearchQuestion("RQ3", "Do the paper's numbers follow from its own counts and its own trial records?",
                     "08", "2", ("seed_stability",), "paper_cells_from_trials"),
    ResearchQuestion("RQ4", "How many independent trials does a cell hold: the fixed sample against fresh ones?",
                     "07", "9", ("protocol_effect",), "llm_effective_n"),
    ResearchQuestion("RQ5", "Does the LLM order the releases as classifier two-sample tests and distances do?",
                     "07", "5", ("llm_vs_baselines",), "llm_baseline_agreement"),
    ResearchQuestion("RQ6", "Can people tell real from synthetic samples, and do they agree with the LLM?",
                     "06", "", ("human_vs_llm",), "human_totals"),
    ResearchQuestion("RQ7", "Is the model's stated confidence calibrated?", "07", "7", ("calibration",), ""),
    ResearchQuestion("RQ8", "Does the encoding of Census (integer codes or text labels) change the DRS?",
                     "07", "8", ("encoding_effect",), "llm_cells"),
    ResearchQuestion("RQ9", "Does the model's probability for each label rank real and synthetic samples where "
                     "its verdict does not?", "07", "1b", ("probability_roc", "probability_raw_vs_calibrated"),
                     "llm_probability_cells"),
    ResearchQuestion("RQ10", "Side by side on one scale, how well do the LLM's verdicts and probabilities, the "
                     "likelihood discriminator, the joint-structure contrast, the C2ST and the human pilot tell each "
                     "release apart?", "07", "5b",
                     ("discriminators_side_by_side",), "discriminators_side_by_side"),
    ResearchQuestion("RQ11", "How probable does a language model find the rows of a real holdout sample against a "
                     "synthetic one (no verdict, no training), and does it see the positive control?", "09", "3", (),
                     "likelihood_cells"),
    ResearchQuestion("RQ12", "Which cues do models and people cite, and are the cited facts true of the rows shown?",
                     "10", "", (), "cues_validity"),
    ResearchQuestion("RQ13", "Does a release keep the combinations of values real rows have — do a row's values "
                     "belong together — and which columns became less predictable from the columns before them?", "07", "5a",
                     ("joint_contrast", "joint_dependence"), "joint_cells"),
)

TABLE_DESCRIPTIONS: dict[str, str] = {
    "joint_cells": "Joint structure per dataset × release and control: AUC of the contrast C = log P(sample) − mean "
                   "log P(values recombined within the sample) against real holdout samples (95 % score interval, "
                   "permutation p), the reference-band decision (p_REAL, p_SYN, DRS), the KS test of the "
                   "per-sample p-values' calibration (notebook 09 § 6); each group's mean variety (distinct values "
                   "per column, 0–1) beside it, and the same reading of C adjusted for variety (score "
                   "contrast_adjusted: C minus a line of C on variety fitted on the real reference samples).",
    "joint_columns": "Joint structure per column: each column's share of C (how much less predictable from the columns before it; C_j, each column permuted alone, where measured), real holdout against each release "
                     "and control, and their difference (negative: the group lost that column's ties; notebook 09 "
                     "§ 6).",
    "llm_cells": "Our LLM trials scored per dataset × synthesizer × condition × provider/model: n, p_REAL and "
                 "p_SYN with Wilson 95 % intervals, DRS with its 95 % bootstrap interval (notebook 07).",
    "llm_probability_cells": "The verdict as a probability per cell: AUC of log P(SYNTHETIC) − log P(REAL) "
                             "with its 95 % score interval and permutation p-value; raw, batch-calibrated and "
                             "contextual DRS (notebook 07).",
    "discriminators_side_by_side": "Every discriminator per dataset × synthesizer (and control) on one scale: "
                                   "separation 2·|AUC − 0.5| or DRS, with the statistic, its 95 % interval, n "
                                   "and the AUC's direction (notebook 07 § 5b).",
    "llm_condition_tests": "Permutation tests of DRS(C2) − DRS(C1) per cell (3,000 shuffles; notebook 07).",
    "llm_effective_n": "Effective N (distinct prompts or answers) per cell, ours and the paper's (notebook 07).",
    "llm_baseline_agreement": "Kendall's τ between the LLM's DRS and each baseline across synthesizers.",
    "baselines_headline": "C2ST, DCR, linkage and Anonymeter headline per dataset × synthesizer (notebook 05).",
    "human_totals": "Human pilot per annotator and condition: n, p_REAL, p_SYN, DRS with intervals (notebook 06).",
    "human_cells": "Human pilot per annotator × dataset × synthesizer × condition (notebook 06).",
    "human_deltas": "Human pilot: C2 − C1 per annotator and cell (notebook 06).",
    "human_confidence": "Human pilot: stated confidence when right and when wrong (notebook 06).",
    "human_agreement": "Human against LLM DRS: Spearman ρ and Bland–Altman limits (notebook 06).",
    "human_agreement_cells": "The cells the human–LLM agreement is computed over (notebook 06).",
    "human_problems": "Problems found in the label files (empty when none; notebook 06).",
    "paper_cells_from_counts": "The paper's cells recomputed from its published counts, beside its numbers.",
    "paper_cells_from_trials": "The paper's cells recomputed from its own trial records, beside its numbers.",
    "paper_models_from_counts": "The paper's per-model totals from its published counts.",
    "paper_models_from_trials": "The paper's per-model totals recomputed from its trial records.",
    "paper_datasets_from_counts": "The paper's per-dataset totals from its published counts.",
    "paper_datasets_from_trials": "The paper's per-dataset totals recomputed from its trial records.",
    "paper_cell_scores": "The paper's trials scored as ours are: intervals and effective N per cell.",
    "paper_fair_cells": "The paper's fair cells: both models with ≥ 8 valid trials.",
    "paper_matched_n": "The paper's matched-N analysis, reproduced (seed 2026).",
    "paper_seed_stability": "The paper's matched-N DRS over seeds 1000–1049.",
    "paper_permutation": "The paper's C1 → C2 permutation tests, reproduced (seed 20260531).",
    "paper_effective_n": "Distinct answers per cell of the paper's trials (the repeated prompt).",
    "cues_validity": "Cited facts checked against the rows shown, per source × model × true label: true, false "
                     "and not checkable, counted by mention and by distinct claim (`distinct_*`), each with a "
                     "Wilson 95 % interval; trivially true kinds (no missing values, the row count) in their own "
                     "``trivial`` row, the headline is ``substantive`` (notebook 10).",
    "cues_validity_by_kind": "Cited facts checked against the rows shown, per claim kind, by mention and by "
                             "distinct claim (notebook 10).",
    "cues_validity_by_cell": "Cited facts checked against the rows shown, per source × model × dataset × "
                             "synthesizer × true label, by mention and by distinct claim (notebook 10).",
    "paper_sample_checks": "The paper's Census samples rebuilt as it drew them (20 rows, random_state 42) from its "
                           "extract and releases, per cell: the figures its records quote (C2 metadata statistics, "
                           "row values) against the rebuilt file and rows, and whether the sample is the one shown "
                           "(verified, disputed, mismatch: a later regeneration) (notebook 10).",
    "paper_sample_check_details": "Every distinct figure the paper's Census records quote of their sample, quoted "
                                  "against rebuilt, with the chance of a match by luck (notebook 10).",
    "cues_parser_coverage": "Share of cue strings in which the claim parser found any checkable claim, overall, "
                            "per field, per cue theme and per claim kind, with Wilson 95 % intervals: strings "
                            "without a claim are counted here (notebook 10).",
    "cues_parser_accuracy": "The claim parser's recall and precision on two hand-checked sets: claims of real cue "
                            "strings, and paraphrased cues on small tables of known truth (kind and truth "
                            "right), with Wilson 95 % intervals (notebook 10).",
}


class _Counts(dict):
    """Placeholder values for :func:`caption_text`: a count the run's tables do not give reads 'not available'."""

    def __missing__(self, key: str) -> str:
        return "not available"


def caption_text(name: str, counts: Mapping[str, object] | None = None) -> str:
    """The caption of figure ``name`` as one paragraph of Markdown.

    Args:
        name: the figure's file name without suffix (``drs_by_cell``).
        counts: values for the caption's placeholders (``n_valid``, ``n_cells``, ``n_human``); missing ones
            read "not available".

    Returns:
        ``**title** plotted n interval reading``; for a figure with no entry in :data:`FIGURE_CAPTIONS`, a
        caption saying that one is missing (the build does not fail over it).
    """
    caption = FIGURE_CAPTIONS.get(name)
    if caption is None:
        return (f"**{name}.** No caption is recorded for this figure yet: add one to "
                "`llmdisc.pipeline.captions.FIGURE_CAPTIONS`.")
    values = _Counts(counts or {})
    parts = [caption.plotted, caption.n.format_map(values), caption.interval, caption.reading]
    return f"**{caption.title}** " + " ".join(parts)
