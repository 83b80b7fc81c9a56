"""The row-level instruments: a classifier two-sample test (C2ST) and distances to the closest real record.

:class:`C2STInstrument`: gradient-boosted trees (:func:`llmdisc.baselines.c2st.c2st`) learn to tell the group's rows
from the real class's, 5-fold cross-validation on at most :data:`C2ST_ROWS` rows a side; one-sided AUC of the
out-of-fold probabilities. :class:`DistanceInstrument`: each record's Gower-like distance to its closest training
record (:func:`llmdisc.baselines.distances.gower_dcr`) against fresh real rows': AUC above 0.5 = closer (copies,
memorisation), below = further (less faithful); also exact and near-copy rates.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from llmdisc.audit.instruments.base import (GROUPS, NEGATIVE, RELEASE, AuditData, Comparison, Instrument,
                                            Progress, Reading, WorkPlan)
from llmdisc.scoring.separation import auc_p_value

C2ST_ROWS = 3000
"""Rows per side of each C2ST."""
MAX_LEVELS = 50
"""Levels kept per categorical column in the C2ST (the rest: ``(other)``): a 4,000-value text column would otherwise
cost minutes and say nothing a copy check does not."""
C2ST_THREADS = 1
"""OpenMP threads of the C2ST's gradient-boosted trees: one, since on a shared CI runner scikit-learn's spinning
threads made a comparison many times slower (docs/audit.md, the fast path)."""
MIN_ROWS = 20
"""Fewer rows per side than this: no C2ST (5 folds of at least 4 rows)."""
DCR_ROWS = 2000
"""Records per group whose distance to the real class is measured."""
NEAR_COPY_QUANTILE = 0.01


class C2STInstrument(Instrument):
    """Classifier two-sample test on rows (module docstring)."""

    name = "c2st"
    uses_model = False
    title = "Classifier two-sample test (C2ST)"
    unit = "rows"
    description = ("gradient-boosted trees learn to tell the group's rows from real rows (5-fold "
                   "cross-validation); AUC of the held-out predictions")
    directions = ("not told apart", "told apart by the classifier")  # one-sided: below 0.5 is no finding
    seconds_per_fit_row = 0.0004
    """Seconds per row of one comparison (both sides, 5 folds) at 15 columns (docs/audit.md)."""

    def __init__(self, max_rows: int = C2ST_ROWS) -> None:
        self.max_rows = max_rows

    def _rows(self, data: AuditData, group: str) -> int:
        return min(len(data.real), len(data.groups[group]), self.max_rows)

    def plan(self, data: AuditData) -> WorkPlan:
        rows = sum(2 * self._rows(data, g) for g in GROUPS)
        scale = max(1.0, len(data.kinds) / 15)
        return WorkPlan(units=len(GROUPS), what="comparisons", seconds_per_unit=rows / len(GROUPS)
                        * self.seconds_per_fit_row * scale, description=self.description)

    def run(self, data: AuditData, progress: Progress) -> Reading:
        from llmdisc.baselines.c2st import c2st
        from llmdisc.baselines.encoding import cap_levels
        from llmdisc.discrimination.samples import derive_seed
        from threadpoolctl import threadpool_limits  # installed with scikit-learn

        start = time.perf_counter()
        tables, notes = cap_levels({"real": data.real, **data.groups}, data.kinds, data.real, MAX_LEVELS)
        reading = self.reading(details={"classifier": "hist_gb", "folds": 5, "notes": notes, "rows": {},
                                        "levels_capped": [c for c, kind in data.kinds.items() if kind == "categorical"
                                                          and data.real[c].nunique() > MAX_LEVELS]})
        progress.start(self.name, len(GROUPS), "comparisons")
        for group in GROUPS:
            if progress.out_of_time():
                reading.status, reading.reason = "stopped", "--max-minutes reached"
                break
            rows = self._rows(data, group)
            if rows < MIN_ROWS:
                reading.details["notes"].append(f"C2ST of {group} skipped: {rows} rows, fewer than {MIN_ROWS}")
                progress.advance()
                continue
            with threadpool_limits(limits=C2ST_THREADS, user_api="openmp"):
                res = c2st(tables["real"], tables[group], seed=derive_seed(data.seed, "audit", "c2st", group),
                           classifier="hist_gb", max_rows=self.max_rows, kinds=data.kinds, shuffled_baseline=False,
                           block_size=min(20, rows // 5), native_categorical=True)
            # p of the AUC itself (the held-out fold's accuracy test, on a fifth of the rows, is kept beside it)
            reading.comparisons[group] = Comparison(
                group, res.auc.value, res.auc.ci_low, res.auc.ci_high,
                auc_p_value(res.auc.value, res.n_real, res.n_real, one_sided=True), res.n_real, res.n_real,
                extra={"block_auc": res.block_auc.value, "heldout_accuracy": res.heldout_accuracy.value,
                       "heldout_accuracy_p": res.accuracy_p_value},
                one_sided=True)  # a held-out AUC below 0.5 is cross-validation's bias under no difference
            reading.details["notes"] += [n for n in res.notes if n not in reading.details["notes"]]
            reading.details["rows"][group] = int(res.n_real)
            progress.advance()
        release = reading.comparisons.get(RELEASE)
        if release is not None and release.separated:
            reading.findings.append(f"A classifier tells the release's rows from real rows "
                                    f"({release.words(*self.directions)}): some values or combinations of values "
                                    "are not as in the real data (see the columns the other instruments name).")
        reading.seconds = time.perf_counter() - start
        return reading

    def caps(self, reading: Reading) -> list[dict[str, Any]]:
        """The C2ST's caps as ``audit.json``'s ``caps`` lists them: rows per side, levels per categorical column."""
        rows = reading.details.get("rows", {})
        capped = reading.details.get("levels_capped", [])
        return [{"instrument": self.name, "what": "C2ST rows per side of each comparison (seeded)",
                 "cap": self.max_rows, "used": dict(rows), "reached": any(n >= self.max_rows for n in rows.values())},
                {"instrument": self.name, "what": "levels kept per categorical column in the C2ST (the real table's "
                 "most frequent; the rest one level (other))", "cap": MAX_LEVELS,
                 "used": {c: MAX_LEVELS for c in capped}, "reached": bool(capped)}]


class DistanceInstrument(Instrument):
    """Distances to the closest real record (module docstring)."""

    name = "distances"
    uses_model = False
    title = "Distance to the closest real record"
    unit = "rows"
    description = ("each record's distance to its closest real record, against fresh real rows' distances; "
                   "exact and near copies of real rows")
    expected_direction = "lower"  # rows with shuffled columns sit further from every real record
    directions = ("further from the real records", "closer to the real records")
    seconds_per_query = 0.00015
    """Seconds per query against 5,000 real rows of 15 columns, measured on Adult on 2 busy cores (docs/audit.md)."""

    def __init__(self, max_rows: int = DCR_ROWS) -> None:
        self.max_rows = max_rows

    def plan(self, data: AuditData) -> WorkPlan:
        queries = min(self.max_rows, len(data.groups[RELEASE])) * 3 + min(2 * self.max_rows, len(data.fresh))
        per = self.seconds_per_query * max(1.0, len(data.training) / 5000) * max(1.0, len(data.kinds) / 15)
        return WorkPlan(units=4, what="groups", seconds_per_unit=queries / 4 * per, description=self.description)

    def run(self, data: AuditData, progress: Progress) -> Reading:
        from llmdisc.baselines.distances import gower_dcr, row_hashes
        from llmdisc.baselines.encoding import resolve_schema, seeded_rows
        from llmdisc.discrimination.samples import derive_seed
        from llmdisc.scoring.auc import auc_test

        start = time.perf_counter()
        rng = np.random.default_rng(derive_seed(data.seed, "audit", "distances"))
        schema = resolve_schema(data.training, data.groups[RELEASE], data.kinds, names=("real", "release"))
        # the fresh rows and the negative control are two halves of rows the distances are not measured against
        negative = seeded_rows(data.fresh, min(2 * self.max_rows, len(data.fresh)), rng)
        half = len(negative) // 2
        queries = {"fresh": negative.iloc[:half], NEGATIVE: negative.iloc[half:]}
        for group in GROUPS:
            if group != NEGATIVE:
                queries[group] = seeded_rows(data.groups[group], min(self.max_rows, len(data.groups[group])), rng)
        reading = self.reading(details={"notes": [
            f"distances to the {len(data.training)} " + ("training rows (--real)" if data.training is not data.real
                                                          else "real-class rows")
            + "; fresh real rows and the negative control: two halves of "
            + ("the --holdout rows" if data.training is not data.real else "the other --real rows")]})
        progress.start(self.name, len(queries), "groups")
        distances, copies = {}, {}
        real_hash = row_hashes([data.training], schema)[0]
        for name, rows in queries.items():
            if progress.out_of_time():
                reading.status, reading.reason = "stopped", "--max-minutes reached"
                break
            distances[name] = gower_dcr(rows.reset_index(drop=True), data.training, schema)
            copies[name] = float(np.isin(row_hashes([rows], schema)[0], real_hash).mean()) if len(rows) else None
            progress.advance()
        fresh = distances.get("fresh")
        if fresh is not None and len(fresh) >= 2:
            near = float(np.quantile(fresh, NEAR_COPY_QUANTILE))
            for group in GROUPS:
                if group not in distances or len(distances[group]) < 2:
                    continue
                d = distances[group]
                labels = np.r_[np.zeros(len(fresh)), np.ones(len(d))]
                test = auc_test(labels, -np.r_[fresh, d], seed=derive_seed(data.seed, "audit", "dcr", group),
                                permutations=500)
                reading.comparisons[group] = Comparison(
                    group, test.auc.value, test.auc.ci_low, test.auc.ci_high, test.p_value, len(fresh), len(d),
                    extra={"median_distance": float(np.median(d)), "median_distance_fresh": float(np.median(fresh)),
                           "exact_copy_rate": copies[group], "exact_copy_rate_fresh": copies["fresh"],
                           "near_copy_rate": float((d < near).mean()) if near > 0 else None})
            reading.details["near_copy_threshold"] = near
        release = reading.comparisons.get(RELEASE)
        if release is not None:
            extra = release.extra
            reading.findings.append(
                f"{100 * extra['exact_copy_rate']:.1f} % of the release's records are exact copies of real records "
                f"(fresh real rows: {100 * extra['exact_copy_rate_fresh']:.1f} %); median distance to the closest "
                f"real record {extra['median_distance']:.3f} against {extra['median_distance_fresh']:.3f} for fresh "
                "real rows (0 = identical).")
            if release.separated:
                closer = release.auc > 0.5
                reading.findings.append("The release's records sit " + ("closer to" if closer else "further from")
                                        + " the real records than fresh real records do"
                                        + (" — a sign of copying or memorisation." if closer else "."))
        reading.seconds = time.perf_counter() - start
        return reading

    def caps(self, reading: Reading) -> list[dict[str, Any]]:
        """The distances' cap as ``audit.json``'s ``caps`` lists it: records measured per group (seeded)."""
        used = {g: c.n_other for g, c in reading.comparisons.items()}
        used["fresh"] = next(iter(reading.comparisons.values())).n_real if reading.comparisons else 0
        return [{"instrument": self.name, "what": "records per group whose distance to the closest real record is "
                 "measured (seeded; fresh real rows and the negative control share twice the cap)",
                 "cap": self.max_rows, "used": used,
                 "reached": any(n >= self.max_rows for n in used.values())}]
