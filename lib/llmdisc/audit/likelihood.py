"""The likelihood discriminator of an audit: how probable the embedded model finds each shown sample.

Every sample the trials showed (in the first condition run; C1 and C2 show the same rows) is scored inside its
C1 prompt by :mod:`llmdisc.discrimination.likelihood` with the embedded model (transformers backend, no network):
the mean token log-likelihood of the table's tokens (nats; higher = more probable), and per column the summed
log-likelihood of its values. Four groups of samples, the trials' own:

- ``real``: the REAL samples (shared by every cell) — the real class;
- ``release``: the release's samples;
- ``shuffled_columns``: the positive control's;
- ``real_holdout``: the negative control's (real rows), which also set the decision band.

Figures (:mod:`llmdisc.scoring.likelihood`): for the release and the positive control, the AUC of the score
against the real class (direction and the two-sided ``separation`` = max(AUC, 1 − AUC), DeLong 95 % interval,
permutation p) and the likelihood DRS of the label-free band rule (a sample is called SYNTHETIC when its score
lies outside the central 95 % of the negative-control samples' scores); for the negative control, its AUC
(real against real: must sit near 0.5). The columns that contribute most: per column, the mean over samples of
(log-likelihood of the column's values ÷ rows), release − real, the 5 largest in magnitude (negative: the
release's values of that column are less probable than real ones).

Cost: one forward pass per distinct sample (``4 × --trials`` at most; ~5 s each for a 20-row Adult sample on
2 cores); scores are cached in ``DIR/cache/likelihood`` (the user's rows never reach the project's cache).
If the backend cannot be loaded or a sample cannot be scored, the section says so with the reason; the audit
goes on.
"""

from __future__ import annotations

import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Mapping

import pandas as pd

MIN_SAMPLES = 2
"""Fewer samples than this in a group: no AUC or band for it."""
TOP_COLUMNS = 5
SCORE = "mean_logprob"
GROUPS = ("real", "release", "shuffled_columns", "real_holdout")


def shown_samples(trials: pd.DataFrame, tables: Mapping[str, pd.DataFrame], condition: str) -> dict[str, list]:
    """The distinct samples the trials of ``condition`` showed, per group, rebuilt from their ``row_ids``.

    Args:
        trials: the audit's trial records.
        tables: ``{"real": ..., "release": ..., "shuffled_columns": ..., "real_holdout": ...}``.
        condition: the condition whose trials are read.

    Returns:
        ``{group: [(sample_seed, rows, n_total), ...]}`` in trial order, each sample once.
    """
    out: dict[str, list] = {group: [] for group in GROUPS}
    seen: set[tuple[str, int]] = set()
    part = trials[trials["condition"] == condition].sort_values(["true_label", "synthetic_method", "trial_id"])
    for rec in part.to_dict("records"):
        group = "real" if rec["true_label"] == "REAL" else rec["synthetic_method"]
        ids = [int(i) for i in rec["row_ids"]] if rec.get("row_ids") is not None else []
        if group not in out or (group, int(rec["sample_seed"])) in seen or not ids:
            continue
        seen.add((group, int(rec["sample_seed"])))
        table = tables[group]
        rows = table.iloc[ids].reset_index(drop=True)
        out[group].append((int(rec["sample_seed"]), rows, len(table)))
    return out


def _score_all(samples: dict[str, list], cache_dir: Path, variant: str) -> tuple[Any, dict[str, list], dict]:
    from llmdisc.discrimination.likelihood.base import DEFAULT_LIKELIHOOD_MODEL
    from llmdisc.discrimination.likelihood.token_cache import TokenCache
    from llmdisc.discrimination.likelihood.transformers_backend import TransformersScorer
    from llmdisc.discrimination.likelihood.sample_scores import MIN_K_FRACTION, SampleScores, score_sample
    from llmdisc.discrimination.likelihood.score_cache import ScoreCache, score_key
    from llmdisc.discrimination.likelihood.serialise import place, serialise

    # the prompt tokens the local provider stored while scoring labels, in the audit folder (never the project's)
    scorer = TransformersScorer(DEFAULT_LIKELIHOOD_MODEL, token_cache=TokenCache(cache_dir.parent / "likelihood-tokens"))
    cache = ScoreCache(cache_dir)
    scored: dict[str, list] = {group: [] for group in samples}
    counts = {"scored": 0, "cached": 0}
    for group, items in samples.items():
        for _, rows, n_total in items:
            placed = place(rows, serialise(rows, "markdown"), context="c1_prompt", chat_text=scorer.chat_text,
                           variant=variant, n_total=n_total)
            key = score_key(text=placed.text, start=placed.start, end=placed.end, backend=scorer.backend,
                            model_digest=scorer.model_digest, fraction=MIN_K_FRACTION)
            hit = cache.get(key)
            if hit is not None:
                scores = SampleScores(**hit["scores"])
                counts["cached"] += 1
            else:
                tokens = scorer.token_logprobs(placed.text, start_char=placed.start, end_char=placed.end)
                scores = score_sample(tokens, placed)
                cache.put(key, {"scores": asdict(scores), "seconds": tokens.seconds})
                counts["scored"] += 1
            scored[group].append({"n_rows": len(rows), **asdict(scores)})
    return scorer, scored, counts


