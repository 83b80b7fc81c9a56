"""The plain-language verdict of an audit, with its uncertainty.

How the figures are read (DRS = min(p_REAL, p_SYN), PROTOCOL §1):

- the LLM **told the release apart** in a condition when the lower end of the DRS 95 % interval is above
  0.5 (it recognised both real and synthetic samples more often than a coin flip would);
  it **could not tell** when the DRS point estimate is at most 0.5 (a coin flip scores about 0.5, an
  answerer that always says one label scores 0); in between the result is **inconclusive**;
- with label scores (``--scoring probability`` or ``both``, the *probability reading*) the LLM **told the
  release apart** in a condition when the 95 % interval of the AUC of ``p_synthetic`` excludes 0.5 (either
  direction: a ranking the wrong way round still tells the samples apart), and **could not tell** otherwise;
- the evidence is **thin** when a condition has fewer than :data:`THIN_VALID_PER_LABEL` valid answers per
  label or its DRS (probability reading: AUC) interval is wider than :data:`THIN_CI_WIDTH` (with very few
  trials the intervals can even collapse to a point, which understates the uncertainty);
- the audit is **inconclusive** (:mod:`~llmdisc.audit.decision`) when the discriminator failed its positive
  control or too few trials were valid: the headline says so first;
- the negative control (real rows in the synthetic class) should be at chance; when its AUC interval
  excludes 0.5 the verdict warns that the discriminator's figures carry a bias;
- the classifier test (C2ST) **could** tell the tables apart when the lower end of its AUC interval is above
  0.5 (the larger AUC of the two classifiers is quoted);
- with a holdout, synthetic records sit **closer than fresh real data** when the lower end of the
  DCR-share interval is above 0.5.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

THIN_VALID_PER_LABEL = 10
"""Fewer valid answers per label than this in a condition: the evidence is thin."""
THIN_CI_WIDTH = 0.3
"""A DRS interval wider than this: the evidence is thin."""
CONDITION_NAMES = {"C1": "table only", "C2": "table + metadata"}


@dataclass(frozen=True)
class Verdict:
    """The verdict and what it rests on.

    Attributes:
        headline: one or two sentences for a release manager.
        details: one sentence per figure (each condition, C2ST, distances, Anonymeter).
        thin_evidence: True when any condition's evidence is thin (see the module docstring).
        drs_upper_bound: max over conditions of the DRS 95 % upper bound (fraction); 1.0 when some condition
            has no DRS (no valid answer for a label): nothing can be certified then. None without conditions.
    """

    headline: str
    details: tuple[str, ...] = field(default_factory=tuple)
    thin_evidence: bool = False
    drs_upper_bound: float | None = None


def _f(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _ci(est: dict[str, Any] | None) -> str:
    if not est:
        return "n/a"
    return f"{_f(est['value'])}, 95 % CI {_f(est['ci_low'])}–{_f(est['ci_high'])}"


def condition_outcome(row: dict[str, Any]) -> str:
    """``told apart``, ``could not tell``, ``inconclusive`` or ``no answer`` for one condition's scores."""
    if row.get("drs") is None:
        return "no answer"
    if row["drs_ci_low"] is not None and row["drs_ci_low"] > 0.5:
        return "told apart"
    if row["drs"] <= 0.5:
        return "could not tell"
    return "inconclusive"


def is_thin(row: dict[str, Any]) -> bool:
    """True when a condition rests on few valid answers or a wide DRS interval."""
    if row.get("drs") is None:
        return True
    few = min(row["n_valid_real"], row["n_valid_syn"]) < THIN_VALID_PER_LABEL
    return few or (row["drs_ci_high"] - row["drs_ci_low"]) > THIN_CI_WIDTH


def drs_upper_bound(conditions: Sequence[dict[str, Any]]) -> float | None:
    """Max over conditions of the DRS 95 % upper bound (1.0 if one has none; None without conditions)."""
    if not conditions:
        return None
    return max(1.0 if row.get("drs_ci_high") is None else float(row["drs_ci_high"]) for row in conditions)


