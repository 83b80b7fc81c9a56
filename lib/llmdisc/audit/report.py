"""The audit's products: ``audit.json`` (every figure, machine-readable) and a self-contained ``report.html``.

The HTML page has its CSS inline and its figures embedded as base64 PNG: no external link, script or font,
so it can be mailed or archived as one file. Every text is escaped, and the page is passed through
:func:`llmdisc.pipeline.reports.scrub_text` so no absolute machine path or secret reaches it. Paths inside both
files are relative to the audit folder.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
from pathlib import Path
from typing import Any, Sequence

from llmdisc.audit import report_sections as sections
from llmdisc.pipeline.reports import scrub_text

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;max-width:62em;margin:2em auto;
padding:0 1em;line-height:1.45;color:#1d1d1d}
h1{font-size:1.6em;margin-bottom:.2em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.6em 0;font-size:.92em}td,th{border:1px solid #ccc;padding:.25em .6em;
text-align:left;vertical-align:top}th{background:#f3f3f3}td.num{text-align:right;font-variant-numeric:tabular-nums}
.verdict{background:#f6f8fa;border-left:5px solid #3b6ea5;padding:.8em 1em;font-size:1.05em}
.thin{border-left-color:#c77d00}.fail{border-left-color:#b3261e}.muted{color:#666;font-size:.9em}
img{max-width:100%;height:auto}
"""


def _json_default(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, Path):
        return value.as_posix()
    return str(value)


def _clean(value: Any) -> Any:
    """Replace NaN/inf by None recursively (JSON has neither)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def write_audit_json(result: dict[str, Any], path: Path) -> Path:
    """Write the audit's figures as indented JSON (NaN written as null), atomically; return ``path``."""
    text = scrub_text(json.dumps(_clean(result), indent=2, ensure_ascii=False, default=_json_default)) + "\n"
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return path


# --------------------------------------------------------------------------- figures
def _png(fig: Any) -> str:
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def drs_figure(conditions: Sequence[dict[str, Any]], fail_above: float | None) -> str | None:
    """Base64 PNG: DRS with its 95 % interval per condition, p_REAL and p_SYN beside it; None without data."""
    rows = [r for r in conditions if r.get("drs") is not None]
    if not rows:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.0, 0.7 + 0.8 * len(rows)))
    for i, row in enumerate(rows):
        ax.errorbar(
            row["drs"],
            i,
            xerr=[[row["drs"] - row["drs_ci_low"]], [row["drs_ci_high"] - row["drs"]]],
            fmt="o",
            color="#3b6ea5",
            capsize=4,
            label="DRS (95 % CI)" if i == 0 else None,
        )
        ax.plot(row["p_real"], i + 0.22, "^", color="#2e7d32", label="p_REAL" if i == 0 else None)
        ax.plot(row["p_syn"], i - 0.22, "v", color="#b3261e", label="p_SYN" if i == 0 else None)
    ax.axvline(0.5, color="#999", lw=0.8, ls=":")
    if fail_above is not None:
        ax.axvline(fail_above, color="#b3261e", lw=1, ls="--", label=f"--fail-above {fail_above:g}")
    ax.set_yticks(range(len(rows)), [r["condition"] for r in rows])
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-0.6, len(rows) - 0.4)
    ax.set_xlabel("fraction (DRS 0 = not told apart, 0.5 = chance-level guessing, 1 = always told apart)")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.35), ncol=4, fontsize=8, frameon=False)
    return _png(fig)


def columns_figure(cited: Sequence[dict[str, Any]], top: int = 12) -> str | None:
    """Base64 PNG: answered trials naming each column (most cited first); None when none is named."""
    rows = list(cited)[:top]
    if not rows:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.0, 0.6 + 0.32 * len(rows)))
    names = [r["column"] for r in rows][::-1]
    ax.barh(names, [r["trials"] for r in rows][::-1], color="#3b6ea5")
    ax.set_xlabel("answered trials naming the column (red flags or reasoning)")
    return _png(fig)


# --------------------------------------------------------------------------- html
def _fmt(value: Any, digits: int = 2) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="num">{html.escape(_fmt(v))}</td>'
            if isinstance(v, (int, float)) or v is None
            else f"<td>{html.escape(str(v))}</td>"
            for v in row
        )
        + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _img(b64: str | None, alt: str) -> str:
    return f'<p><img alt="{html.escape(alt)}" src="data:image/png;base64,{b64}"></p>' if b64 else ""


