"""The audit's products: ``audit.json`` (following :data:`AUDIT_SCHEMA`), a self-contained ``report.html``
rendered from plain data by an autoescaping template (inline CSS and base64 PNG figures, no link, script or
font; scrubbed of absolute paths and secrets), and ``traceback.txt`` after an unexpected error
(:func:`record_crash`)."""

from __future__ import annotations

import base64
import functools
import io
import json
import math
import re
import sys
import traceback
from pathlib import Path
from typing import Any, Mapping, Sequence

from llmdisc.audit.errors import TRACEBACK_FILE, exit_status_record
from llmdisc.audit.instruments.base import (GROUP_NAMES, GROUPS, Block, Bullets, Paragraph, Table,
                                            format_seconds)
from llmdisc.audit.thresholds import runs_text
from llmdisc.paths import project_root
from llmdisc.pipeline.reports import scrub_text

AUDIT_SCHEMA = Path(__file__).with_name("audit.schema.json")
"""The JSON Schema (draft 2020-12) of ``audit.json``, shipped with the package: the tests validate every audit they
write against it (``jsonschema``, a test requirement; the audit itself does not import it)."""

TEMPLATES = Path(__file__).with_name("templates")
"""The report's Jinja2 templates, shipped with the package."""
TEMPLATE = "report.html.j2"
"""The page, its CSS inline; autoescaped, no value marked safe: any text from the user's files is escaped."""


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


def _write_atomically(path: Path, text: str) -> Path:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return path


def write_audit_json(result: dict[str, Any], path: Path) -> Path:
    """Write the audit's figures as indented JSON (NaN written as null), atomically; return ``path``."""
    return _write_atomically(path, scrub_text(json.dumps(_clean(result), indent=2, ensure_ascii=False,
                                                         default=_json_default)) + "\n")


def _hide_paths(text: str, folders: dict[str, str]) -> str:
    """``text`` with each folder's absolute path replaced by its placeholder (longest first), then
    :func:`~llmdisc.pipeline.reports.scrub_text`, which alone handles a folder holding the project or the venv."""
    pairs: list[tuple[str, str]] = []
    for folder, placeholder in folders.items():
        resolved = Path(folder).resolve()
        if any(inner.resolve().is_relative_to(resolved) for inner in (project_root(), Path(sys.prefix))):
            continue
        pairs += [(form, placeholder) for form in {str(Path(folder).absolute()), str(resolved)} if len(form) > 1]
    for old, new in sorted(pairs, key=lambda p: len(p[0]), reverse=True):
        text = re.sub(re.escape(old) + r"(?![\w.-])", lambda _: new, text)  # whole names: not DIR.py for DIR
    return scrub_text(text)


