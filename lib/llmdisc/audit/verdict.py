"""The plain-language verdict of an audit, with its uncertainty.

How the figures are read (DRS = min(p_REAL, p_SYN), PROTOCOL §1):

- the LLM **told the release apart** in a condition when the lower end of the DRS 95 % interval is above
  0.5 (it recognised both real and synthetic samples more often than a coin flip would);
  it **could not tell** when the DRS point estimate is at most 0.5 (a coin flip scores about 0.5, an
  answerer that always says one label scores 0); in between the result is **inconclusive**;
- the evidence is **thin** when a condition has fewer than :data:`THIN_VALID_PER_LABEL` valid answers per
  label or its DRS interval is wider than :data:`THIN_CI_WIDTH` (with very few trials the bootstrap
  interval can even collapse to a point, which understates the uncertainty);
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


def make_verdict(conditions: Sequence[dict[str, Any]], checks: dict[str, Any] | None) -> Verdict:
    """Write the verdict from the per-condition scores and the non-LLM checks.

    Args:
        conditions: :func:`llmdisc.audit.llm.condition_scores` output.
        checks: :func:`llmdisc.audit.checks.run_checks` output (None: not run).

    Returns:
        The :class:`Verdict`.
    """
    details = [_condition_sentence(row) for row in conditions]
    thin = any(is_thin(row) for row in conditions) or not conditions
    outcomes = [condition_outcome(row) for row in conditions]
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
    figures = "; ".join(
        f"{row['condition']}: DRS {_f(row['drs'])}, 95 % CI {_f(row['drs_ci_low'])}–"
        f"{_f(row['drs_ci_high'])}, n={row['n_valid']}"
        for row in conditions
    )
    headline = f"{llm}" + (f" ({figures})" if figures else "")
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
            f" The evidence is thin (fewer than {THIN_VALID_PER_LABEL} valid answers per label or a DRS "
            f"interval wider than {THIN_CI_WIDTH:.1f}): run more trials (--trials) before relying on it."
        )
    return Verdict(
        headline=headline,
        details=tuple(details),
        thin_evidence=thin,
        drs_upper_bound=drs_upper_bound(conditions),
    )