def _top_columns(scored: dict[str, list], scorer: Any, seed: int) -> list[dict[str, Any]]:
    from llmdisc.scoring.likelihood import column_contributions

    cell = {"dataset_key": "audit", "backend": scorer.backend, "model": scorer.model, "serialisation": "markdown",
            "context": "c1_prompt"}
    records = [{**cell, "source": "holdout", "role": "test", **s} for s in scored["real"]]
    records += [{**cell, "source": "release", "role": "test", **s} for s in scored["release"]]
    table = column_contributions(pd.DataFrame(records), seed=seed)
    if table.empty:
        return []
    keep = ["column", "delta_nats_per_row", "real_nats_per_row", "other_nats_per_row", "column_auc", "rank"]
    top = table[table["source"] == "release"].sort_values("rank").head(TOP_COLUMNS)
    return [{k: (v.item() if hasattr(v, "item") else v) for k, v in row.items()}
            for row in top[keep].to_dict("records")]


def likelihood_section(trials: pd.DataFrame, tables: Mapping[str, pd.DataFrame], *, condition: str,
                       cache_dir: Path, variant: str, seed: int) -> dict[str, Any]:
    """Score the shown samples and return the report's likelihood section (see the module docstring).

    Args:
        trials: the audit's trial records.
        tables: the cells' tables (:func:`shown_samples`).
        condition: the first condition run (its samples are scored).
        cache_dir: the score cache folder inside the audit folder.
        variant: the prompt variant of the trials.
        seed: seed of the permutation tests and bootstraps.

    Returns:
        ``status`` (``scored``, ``too few samples`` or ``unavailable``), ``reason``, ``model``, ``backend``,
        ``model_digest``, ``score``, ``n_samples`` per group, ``release``/``positive_control`` (AUC test and
        band-rule DRS), ``negative_control`` (AUC test), ``top_columns``, ``seconds``, ``scored``/``cached``.
    """
    from llmdisc.scoring.likelihood import decision_scores, likelihood_auc

    start = time.perf_counter()
    samples = shown_samples(trials, tables, condition)
    out: dict[str, Any] = {"status": "scored", "reason": None, "score": SCORE, "context": "c1_prompt",
                           "serialisation": "markdown", "condition": condition,
                           "n_samples": {g: len(v) for g, v in samples.items()}}
    try:
        scorer, scored, counts = _score_all(samples, cache_dir, variant)
    except Exception as exc:  # noqa: BLE001 - a missing backend or weights is reported, the audit goes on
        out.update(status="unavailable", reason=f"{type(exc).__name__}: {exc}",
                   seconds=round(time.perf_counter() - start, 1))
        return out
    out.update(model=scorer.model, backend=scorer.backend, model_digest=scorer.model_digest, **counts)
    values = {g: [s[SCORE] for s in v] for g, v in scored.items()}
    few = [g for g, v in values.items() if len(v) < MIN_SAMPLES]
    if few:
        out.update(status="too few samples", reason=f"fewer than {MIN_SAMPLES} scored samples in "
                   f"{', '.join(few)} (run more --trials)", seconds=round(time.perf_counter() - start, 1))
        out["top_columns"] = _top_columns(scored, scorer, seed) if values["real"] and values["release"] else []
        return out
    for name, group in (("release", "release"), ("positive_control", "shuffled_columns")):
        out[name] = {**likelihood_auc(values["real"], values[group], seed=seed),
                     **decision_scores(values["real"], values[group], values["real_holdout"], seed=seed)}
    out["negative_control"] = likelihood_auc(values["real"], values["real_holdout"], seed=seed)
    out["top_columns"] = _top_columns(scored, scorer, seed)
    out["seconds"] = round(time.perf_counter() - start, 1)
    return out