def _ci(est: dict[str, Any] | None) -> str:
    if not est or est.get("value") is None:
        return "n/a"
    return f"{est['value']:.3f} ({_fmt(est['ci_low'], 3)}–{_fmt(est['ci_high'], 3)})"


def render_html(result: dict[str, Any], figures: dict[str, str | None] | None = None) -> str:
    """The report page for an ``audit.json`` dict (see :func:`llmdisc.audit.run_audit`).

    Args:
        result: the audit's figures (what ``audit.json`` holds).
        figures: ``{"drs": base64 PNG, "columns": base64 PNG}`` (None: drawn here from ``result``).

    Returns:
        The HTML page (self-contained).
    """
    if figures is None:
        figures = {
            "drs": drs_figure(result["conditions"], (result.get("gate") or {}).get("fail_above")),
            "columns": columns_figure(result["cited_columns"]),
        }
    verdict, params, gate = result["verdict"], result["parameters"], result.get("gate") or {}
    classes = (
        "verdict"
        + (" thin" if verdict["thin_evidence"] else "")
        + (" fail" if gate.get("passed") is False or result.get("decision", {}).get("outcome") == "inconclusive"
           else "")
    )
    parts = [
        '<h1>Synthetic-data release audit</h1><p class="muted">llmdisc '
        f"{html.escape(result['llmdisc_version'])}"
        f" · {html.escape(result['created'])}</p>",
        f'<div class="{classes}"><strong>Verdict.</strong> {html.escape(verdict["headline"])}</div>',
    ]
    if gate:
        state = {True: "passed", False: "FAILED"}.get(gate["passed"], "not decided (inconclusive)")
        parts.append(
            f"<p><strong>Release gate {state}</strong>: {html.escape(str(gate.get('statistic', 'drs')))} upper "
            f"bound {_fmt(gate.get('upper_bound', gate.get('drs_upper_bound')))} vs --fail-above "
            f"{_fmt(gate['fail_above'])}.</p>"
        )
    parts += sections.decision_section(result)
    parts.append("<ul>" + "".join(f"<li>{html.escape(d)}</li>" for d in verdict["details"]) + "</ul>")

    parts += _key_columns_section(result)
    parts.append("<h2>LLM discriminator</h2>")
    parts.append(
        f"<p>{html.escape(params['provider'])} / {html.escape(str(params['model']))}: "
        f"{params['trials_per_label']} trials per label per condition, {params['n_rows']} rows per sample, "
        f"fresh seeded samples (seed {params['seed']}), metadata source "
        f"<code>{html.escape(params['metadata_source'])}</code>, scoring <code>"
        f"{html.escape(str(params.get('scoring', 'verdict')))}</code>. Per condition, the release beside its "
        "positive and negative controls. DRS = min(p_REAL, p_SYN): 0 = the LLM told "
        "nothing apart (or always gave one label), 0.5 = chance-level balanced guessing, 1 = every sample "
        "told apart; higher is worse for privacy. Intervals, 95 %: Wilson (p), bootstrap (DRS), DeLong (AUC).</p>"
    )
    parts += sections.cells_section(result, _table)
    parts.append(_img(figures.get("drs"), "DRS per condition"))

    parts += sections.likelihood_section(result, _table)
    parts += sections.cues_section(result, _table)
    parts.append("<h2>What the LLM cited</h2>")
    cited = result["cited_columns"]
    if cited:
        parts.append(
            _table(
                ["column", "trials naming it", "in red flags", "in reasoning", "share of answers"],
                [[c["column"], c["trials"], c["in_red_flags"], c["in_reasoning"], c["share"]] for c in cited],
            )
        )
        parts.append(_img(figures.get("columns"), "columns cited"))
    else:
        parts.append("<p>No column was named in any answer.</p>")
    flags = result["red_flags"]
    if flags:
        parts.append("<p>Most frequent row-level red flags:</p>")
        parts.append(
            _table(
                ["red flag", "trials", "on real samples", "on synthetic samples"],
                [[f["red_flag"], f["count"], f["on_real"], f["on_synthetic"]] for f in flags],
            )
        )
    else:
        parts.append("<p>No red flag was given.</p>")

    checks = result.get("checks")
    if checks:
        parts.append("<h2>Classifier two-sample test (C2ST)</h2>")
        c2st = checks["c2st"]
        parts.append(
            _table(
                ["classifier", "AUC (95 % CI)", "label-shuffled AUC", "block AUC (20 rows)", "block DRS"],
                [
                    [name, _ci(r["auc"]), _ci(r["shuffled_auc"]), _ci(r["block_auc"]), r["block_drs"]]
                    for name, r in c2st["classifiers"].items()
                ],
            )
        )
        parts += [f'<p class="muted">{html.escape(n)}</p>' for n in c2st["notes"]]
        parts.append("<h2>Distances to the closest real record</h2>")
        dist = checks["distances"]
        rows = [
            ["median DCR of synthetic records", dist["median_dcr_synthetic"]],
            ["exact-copy rate (95 % CI)", _ci(dist["exact_copy_rate"])],
        ]
        if dist["with_holdout"]:
            rows += [
                ["median DCR of real holdout records", dist["median_dcr_holdout"]],
                [
                    "share closer than the holdout median (0.5 = like fresh data)",
                    _ci(dist["share_closer_than_holdout_median"]),
                ],
                ["holdout exact-copy rate", _ci(dist["holdout_exact_copy_rate"])],
            ]
        parts.append(_table(["figure", "value"], rows))
        parts += [f'<p class="muted">{html.escape(n)}</p>' for n in dist["notes"]]
        parts.append("<h2>Anonymeter</h2>")
        if checks.get("anonymeter"):
            parts.append(
                _table(
                    ["attack", "risk (95 % CI)", "attack rate", "control rate", "baseline rate"],
                    [
                        [a["attack"], _ci(a["risk"]), a["attack_rate"], a["control_rate"], a["baseline_rate"]]
                        for a in checks["anonymeter"]
                    ],
                )
            )
        else:
            parts.append(f"<p>{html.escape(checks.get('anonymeter_note') or 'not run')}.</p>")

    parts.append("<h2>Inputs and schema</h2>")
    parts.append(
        _table(
            ["table", "file", "format", "rows", "rows read"],
            [
                [role, i["file"], i["format"], i["n_rows"], i["rows_read"]]
                for role, i in result["inputs"].items()
            ],
        )
    )
    parts.append(
        _table(
            ["column", "kind", "how"], [[c["name"], c["kind"], c["how"]] for c in result["schema"]["columns"]]
        )
    )
    parts.append(f'<p class="muted">{html.escape(result["schema"]["rule"])}</p>')
    parts.append(
        f'<p class="muted">Trials: {html.escape(result["trials"]["file"])} · every figure: audit.json</p>'
    )
    body = "\n".join(parts)
    page = (
        f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>llmdisc audit</title>'
        f"<style>{_CSS}</style></head><body>\n{body}\n</body></html>\n"
    )
    return scrub_text(page)


