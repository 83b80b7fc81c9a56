"""Sections of ``report.html`` for the outcome, the cells beside their controls, the likelihood and the cues.

Each function takes the audit's figures (what ``audit.json`` holds) and returns HTML fragments (escaped text);
:func:`llmdisc.audit.report.render_html` places them.
"""

from __future__ import annotations

import html
from typing import Any, Callable, Sequence

Table = Callable[[Sequence[str], Sequence[Sequence[Any]]], str]
"""``report._table``: header and rows to an HTML table."""

CELL_NAMES = {"release": "release", "shuffled_columns": "positive control (columns shuffled)",
              "real_holdout": "negative control (real rows as synthetic)"}
OUTCOME_TEXT = {
    "pass": "PASSED the release gate",
    "fail": "FAILED the release gate",
    "inconclusive": "INCONCLUSIVE — neither a pass nor a fail (exit 11)",
    "conclusive": "conclusive (no --fail-above gate was set)",
}


def _f(value: Any, digits: int = 2) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _ci(value: Any, low: Any, high: Any) -> str:
    return "n/a" if value is None else f"{value:.3f} ({_f(low, 3)}–{_f(high, 3)})"


def decision_section(result: dict[str, Any]) -> list[str]:
    """The outcome box: pass / fail / inconclusive, the gate statistic's bound, the reasons and the rule."""
    decision = result.get("decision") or {}
    outcome = decision.get("outcome", "conclusive")
    parts = [f'<div class="verdict{" fail" if outcome in ("fail", "inconclusive") else ""}">'
             f"<strong>Outcome: {html.escape(OUTCOME_TEXT.get(outcome, outcome))}</strong>"]
    if decision.get("fail_above") is not None:
        parts.append(f"<br>Gate: {html.escape(decision['gate_statistic'])} (--gate {html.escape(decision['gate'])}) "
                     f"95 % upper bound {_f(decision.get('upper_bound'), 3)} vs --fail-above "
                     f"{_f(decision['fail_above'], 3)}.")
    if decision.get("reasons"):
        parts.append("<ul>" + "".join(f"<li>{html.escape(r)}</li>" for r in decision["reasons"]) + "</ul>")
    out = ["".join(parts) + "</div>"]
    if decision.get("rule"):
        out.append(f'<p class="muted">Rule: {html.escape(decision["rule"])}</p>')
    return out


