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


def gate_figure(instruments: Sequence[dict[str, Any]], fail_above: float | None) -> str | None:
    """Base64 PNG: D = 2·|AUC − 0.5| with its 95 % interval per instrument, the release beside both controls,
    the ``--fail-above`` line; instruments that did not pass their controls drawn faint. None without data."""
    rows = [i for i in instruments if i.get("comparisons")]
    if not rows:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from llmdisc.audit.instruments.base import GROUP_NAMES, GROUPS

    colours = {"release": "#1f4e89", "shuffled_columns": "#c05000", "real_holdout": "#6b6b6b"}
    markers = {"release": "o", "shuffled_columns": "^", "real_holdout": "s"}
    fig, ax = plt.subplots(figsize=(7.5, 0.75 + 0.65 * len(rows)))
    for y, inst in enumerate(rows):
        alpha = 1.0 if inst.get("controls_passed") else 0.35
        for k, group in enumerate(GROUPS):
            comp = inst["comparisons"].get(group)
            if not comp or comp.get("D") is None:
                continue
            yy = y + (k - 1) * 0.22
            low, high = comp.get("D_low"), comp.get("D_high")
            if low is not None and high is not None:
                ax.plot([low, high], [yy, yy], color=colours[group], alpha=alpha, lw=2)
            ax.plot([comp["D"]], [yy], marker=markers[group], color=colours[group], alpha=alpha, ls="none",
                    label=GROUP_NAMES[group] if y == 0 else None)
    if fail_above is not None:
        ax.axvline(fail_above, color="#b3261e", ls="--", lw=1.2, label=f"--fail-above {fail_above:g}")
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([i["title"] + ("" if i.get("controls_passed") else f"\n({_controls_word(i)})") for i in rows],
                       fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(-0.02, 1.02)  # a D of 0 or 1 (common) is drawn whole, not cut by the frame
    ax.set_xlabel("D = 2·|AUC − 0.5| (0 = indistinguishable from real data, 1 = every unit told apart), 95 % CI")
    # above the plot: below it the legend ran into the axis label whatever the number of rows
    ax.legend(fontsize=7, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=4, frameon=False)
    ax.grid(axis="x", alpha=0.3)
    return _png(fig)


def _controls_word(instrument: dict[str, Any]) -> str:
    """Why an instrument's release figure is not read: its controls failed, or were measured on too few units."""
    return "failed its controls" if instrument.get("controls_judged", True) else "too few samples to judge its controls"


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


def render_html(result: dict[str, Any], sections: dict[str, str] | None = None) -> str:
    """The report page for an ``audit.json`` dict (see :func:`llmdisc.audit.run_audit`).

    Args:
        result: the audit's figures.
        sections: instrument name -> its own HTML section (:meth:`Instrument.section`), already escaped.
    """
    from llmdisc.audit.instruments.base import format_seconds

    sections = sections or {}
    decision = result["decision"]
    outcome = decision["outcome"]
    css = {"pass": "", "conclusive": "", "fail": " fail", "inconclusive": " thin"}[outcome]
    inputs = result["inputs"]
    parts = [f"<h1>Audit of {html.escape(inputs['synthetic']['file'])} against {html.escape(inputs['real']['file'])}"
             "</h1>",
             f'<p class="verdict{css}"><strong>{html.escape(result["headline"])}</strong></p>']
    if result.get("stopped_early"):
        parts.append('<p class="verdict thin">Stopped early (--max-minutes): instruments marked "stopped" report '
                     "what they measured before the deadline; those marked so below did not finish.</p>")
    parts.append(f"<p>{html.escape(decision['gate_statistic'])}.</p>")
    parts.append(_img(gate_figure(result["instruments"], decision.get("fail_above")),
                      "D with 95 % intervals per instrument: release, positive and negative control"))
    summary = []
    for inst in result["instruments"]:
        release = inst["comparisons"].get("release") or {}
        d = release.get("D")
        summary.append([inst["title"], inst["status"],
                        "yes" if inst["controls_passed"] else "no" if inst.get("controls_judged", True) else "too few to judge",
                        "–" if d is None else f"{d:.2f} [{_fmt(release.get('D_low'))}, {_fmt(release.get('D_high'))}]",
                        ("yes" if release.get("separated") else "no") if inst["controls_passed"]
                        else f"not read: {_controls_word(inst)}", format_seconds(inst["seconds"])])
    parts += ["<h2>Instruments</h2>",
              _table(["instrument", "status", "passed its controls", "release D [95 % CI]", "tells the release apart",
                      "time"], summary)]
    if decision["reasons"]:
        parts.append("<p>Instruments that do not decide, or cannot vouch at the threshold, and why:</p><ul>"
                     + "".join(f"<li>{html.escape(r)}</li>" for r in decision["reasons"]) + "</ul>")
    findings = [f for inst in result["instruments"] if inst["controls_passed"] for f in inst["findings"]]
    parts.append("<h2>What gives the release away</h2>")
    parts.append("<ul>" + "".join(f"<li>{html.escape(f)}</li>" for f in findings) + "</ul>" if findings else
                 "<p>Nothing that an instrument which passed its controls could name.</p>")
    parts += _personal_section(result) + _key_columns_section(result)
    for inst in result["instruments"]:
        parts.append(f"<h2>{html.escape(inst['title'])}</h2>")
        if inst["status"] != "measured":
            parts.append(f"<p><strong>{html.escape(inst['status'])}</strong>"
                         + (f": {html.escape(inst['reason'])}" if inst.get("reason") else "") + "</p>")
        if inst["control_reasons"]:
            parts.append('<p class="muted">' + html.escape("; ".join(inst["control_reasons"])) + "</p>")
        parts.append(sections.get(inst["instrument"], ""))
    parts += _anonymeter_section(result)
    groups = result["groups"]
    parts += ["<h2>Data and method</h2>",
              _table(["group", "rows", "what"], [[g, groups["rows"].get(g), note]
                                                for g, note in groups["notes"].items()]),
              f"<p>{html.escape(decision['rule'])}.</p>",
              _table(["stage", "seconds"], [[k, v] for k, v in result["seconds"].items()]),
              f'<p class="muted">llmdisc {html.escape(result["llmdisc_version"])}, {html.escape(result["created"])}; '
              f"seed {result['parameters']['seed']}; every figure is in audit.json.</p>"]
    body = "\n".join(parts)
    page = (
        f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>llmdisc audit</title>'
        f"<style>{_CSS}</style></head><body>\n{body}\n</body></html>\n"
    )
    return scrub_text(page)


def _personal_section(result: dict[str, Any]) -> list[str]:
    personal = result.get("personal") or []
    if not personal:
        return []
    return ["<h2>Personal information</h2>",
            "<p>Columns holding personal information are left out of every instrument (a name says nothing about "
            "whether a record is realistic) and checked on their own: a release that copies real people's values "
            "leaks them, whatever the instruments say.</p>",
            _table(["column", "why", "release values that are real values", "distinct real values in the release",
                    "fresh real rows (holdout)", "finding"],
                   [[p["column"], p["reason"], p["copied_share"], p["distinct_copied"], p["holdout_copied_share"],
                     p["sentence"]] for p in personal])]


def _anonymeter_section(result: dict[str, Any]) -> list[str]:
    attacks = result.get("anonymeter") or {}
    parts = ["<h2>Anonymeter attacks</h2>"]
    if attacks.get("status") != "measured":
        return parts + [f"<p>{html.escape(attacks.get('status', 'skipped'))}: {html.escape(attacks.get('reason') or '')}"
                        "</p>"]
    return parts + [_table(["attack", "risk [95 % CI]", "attack rate", "control rate", "attacks"],
                           [[a["attack"], _ci(a["risk"]), a["attack_rate"], a["control_rate"], a["n_attacks"]]
                            for a in attacks["risks"]])]


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
            "yet a key alone can separate the tables (a renumbered key, for example). They are "
            + ("<strong>kept</strong> in every instrument (--keep-ids), so the figures above include them."
               if kept else "left out of every instrument; --keep-ids keeps them.")
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


def write_report_html(result: dict[str, Any], path: Path, sections: dict[str, str] | None = None) -> Path:
    """Render :func:`render_html` to ``path`` (atomically) and return it."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(render_html(result, sections), encoding="utf-8")
    tmp.replace(path)
    return path