def _key_columns_section(result: dict[str, Any]) -> list[str]:
    """The "Key columns" section: each key's values per table and whether it alone separates them."""
    keys = (result.get("identifiers") or {}).get("columns") or []
    excluded = (result.get("schema") or {}).get("excluded") or []
    if not keys and not excluded:
        return []
    kept = (result.get("identifiers") or {}).get("kept", False)
    parts = ["<h2>Key columns and columns left out</h2>"]
    if keys:
        parts.append(
            "<p>Columns unique in every row (keys) say nothing about whether the <em>records</em> are realistic, "
            "yet a key alone can separate the tables (e.g. real ids 17264–17478, synthetic 0–214). They are "
            + ("<strong>kept</strong> in every discriminator (--keep-ids), so the figures below include them."
               if kept else "left out of the LLM samples, the C2ST, DCR and Anonymeter; --keep-ids keeps them.")
            + "</p>")
        roles = [r for r in ("real", "synthetic", "holdout") if r in keys[0]]

        def values(info: dict[str, Any]) -> str:
            if "min" in info:
                return f"{info['min']}–{info['max']} ({info['n_distinct']} distinct of {info['n']})"
            return ", ".join(info.get("examples", [])) + f" … ({info['n_distinct']} distinct of {info['n']})"

        parts.append(_table(
            ["key column"] + [f"{r} values" for r in roles] + ["synthetic keys also real", "finding"],
            [[k["column"]] + [values(k[r]) for r in roles]
             + [k["synthetic_in_real"], k["sentence"]] for k in keys]))
    if excluded:
        parts.append(_table(["column left out", "why"], [[e["name"], e["reason"]] for e in excluded]))
    return parts


def write_report_html(result: dict[str, Any], path: Path) -> Path:
    """Render :func:`render_html` to ``path`` (atomically) and return it."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(render_html(result), encoding="utf-8")
    tmp.replace(path)
    return path
