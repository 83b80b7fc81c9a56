"""Tables of coded cues: theme shares per cell, correct vs wrong verdicts, the C1 → C2 shift, recognition.

Every share carries a Wilson 95 % interval (:func:`llmdisc.scoring.metrics.wilson_interval`) and its n. The unit
is the *trial* (a trial uses a theme when any of its cue strings, in the fields named, has it), or the human
answer; never pooled across providers or models. Trials at temperature 0 on the paper's fixed sample repeat
one answer, so their intervals are narrower than the evidence: ``n_distinct_answers`` says how many distinct
answers stand behind each row.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from llmdisc.scoring.metrics import wilson_interval

TRIAL_UNIT = ("source", "run_id", "trial_id", "line_no")
CONTEXT = ("provider", "model", "dataset", "synthetic_method", "condition", "true_label", "predicted_label",
           "correct")


def trial_themes(coded: pd.DataFrame, themes: Sequence[str], *, fields: Sequence[str] | None = None,
                 generic: str = "generic") -> pd.DataFrame:
    """One row per trial (or human answer): whether any of its cue strings in ``fields`` has each theme.

    ``coded``: cue strings coded by :func:`llmdisc.scoring.cues.code_cues`; ``generic`` is true for a trial
    exactly when none of its strings has another theme (an empty red-flag list beside specific evidence does
    not make the trial generic). Returns the trial unit and context columns, ``answer`` (the trial's cue texts
    joined, to count distinct answers) and one boolean column per theme.
    """
    frame = coded if fields is None else coded[coded["field"].isin(list(fields))]
    frame = frame.assign(**{c: frame[c].astype(object).where(frame[c].notna(), "") for c in TRIAL_UNIT})
    grouped = frame.groupby(list(TRIAL_UNIT), dropna=False, sort=False)
    out = grouped.agg({f"theme_{t}": "any" for t in themes}).reset_index()
    if generic in themes:
        others = [f"theme_{t}" for t in themes if t != generic]
        out[f"theme_{generic}"] = ~out[others].any(axis=1)
    context = grouped[[c for c in CONTEXT if c in frame.columns]].first().reset_index(drop=True)
    answers = grouped["text"].agg(lambda s: "\u241e".join(map(str, s))).reset_index(drop=True)
    return pd.concat([out, context, answers.rename("answer")], axis=1)


def theme_share_table(per_trial: pd.DataFrame, themes: Sequence[str], by: Sequence[str]) -> pd.DataFrame:
    """Share of trials using each theme per group, with Wilson 95 % intervals: columns ``by``, theme,
    n_trials, n_with_theme, share, share_ci_low, share_ci_high (fractions) and n_distinct_answers."""
    rows = []
    for key, grp in per_trial.groupby(list(by), dropna=False):
        n = len(grp)
        distinct = grp["answer"].nunique() if "answer" in grp else np.nan
        for theme in themes:
            k = int(grp[f"theme_{theme}"].sum())
            est = wilson_interval(k, n)
            rows.append({**dict(zip(by, key)), "theme": theme, "n_trials": n, "n_with_theme": k,
                         "share": est.value, "share_ci_low": est.ci_low, "share_ci_high": est.ci_high,
                         "n_distinct_answers": distinct})
    return pd.DataFrame(rows)


def _newcombe(k1: int, n1: int, k2: int, n2: int) -> tuple[float, float, float]:
    """Difference p2 - p1 with Newcombe's hybrid score interval (method 10) from two Wilson intervals."""
    a, b = wilson_interval(k1, n1), wilson_interval(k2, n2)
    if n1 == 0 or n2 == 0:
        return np.nan, np.nan, np.nan
    d = b.value - a.value
    low = d - np.sqrt((b.value - b.ci_low) ** 2 + (a.ci_high - a.value) ** 2)
    high = d + np.sqrt((b.ci_high - b.value) ** 2 + (a.value - a.ci_low) ** 2)
    return d, low, high


def condition_shift_table(per_trial: pd.DataFrame, themes: Sequence[str],
                          by: Sequence[str] = ("source", "provider", "model", "dataset")) -> pd.DataFrame:
    """Does the metadata change what the model looks at? Per group and theme: n_c1, share_c1, n_c2, share_c2
    (each with its interval) and shift = share_c2 - share_c1 with a Newcombe 95 % interval (positive: the
    theme is used more when the metadata is shown)."""
    rows = []
    for key, grp in per_trial.groupby(list(by), dropna=False):
        c1, c2 = grp[grp["condition"] == "C1"], grp[grp["condition"] == "C2"]
        for theme in themes:
            k1, k2 = int(c1[f"theme_{theme}"].sum()), int(c2[f"theme_{theme}"].sum())
            e1, e2 = wilson_interval(k1, len(c1)), wilson_interval(k2, len(c2))
            d, lo, hi = _newcombe(k1, len(c1), k2, len(c2))
            rows.append({**dict(zip(by, key)), "theme": theme, "n_c1": len(c1), "share_c1": e1.value,
                         "share_c1_ci_low": e1.ci_low, "share_c1_ci_high": e1.ci_high, "n_c2": len(c2),
                         "share_c2": e2.value, "share_c2_ci_low": e2.ci_low, "share_c2_ci_high": e2.ci_high,
                         "shift": d, "shift_ci_low": lo, "shift_ci_high": hi})
    return pd.DataFrame(rows)


def recognition_table(per_trial: pd.DataFrame,
                      by: Sequence[str] = ("source", "provider", "model", "dataset", "condition")) -> pd.DataFrame:
    """Dataset-recognition rate (trials naming the table as a known dataset, e.g. UCI Adult) per group."""
    out = theme_share_table(per_trial, ["dataset_recognition"], by).drop(columns="theme")
    return out.rename(columns={f"share{s}": f"recognition_rate{s}" for s in ("", "_ci_low", "_ci_high")})