def _cell_rows(result: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    out = [("release", row) for row in result["conditions"]]
    for name, control in (result.get("controls") or {}).items():
        out += [(name, row) for row in control.get("conditions") or []]
    order = {c: i for i, c in enumerate(["release", "shuffled_columns", "real_holdout"])}
    return sorted(out, key=lambda item: (item[1]["condition"], order.get(item[0], 9)))


def cells_section(result: dict[str, Any], table: Table) -> list[str]:
    """Per condition, the release and its two controls side by side: probability and verdict figures."""
    rows = []
    for cell, row in _cell_rows(result):
        prob = row.get("probability") or {}
        disc = prob.get("discrimination") or {}
        rows.append([
            row["condition"], CELL_NAMES.get(cell, cell),
            _ci(prob.get("auc"), prob.get("auc_ci_low"), prob.get("auc_ci_high")),
            _f(prob.get("auc_p_value"), 4), prob.get("auc_direction") or "n/a",
            _ci(disc.get("value"), disc.get("ci_low"), disc.get("ci_high")),
            _ci(prob.get("batch_drs"), prob.get("batch_drs_ci_low"), prob.get("batch_drs_ci_high")),
            _ci(prob.get("context_drs"), prob.get("context_drs_ci_low"), prob.get("context_drs_ci_high")),
            _ci(prob.get("raw_drs"), prob.get("raw_drs_ci_low"), prob.get("raw_drs_ci_high")),
            f"{prob.get('n_real', 0)} + {prob.get('n_syn', 0)}" if prob else "n/a",
            _ci(row.get("drs"), row.get("drs_ci_low"), row.get("drs_ci_high")),
            f"{row.get('n_valid_real') or 0} + {row.get('n_valid_syn') or 0}" if row.get("n_total") is not None
            else "n/a",
        ])
    header = ["condition", "cell", "AUC of p_synthetic (95 % CI)", "permutation p", "direction",
              "2·|AUC − 0.5| (95 % CI)", "calibrated DRS, batch (95 % CI)", "calibrated DRS, contextual (95 % CI)",
              "raw DRS (95 % CI)", "valid scores REAL + SYN", "verdict DRS (95 % CI)", "valid verdicts REAL + SYN"]
    free = result.get("content_free") or {}
    notes = [
        "AUC: P(a synthetic-class sample gets a higher p_synthetic than a real one); 0.5 = no ranking, 1 = every "
        "synthetic sample above every real one, 0 = perfectly the wrong way round (direction 'lower'). "
        "2·|AUC − 0.5| reads it two-sided: 0 = chance, 1 = perfect either way. DRS = min(p_REAL, p_SYN): 0 = "
        "nothing told apart, 0.5 = chance-level balanced guessing, 1 = every sample told apart. Raw: SYNTHETIC "
        "when p_synthetic > 0.5 (the model's own bias included); batch-calibrated: SYNTHETIC above the cell's median "
        "log-odds; contextual: SYNTHETIC above the log-odds of a content-free table (every cell N/A).",
        "Positive control: the real rows with every column shuffled independently (each value real, the joint "
        "structure destroyed); a discriminator must tell it apart. Negative control: real rows in the synthetic "
        "class; it must score at chance. Both share the release's REAL samples.",
    ]
    if free.get("status") != "scored":
        notes.append(f"Contextual calibration: not available ({free.get('reason') or free.get('status')}).")
    for invalid in free.get("invalid") or []:
        notes.append(f"Contextual calibration left out in {invalid} (the content-free score was invalid).")
    for name, control in (result.get("controls") or {}).items():
        if control.get("source"):
            notes.append(f"{CELL_NAMES.get(name, name).capitalize()}: {control['source']}.")
    return [table(header, rows)] + [f'<p class="muted">{html.escape(n)}</p>' for n in notes]


def likelihood_section(result: dict[str, Any], table: Table) -> list[str]:
    """The likelihood discriminator: AUC and band-rule DRS beside the controls, and the top columns."""
    part = result.get("likelihood") or {"status": "off", "reason": "not run"}
    parts = ["<h2>Likelihood discriminator</h2>"]
    if part["status"] in ("off", "unavailable"):
        what = "not run" if part["status"] == "off" else "unavailable"
        parts.append(f"<p>Likelihood: {what} ({html.escape(str(part.get('reason')))}).</p>")
        return parts
    parts.append(
        f"<p>Each sample the {html.escape(part.get('condition', 'C1'))} trials showed, scored inside its C1 prompt "
        f"by the embedded model {html.escape(str(part.get('model')))} ({html.escape(str(part.get('backend')))}, no "
        "network): mean token log-likelihood of the table (nats; higher = more probable). Samples: "
        + ", ".join(f"{html.escape(k)} {v}" for k, v in (part.get("n_samples") or {}).items())
        + ". AUC = P(a synthetic-class sample scores higher than a real one); separation = max(AUC, 1 − AUC). "
        "Likelihood DRS: a sample is called SYNTHETIC when its score lies outside the central 95 % of the "
        "negative-control (real) samples' scores.</p>")
    if part["status"] != "scored":
        parts.append(f"<p>{html.escape(part['status'])}: {html.escape(str(part.get('reason')))}.</p>")
    else:
        rows = []
        for name, label in (("release", "release"), ("positive_control", "positive control"),
                            ("negative_control", "negative control")):
            r = part.get(name) or {}
            rows.append([label, _ci(r.get("auc"), r.get("auc_low"), r.get("auc_high")), r.get("direction", "n/a"),
                         _f(r.get("separation"), 3), _f(r.get("perm_p"), 4),
                         _ci(r.get("drs"), r.get("drs_low"), r.get("drs_high")) if "drs" in r
                         else "n/a (sets the band)",
                         f"{r.get('n_real', 0)} + {r.get('n_syn', 0)}"])
        parts.append(table(["compared with real", "AUC (95 % CI)", "direction", "separation", "permutation p",
                            "likelihood DRS (95 % CI)", "samples real + other"], rows))
    top = part.get("top_columns") or []
    if top:
        parts.append("<p>Columns that contribute most (release − real, mean log-likelihood of the column's values "
                     "per row; negative = the release's values are less probable):</p>")
        parts.append(table(["column", "release − real (nats/row)", "real (nats/row)", "release (nats/row)",
                            "column AUC"],
                           [[c["column"], c["delta_nats_per_row"], c["real_nats_per_row"], c["other_nats_per_row"],
                             c["column_auc"]] for c in top]))
    return parts


def cues_section(result: dict[str, Any], table: Table,
                 max_listed: int = 30) -> list[str]:
    """The cited cues verified true of the shown rows, and the counts of false / not checkable claims."""
    cues = result.get("cues") or {}
    parts = ["<h2>Verified cues</h2>"]
    if not cues.get("n_trials"):
        parts.append("<p>No valid verdict of the release cell to read cues from"
                     + (" (--scoring probability generates none)" if result["parameters"].get("scoring") ==
                        "probability" else "") + ".</p>")
        return parts
    counts = cues["counts"]
    parts.append(
        f"<p>Claims about the shown rows found in the reasoning, red flags and supporting evidence of "
        f"{cues['n_trials']} valid verdicts of the release cell ({cues['n_cue_strings']} cue strings), each checked "
        f"against the 20 rows that trial showed: {counts['true']} verified true, {counts['false']} false, "
        f"{counts['not_checkable']} not checkable.</p>")
    verified = cues.get("verified") or []
    if verified:
        parts.append(table(["trial", "sample", "answer", "field", "cue", "claim", "checked"],
                           [[v["trial_id"], v["true_label"], v["predicted_label"], v["field"], v["text"], v["claim"],
                             v["detail"]] for v in verified[:max_listed]]))
        if len(verified) > max_listed:
            parts.append(f'<p class="muted">{len(verified) - max_listed} more in audit.json.</p>')
    else:
        parts.append("<p>No cited cue was verified true of the rows shown.</p>")
    return parts