def record_crash(out_dir: Path | str, exc: BaseException, *, status: int, inputs: Sequence[Path | str | None] = (),
                 mark_audit_json: bool = False) -> Path:
    """Write and return ``DIR/traceback.txt`` after an unexpected error (``out_dir`` created if needed,
    nothing there removed): the traceback, scrubbed (the audit folder written as ``<audit>``, the folders of
    ``inputs`` as ``<input>``). With ``mark_audit_json`` (this run wrote ``DIR/audit.json`` before the error)
    that file's ``exit_status`` becomes ``status`` and gets a ``crash`` entry, so it never states a status the
    process did not exit with."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    folders = {str(Path(p).parent): "<input>" for p in inputs if p is not None}
    folders[str(out_dir)] = "<audit>"
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    path = out_dir / TRACEBACK_FILE
    path.write_text(_hide_paths(text, folders), encoding="utf-8")
    audit_json = out_dir / "audit.json"
    if mark_audit_json and audit_json.exists():
        result = json.loads(audit_json.read_text(encoding="utf-8"))
        result["exit_status"] = exit_status_record(status)
        error = _hide_paths(f"{type(exc).__name__}: {exc}", folders)
        result["crash"] = {"error": error, "traceback": TRACEBACK_FILE}
        write_audit_json(result, audit_json)
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
    the ``--fail-above`` line; instruments that did not pass their controls drawn faint, and those ``--max-minutes``
    stopped drawn hollow with their n per side named (a D read from a few units is not a finding). None without
    data."""
    rows = [i for i in instruments if i.get("comparisons")]
    if not rows:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colours = {"release": "#1f4e89", "shuffled_columns": "#c05000", "real_holdout": "#6b6b6b"}
    markers = {"release": "o", "shuffled_columns": "^", "real_holdout": "s"}
    fig, ax = plt.subplots(figsize=(7.5, 0.75 + 0.65 * len(rows)))
    for y, inst in enumerate(rows):
        alpha = 1.0 if inst.get("controls_passed") else 0.35
        hollow = inst.get("status") == "stopped"
        for k, group in enumerate(GROUPS):
            comp = inst["comparisons"].get(group)
            if not comp or comp.get("D") is None:
                continue
            yy = y + (k - 1) * 0.22
            low, high = comp.get("D_low"), comp.get("D_high")
            if low is not None and high is not None:
                ax.plot([low, high], [yy, yy], color=colours[group], alpha=alpha, lw=2)
            ax.plot([comp["D"]], [yy], marker=markers[group], color=colours[group], alpha=alpha, ls="none",
                    markerfacecolor="white" if hollow else colours[group],
                    label=GROUP_NAMES[group] if y == 0 else None)
    if fail_above is not None:
        ax.axvline(fail_above, color="#b3261e", ls="--", lw=1.2, label=f"--fail-above {fail_above:g}")
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([_tick_label(i) for i in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(-0.02, 1.02)  # a D of 0 or 1 (common) is drawn whole, not cut by the frame
    ax.set_xlabel("D = 2·|AUC − 0.5| (0 = indistinguishable from real data, 1 = every unit told apart), 95 % CI")
    # above the plot: below it the legend ran into the axis label whatever the number of rows
    ax.legend(fontsize=7, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=4, frameon=False)
    ax.grid(axis="x", alpha=0.3)
    return _png(fig)


def _tick_label(instrument: dict[str, Any]) -> str:
    """The figure's row label: the title, why its release figure is not read, and for a stopped instrument the
    units it measured a side before ``--max-minutes`` (the smallest n of its comparisons)."""
    label = instrument["title"]
    if instrument.get("status") == "stopped":
        sizes = [min(c["n_real"], c["n_other"]) for c in instrument["comparisons"].values() if c]
        label += f"\n(stopped by --max-minutes at n {min(sizes) if sizes else 0} a side)"
    return label if instrument.get("controls_passed") else label + f"\n({_controls_word(instrument)})"


def _controls_word(instrument: dict[str, Any]) -> str:
    """Why an instrument's release figure is not read: its controls failed, or were measured on too few units."""
    return "failed its controls" if instrument.get("controls_judged", True) else "its controls unjudged"


def _fmt(value: Any, digits: int = 2) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _ci(est: dict[str, Any] | None) -> str:
    if not est or est.get("value") is None:
        return "n/a"
    return f"{est['value']:.3f} ({_fmt(est['ci_low'], 3)}–{_fmt(est['ci_high'], 3)})"


@functools.lru_cache(maxsize=1)
def _environment() -> Any:
    """The Jinja2 environment of :data:`TEMPLATES`: autoescape on for every template, undefined names an error."""
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             keep_trailing_newline=True)
    env.filters["cell"] = _fmt
    return env


def render_html(result: dict[str, Any], sections: Mapping[str, Sequence[Block]] | None = None) -> str:
    """The report page (HTML text) for an ``audit.json`` dict, from :data:`TEMPLATE`; ``sections``: instrument
    name -> its own section (:meth:`Instrument.section`), plain data: :class:`TypeError` for a section that is
    not a list of :data:`~llmdisc.audit.instruments.base.Block` (HTML, say)."""
    sections = dict(sections or {})
    for name, blocks in sections.items():
        if isinstance(blocks, (str, bytes)) or not all(isinstance(b, (Table, Bullets, Paragraph)) for b in blocks):
            raise TypeError(f"the report section of {name!r} is not a list of Table, Bullets and Paragraph blocks; "
                            "fix: return plain data from Instrument.section (the template writes the HTML)")
    decision = result["decision"]
    inputs = result["inputs"]
    summary = []
    titles = {inst["instrument"]: inst["title"] for inst in result["instruments"]}
    for inst in result["instruments"]:
        release = inst["comparisons"].get("release") or {}
        d = release.get("D")
        summary.append([inst["title"], inst["status"],
                        "yes" if inst["controls_passed"] else "no" if inst.get("controls_judged", True) else "unjudged",
                        "–" if d is None else f"{d:.2f} [{_fmt(release.get('D_low'))}, {_fmt(release.get('D_high'))}]",
                        ("yes" if release.get("separated") else "no") if inst["controls_passed"]
                        else f"not read: {_controls_word(inst)}", format_seconds(inst["seconds"])])
    gate = None
    if decision.get("gate"):
        threshold = decision["fail_above"]
        gate = {"threshold": f"{threshold:g}",
                "table": Table(["instrument", "vouches", "a release at chance passes",
                                f"a release at D {min(1.0, 1.5 * threshold):.2f} fails"],
                               [[titles.get(name, name), "yes" if g["vouches"] else "no",
                                 f"{100 * g['pass_probability_at_chance']:.0f} %", f"{100 * g['fail_probability']:.0f} %"]
                                for name, g in decision["gate"].items()])}
    instruments = [{"title": inst["title"], "status": inst["status"], "reason": inst.get("reason") or "",
                    "control_reasons": "; ".join(inst["control_reasons"]),
                    "blocks": list(sections.get(inst["instrument"], []))} for inst in result["instruments"]]
    groups = result["groups"]
    page = _environment().get_template(TEMPLATE).render(
        synthetic_file=inputs["synthetic"]["file"], real_file=inputs["real"]["file"],
        verdict_class={"pass": "", "conclusive": "", "fail": " fail", "inconclusive": " thin"}[decision["outcome"]],
        headline=result["headline"], stopped_early=bool(result.get("stopped_early")),
        gate_statistic=decision["gate_statistic"],
        figure=gate_figure(result["instruments"], decision.get("fail_above")) or "",
        summary=Table(["instrument", "status", "passed its controls", "release D [95 % CI]",
                       "tells the release apart", "time"], summary),
        gate=gate, reasons=list(decision["reasons"]), next_steps=list(decision.get("next_steps", [])),
        findings=[f for inst in result["instruments"] if inst["controls_passed"] for f in inst["findings"]],
        personal=_personal_table(result), keys=_key_columns(result), instruments=instruments,
        thresholds=_thresholds(result), caps=_caps_table(result),
        anonymeter=_anonymeter(result),
        groups=Table(["group", "rows", "what"], [[g, groups["rows"].get(g), note]
                                                 for g, note in groups["notes"].items()]),
        rule=decision["rule"], seconds=Table(["stage", "seconds"], [[k, v] for k, v in result["seconds"].items()]),
        version=result["llmdisc_version"], created=result["created"], seed=result["parameters"]["seed"])
    return scrub_text(page)


def _thresholds(result: dict[str, Any]) -> dict[str, Any] | None:
    """The "Choosing --fail-above" section (:mod:`llmdisc.audit.thresholds`): its paragraph, the release between
    its controls per instrument, and the gate's outcome per threshold (None for an ``audit.json`` without it)."""
    scan = result.get("thresholds")
    if not scan:
        return None

    def figure(entry: dict[str, Any] | None) -> str:
        return "–" if entry is None else f"{entry['words']} (n {entry['n_real']} / {entry['n_other']})"

    def vouches(entry: dict[str, Any]) -> str:
        if entry["vouches_from"] is not None:
            return f"{entry['vouches_from']:.2f} to {entry['vouches_to']:.2f}"
        return entry.get("cannot_vouch") or ("none: did not pass its controls" if not entry["controls_passed"]
                                             else "none")

    where = {"like_real": "not told apart, as real vs real", "between": "between: told apart, less than broken",
             "overlaps_broken": "told apart, overlapping broken", "beyond_broken": "further than broken",
             "not_read": "not read: controls not passed", "not_measured": "not measured"}
    places = Table(["instrument", "real vs real (indistinguishable at this size)", "release",
                    "shuffled columns (broken)", "the release sits", "vouches at --fail-above"],
                   [[e["title"], figure(e["real_holdout"]), figure(e["release"]), figure(e["shuffled_columns"]),
                     where[e["placement"]], vouches(e)] for e in scan["instruments"]])
    names = {"release": "this release", "real_holdout": "a release reading as real vs real reads here",
             "shuffled_columns": "a release reading as the shuffled columns read here"}
    outcomes = Table(["read as the release", f"gate outcome by --fail-above (every {scan['grid_step']:g})"],
                     [[names[g], runs_text(runs)] for g, runs in scan["outcomes"].items()])
    return {"sentence": scan["sentence"], "places": places, "outcomes": outcomes,
            "sentences": [e["sentence"] for e in scan["instruments"]]}


def _caps_table(result: dict[str, Any]) -> Table | None:
    """The "Caps" table (:mod:`llmdisc.audit.caps`; None for an ``audit.json`` without it)."""
    caps = result.get("caps")
    if not caps:
        return None
    return Table(["instrument", "what is capped", "at most", "this run used", "cap reached"],
                 [[c["instrument"] or "all", c["what"], c["cap"],
                   ", ".join(f"{k} {v}" for k, v in c["used"].items()) or "–", "yes" if c["reached"] else "no"]
                  for c in caps])


def _personal_table(result: dict[str, Any]) -> Table | None:
    """The "Personal information" table (None without such columns)."""
    personal = result.get("personal") or []
    if not personal:
        return None
    return Table(["column", "why", "release values that are real values", "distinct real values in the release",
                  "fresh real rows (holdout)", "finding"],
                 [[p["column"], p["reason"], p["copied_share"], p["distinct_copied"], p["holdout_copied_share"],
                   p["sentence"]] for p in personal])


def _anonymeter(result: dict[str, Any]) -> dict[str, Any]:
    """The "Anonymeter attacks" section: its table when measured, else its status and why."""
    attacks = result.get("anonymeter") or {}
    if attacks.get("status") != "measured":
        return {"table": None, "status": attacks.get("status", "skipped"), "reason": attacks.get("reason") or ""}
    return {"table": Table(["attack", "risk [95 % CI]", "attack rate", "control rate", "attacks"],
                           [[a["attack"], _ci(a["risk"]), a["attack_rate"], a["control_rate"], a["n_attacks"]]
                            for a in attacks["risks"]]), "reason": attacks.get("reason") or ""}


def _key_columns(result: dict[str, Any]) -> dict[str, Any] | None:
    """The "Key columns" section: each key's values per table and whether it alone separates them, and the
    columns left out (None when there are neither)."""
    keys = (result.get("identifiers") or {}).get("columns") or []
    excluded = (result.get("schema") or {}).get("excluded") or []
    if not keys and not excluded:
        return None
    kept = bool((result.get("identifiers") or {}).get("kept", False))
    table = None
    if keys:
        roles = [r for r in ("real", "synthetic", "holdout") if r in keys[0]]

        def values(info: dict[str, Any]) -> str:
            if "min" in info:
                return f"{info['min']}–{info['max']} ({info['n_distinct']} distinct of {info['n']})"
            return ", ".join(info.get("examples", [])) + f" … ({info['n_distinct']} distinct of {info['n']})"

        table = Table(["key column"] + [f"{r} values" for r in roles] + ["synthetic keys also real", "finding"],
                      [[k["column"]] + [values(k[r]) for r in roles] + [k["synthetic_in_real"], k["sentence"]]
                       for k in keys])
    return {"kept": kept, "table": table,
            "excluded": Table(["column left out", "why"], [[e["name"], e["reason"]] for e in excluded])
            if excluded else None}


def write_report_html(result: dict[str, Any], path: Path,
                      sections: Mapping[str, Sequence[Block]] | None = None) -> Path:
    """Render :func:`render_html` to ``path`` (atomically) and return it."""
    return _write_atomically(path, render_html(result, sections))