def _condition_sentence(row: dict[str, Any]) -> str:
    name = f"{row['condition']} ({CONDITION_NAMES.get(row['condition'], row['condition'])})"
    figures = (
        f"DRS {_f(row['drs'])}, 95 % CI {_f(row['drs_ci_low'])}–{_f(row['drs_ci_high'])}, "
        f"n={row['n_valid']}; p_REAL {_f(row['p_real'])}, p_SYN {_f(row['p_syn'])}"
    )
    outcome = condition_outcome(row)
    if outcome == "no answer":
        return (
            f"{name}: no DRS — the LLM gave no valid answer for at least one label "
            f"({row['n_invalid']} invalid, {row['n_error']} failed of {row['n_total']} trials)."
        )
    text = {
        "told apart": "the LLM told the release apart from real data",
        "could not tell": "the LLM could not tell the release from real data",
        "inconclusive": "the LLM may tell the release apart, but the interval reaches chance level",
    }[outcome]
    return f"{name}: {text} ({figures})."


def _c2st_best(c2st: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    found = [
        (name, res["auc"])
        for name, res in c2st.get("classifiers", {}).items()
        if res["auc"]["value"] is not None
    ]
    return max(found, key=lambda item: item[1]["value"]) if found else None


def _c2st_sentence(c2st: dict[str, Any]) -> tuple[str, str]:
    best = _c2st_best(c2st)
    if best is None:
        note = "; ".join(c2st.get("notes", [])) or "not run"
        return f"Classifier test: {note}.", "the classifier test was not run"
    name, auc = best
    could = auc["ci_low"] is not None and auc["ci_low"] > 0.5
    strength = " only slightly" if could and auc["value"] < 0.6 else ""
    short = f"the classifier test {'could' if could else 'could not'}{strength} (AUC {_ci(auc)})"
    return (
        f"Classifier test ({name}, {c2st['rows_per_table']} rows per table): it "
        f"{'could' if could else 'could not'}{strength} tell the tables apart "
        f"(AUC {_ci(auc)}; 0.5 = indistinguishable, 1 = separable).",
        short,
    )


def _distance_sentences(distances: dict[str, Any]) -> list[str]:
    copies = distances["exact_copy_rate"]
    copy_text = (
        f"{100 * copies['value']:.1f} % of {copies['n']} synthetic records are exact copies of real rows "
        f"(95 % CI {100 * copies['ci_low']:.1f}–{100 * copies['ci_high']:.1f} %)"
    )
    if not distances["with_holdout"]:
        return [
            f"Distances: median distance to the closest real record {_f(distances['median_dcr_synthetic'])} "
            f"(0 = identical, 1 = differs in every column); {copy_text}. No holdout was given, so these "
            "are not compared with fresh real records (pass --holdout for that)."
        ]
    share = distances["share_closer_than_holdout_median"]
    closer = share["ci_low"] is not None and share["ci_low"] > 0.5
    return [
        f"Distances: {_f(share['value'])} of synthetic records are closer to the real rows than the "
        f"median real holdout record (95 % CI {_f(share['ci_low'])}–{_f(share['ci_high'])}; "
        "0.5 = like fresh real data) — "
        + (
            "closer than fresh real data, a sign of memorisation"
            if closer
            else "no closer than fresh real data"
        )
        + f"; {copy_text} (real holdout: {100 * distances['holdout_exact_copy_rate']['value']:.1f} %)."
    ]


def _attack_sentence(attacks: list[dict[str, Any]] | None, note: str) -> str:
    if not attacks:
        return note + "." if note else ""
    parts = [f"{a['attack'].replace('_', ' ')} risk {_ci(a['risk'])}" for a in attacks]
    return "Anonymeter (excess success over the holdout control; 0 = none): " + "; ".join(parts) + "."


def probability_outcome(row: dict[str, Any]) -> str:
    """``told apart``, ``could not tell`` or ``no answer`` for one condition's label scores (AUC of p_synthetic)."""
    prob = row.get("probability") or {}
    if prob.get("auc") is None or prob.get("auc_ci_low") is None:
        return "no answer"
    if prob["auc_ci_low"] > 0.5 or prob["auc_ci_high"] < 0.5:
        return "told apart"
    return "could not tell"


def _probability_figures(prob: dict[str, Any]) -> str:
    context = (f", contextual {_f(prob['context_drs'])} ({_f(prob['context_drs_ci_low'])}–"
               f"{_f(prob['context_drs_ci_high'])})" if prob.get("context_drs") is not None else "")
    return (f"AUC of p_synthetic {_f(prob['auc'])}, 95 % CI {_f(prob['auc_ci_low'])}–{_f(prob['auc_ci_high'])}"
            f" (p = {_f(prob['auc_p_value'])}, {prob['auc_direction']}); calibrated DRS {_f(prob['batch_drs'])} "
            f"({_f(prob['batch_drs_ci_low'])}–{_f(prob['batch_drs_ci_high'])}){context}; raw DRS "
            f"{_f(prob['raw_drs'])}; n={prob['n_real']}+{prob['n_syn']}")


def _probability_sentence(row: dict[str, Any]) -> str:
    name = f"{row['condition']} ({CONDITION_NAMES.get(row['condition'], row['condition'])})"
    prob = row.get("probability") or {}
    outcome = probability_outcome(row)
    if outcome == "no answer":
        return (f"{name}: no AUC — too few valid label scores for a label ({prob.get('n_invalid', 0)} invalid, "
                f"{prob.get('n_error', 0)} failed).")
    text = {"told apart": "the label scores rank the release apart from real data",
            "could not tell": "the label scores do not rank the release apart from real data (the AUC interval "
                              "holds 0.5)"}[outcome]
    return f"{name}: {text} ({_probability_figures(prob)})."


def _thin_probability(row: dict[str, Any]) -> bool:
    prob = row.get("probability") or {}
    if prob.get("auc_ci_low") is None:
        return True
    few = min(prob["n_real"], prob["n_syn"]) < THIN_VALID_PER_LABEL
    return few or (prob["auc_ci_high"] - prob["auc_ci_low"]) > THIN_CI_WIDTH


def _negative_sentences(negative: Sequence[dict[str, Any]], reading: str) -> list[str]:
    out = []
    for row in negative:
        if reading == "probability":
            prob = row.get("probability") or {}
            low, high, auc = prob.get("auc_ci_low"), prob.get("auc_ci_high"), prob.get("auc")
        else:
            found = row.get("verdict_auc") or {}
            low, high, auc = found.get("ci_low"), found.get("ci_high"), found.get("auc")
        if low is not None and (low > 0.5 or high < 0.5):
            out.append(f"Negative control, {row['condition']}: real rows in the synthetic class get AUC {auc:.2f} "
                       f"(95 % CI {low:.2f}–{high:.2f}), not chance: the discriminator tells real rows apart from "
                       "real rows, so its figures on the release carry that bias.")
    return out


def make_verdict(conditions: Sequence[dict[str, Any]], checks: dict[str, Any] | None, *, reading: str = "verdict",
                 decision: Any = None, negative: Sequence[dict[str, Any]] = ()) -> Verdict:
    """Write the verdict from the per-condition scores and the non-LLM checks.

    Args:
        conditions: the release cell's rows (:func:`llmdisc.audit.scores.cell_rows`).
        checks: :func:`llmdisc.audit.checks.run_checks` output (None: not run).
        reading: ``verdict`` (the generated verdict's DRS) or ``probability`` (the label scores' AUC).
        decision: the :class:`~llmdisc.audit.decision.Decision` (None: not decided); an inconclusive one leads
            the headline with its reasons.
        negative: the negative-control rows (a warning when one is not at chance).

    Returns:
        The :class:`Verdict`.
    """
    probability = reading == "probability"
    details = [_condition_sentence(row) for row in conditions if row.get("n_total") is not None]
    if probability:
        details += [_probability_sentence(row) for row in conditions]
    details += _negative_sentences(negative, reading)
    thin = any((_thin_probability if probability else is_thin)(row) for row in conditions) or not conditions
    outcomes = [(probability_outcome if probability else condition_outcome)(row) for row in conditions]
    if not conditions:
        llm = "No LLM trial was scored"
    elif "told apart" in outcomes:
        llm = "The LLM told the release apart from real data"
    elif all(o == "could not tell" for o in outcomes):
        llm = "The LLM could not tell the release from real data"
    elif "no answer" in outcomes and all(o in ("no answer", "could not tell") for o in outcomes):
        llm = "The LLM gave too few valid answers to judge the release"
    else:
        llm = "The LLM may tell the release apart, but not conclusively"
    if probability:
        figures = "; ".join(
            f"{row['condition']}: AUC {_f((row.get('probability') or {}).get('auc'))}, 95 % CI "
            f"{_f((row.get('probability') or {}).get('auc_ci_low'))}–"
            f"{_f((row.get('probability') or {}).get('auc_ci_high'))}, calibrated DRS upper bound "
            f"{_f((row.get('probability') or {}).get('calibrated_drs_ci_high'))}, "
            f"n={(row.get('probability') or {}).get('n_real', 0)}+{(row.get('probability') or {}).get('n_syn', 0)}"
            for row in conditions)
    else:
        figures = "; ".join(
            f"{row['condition']}: DRS {_f(row['drs'])}, 95 % CI {_f(row['drs_ci_low'])}–"
            f"{_f(row['drs_ci_high'])}, n={row['n_valid']}"
            for row in conditions
        )
    headline = f"{llm}" + (f" ({figures})" if figures else "")
    if decision is not None and decision.outcome == "inconclusive":
        headline = ("INCONCLUSIVE — this audit can neither pass nor fail the release: "
                    + "; ".join(decision.reasons) + ". " + headline)
    if checks is not None:
        c2st_detail, c2st_short = _c2st_sentence(checks["c2st"])
        headline += f"; {c2st_short}."
        details.append(c2st_detail)
        details += _distance_sentences(checks["distances"])
        attack = _attack_sentence(checks.get("anonymeter"), checks.get("anonymeter_note", ""))
        if attack:
            details.append(attack)
    else:
        headline += "."
    if thin:
        headline += (
            f" The evidence is thin (fewer than {THIN_VALID_PER_LABEL} valid answers per label or an "
            f"{'AUC' if probability else 'DRS'} interval wider than {THIN_CI_WIDTH:.1f}): run more trials "
            "(--trials) before relying on it."
        )
    return Verdict(
        headline=headline,
        details=tuple(details),
        thin_evidence=thin,
        drs_upper_bound=drs_upper_bound(conditions) if any(r.get("n_total") is not None for r in conditions)
        else None,
    )


def column_notes(identifiers: list[dict[str, Any]], excluded: dict[str, str], kept: bool) -> list[str]:
    """Verdict lines on the key columns (their ranges) and the columns left out of every discriminator."""
    notes = []
    for key in identifiers:
        where = ("kept in every discriminator (--keep-ids)" if kept else
                 "left out of the LLM samples, the C2ST, DCR and Anonymeter (--keep-ids keeps it)")
        sentence = key["sentence"]
        notes.append(f"{sentence[0].upper()}{sentence[1:]}; {where}.")
    pii = [f"{c} ({r})" for c, r in excluded.items() if r.startswith("personal information")]
    if pii:
        notes.append("Left out as personal information (by their --metadata sdtype): " + ", ".join(pii) + ".")
    return notes
