"""The sample instruments: what the embedded language model finds probable in 20-row samples.

Both read the same forward passes (:class:`SamplePasses`, once per audit): each 20-row sample of every group, after
the reference rows, and ``k`` seeded within-sample permutations of it (:mod:`llmdisc.discrimination.likelihood.joint`).
:class:`LikelihoodInstrument` reads the mean token log-likelihood (nats per token): *values*, blind to whether they
belong together. :class:`JointInstrument` reads C = log P(sample) − mean log P(permutations) (nats): the same values
in both terms, so only lost dependences between columns show. Samples that share rows count for what they are worth
(:func:`effective_samples`).
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import asdict, replace
from typing import Any

import numpy as np
import pandas as pd

from llmdisc.errors import DataError

SERIALISATION = "csv"
"""How the sample instruments write a table: unpadded CSV costs about half Markdown's tokens and keeps the reference
rows' text one prefix for every sample (Markdown vs CSV: docs/results.md, joint-structure design)."""
from llmdisc.audit.instruments.base import (GROUP_NAMES, GROUPS, MIN_UNITS, POSITIVE, RELEASE, AuditData,
                                            Comparison, Instrument, Progress, Reading, WorkPlan)

PERMUTATIONS = 2
"""Within-sample permutations per sample (k): each costs one more pass of the sample's rows."""
PROBE_SAMPLES = (("real", 0), (RELEASE, 0), ("real", 1), (POSITIVE, 0))
"""The timing probe's samples (group, index): a warm-up, then three timed (their median); the run reuses them."""
MIN_CONTROL_SAMPLES = 10
"""Fewest samples a control gets (unless ``samples`` itself is smaller)."""
TOP_COLUMNS = 3
SHARED_ROWS_TOLERANCE = 0.9
"""Samples worth less than this share of their number as independent ones are treated as sharing rows (their
interval widened, :attr:`~.base.Comparison.effective` set); above it the overlap is negligible."""


def effective_samples(samples: int, pool_rows: int, n_rows: int) -> float:
    """How many independent samples ``samples`` draws of ``n_rows`` rows from one pool of ``pool_rows`` rows are
    worth, for a group mean of a score that adds up over rows (C and log P nearly do): the mean's variance is
    σ²·n_rows·(f + (1 − f)/samples), f = n_rows / pool_rows, against σ²·n_rows/samples for independent ones.
    Hence 1 / (f + (1 − f) / samples): ≈ ``samples`` for a large pool, 1 when a sample is the whole pool.
    :class:`DataError` for a count below 1."""
    if min(samples, pool_rows, n_rows) < 1:
        raise DataError(f"samples={samples}, pool_rows={pool_rows}, n_rows={n_rows}: each must be at least 1; fix: "
                        "count the samples scored and the rows of the table they were drawn from")
    f = min(1.0, n_rows / pool_rows)
    return 1.0 / (f + (1.0 - f) / samples)


def shared_rows_note(effective: dict[str, tuple[float, float]], pools: dict[str, int], n_rows: int,
                     samples: int) -> str:
    """The report's sentence on samples that share rows: the pools, what the samples are worth, the fix."""
    names = {"real": "real class", **GROUP_NAMES}
    # the pool at which effective_samples reaches SHARED_ROWS_TOLERANCE × samples (rounded: 0.9 / 0.1 is not 9)
    per_pool = math.ceil(round(n_rows * (samples - 1) * SHARED_ROWS_TOLERANCE / (1 - SHARED_ROWS_TOLERANCE), 6))
    worth = "; ".join(f"against the {names[g]}: {e[0]:.1f} vs {e[1]:.1f}" for g, e in effective.items())
    return (f"The {n_rows}-row samples share rows (rows drawn from: "
            + ", ".join(f"{names[g]} {n}" for g, n in pools.items())
            + f"), so they count for fewer independent samples ({worth}); their intervals are widened to that, "
            f"and a control worth fewer than {MIN_UNITS} a side is not judged. Fix: audit a larger real table "
            f"(each group needs about {per_pool:,} rows for {samples} samples to count as nearly independent).")


def shared_rows_comparison(comparison: Comparison, real_pool: int, other_pool: int, n_rows: int) -> Comparison:
    """``comparison`` at what its samples are worth (:func:`effective_samples`): the AUC's score interval and a normal
    p-value at the effective sizes (label permutations assume independent samples), :attr:`~.base.Comparison.effective`
    set; unchanged when both groups are worth at least :data:`SHARED_ROWS_TOLERANCE` of their number."""
    from scipy import stats

    from llmdisc.scoring.separation import auc_interval, null_standard_error

    n1, n2 = comparison.n_real, comparison.n_other
    if comparison.auc is None or min(n1, n2) < 1:
        return comparison
    e1, e2 = effective_samples(n1, real_pool, n_rows), effective_samples(n2, other_pool, n_rows)
    if min(e1 / n1, e2 / n2) >= SHARED_ROWS_TOLERANCE:
        return comparison
    low, high = auc_interval(comparison.auc, e1, e2)
    p_value = float(2 * stats.norm.sf(abs(comparison.auc - 0.5) / null_standard_error(e1, e2)))
    return replace(comparison, auc_low=min(low, comparison.auc_low if comparison.auc_low is not None else low),
                   auc_high=max(high, comparison.auc_high if comparison.auc_high is not None else high),
                   p_value=p_value, effective=(e1, e2))


def account_for_shared_rows(reading: Reading, data: AuditData, n_rows: int, samples: int,
                            disjoint: dict[str, bool] | None = None) -> None:
    """Replace ``reading``'s comparisons by :func:`shared_rows_comparison`, except between two ``disjoint`` groups,
    and add :func:`shared_rows_note` to its notes where any changed."""
    pools = {g: len(data.text[g]) for g in ("real",) + GROUPS}
    disjoint = disjoint or {}
    for group, comparison in reading.comparisons.items():
        if disjoint.get("real") and disjoint.get(group):
            continue
        reading.comparisons[group] = shared_rows_comparison(comparison, pools["real"], pools[group], n_rows)
    shared = {g: c.effective for g, c in reading.comparisons.items() if c.effective is not None}
    if shared:
        reading.details.setdefault("notes", []).append(shared_rows_note(shared, pools, n_rows, samples))


class SamplePasses:
    """The model passes both sample instruments read, computed once per audit and cached in the audit folder:
    ``samples`` of the real class and of the release (the comparison the gate reads), each control half as
    many but at least ``min(samples, MIN_CONTROL_SAMPLES)`` (a control's effect is large or nil: fewer samples
    decide it), each with ``k`` within-sample permutations (0: the likelihood alone, one pass per sample)."""

    def __init__(self, samples: int, *, k: int = PERMUTATIONS, n_rows: int = 20) -> None:
        self.k, self.n_rows = k, n_rows
        self.resize(samples)
        self.records: dict[str, list[dict[str, Any]]] | None = None
        self.scorer: Any = None
        self.probe_seconds: float | None = None
        self.probed: dict[str, int] = {}  # per group, the first samples scored (and cached) by the probe
        self.disjoint: dict[str, bool] = {}  # per group, whether its samples share no row (set by draws)
        self.status, self.reason = "measured", None

    def _open(self, data: AuditData) -> Any:
        if self.scorer is None:
            from llmdisc.discrimination.cache import TokenCache
            from llmdisc.discrimination.likelihood.transformers_backend import TransformersScorer

            # float32 on every CPU (bfloat16 would be faster where native): two runners must read the same D
            self.scorer = TransformersScorer(token_cache=TokenCache(enabled=False))
        return self.scorer

    def resize(self, samples: int) -> None:
        """Set the samples of the real class and the release to ``samples`` (the controls follow, as above)."""
        self.samples = samples
        self.counts = {"real": samples, RELEASE: samples,
                       **{g: max(min(samples, MIN_CONTROL_SAMPLES), samples // 2) for g in GROUPS if g != RELEASE}}

    @property
    def passes(self) -> int:
        """Model passes of a whole run: ``k + 1`` per sample."""
        return (self.k + 1) * sum(self.counts.values())

    def fit(self, seconds: float, *, fewest: int = MIN_CONTROL_SAMPLES) -> int:
        """Shrink ``samples`` (never below ``fewest``) so the passes take at most ``seconds`` at the probe's speed;
        returns it. Sizing changes n, never which samples are read: a smaller run's are a larger run's first."""
        if self.probe_seconds is None:
            return self.samples
        size = self.samples
        while size > fewest:
            self.resize(size)
            if self.passes * self.probe_seconds <= seconds:
                break
            size -= 1
        self.resize(max(size, min(fewest, self.samples)))
        return self.samples

    def work_plan(self, description: str, *, fixed_seconds: float = 0.0) -> WorkPlan:
        """The passes still to run at the probe's speed (the samples :meth:`plan` scored are cached already)."""
        left = self.passes - (self.k + 1) * sum(min(n, self.counts[g]) for g, n in self.probed.items())
        return WorkPlan(units=left, what="model passes", seconds_per_unit=self.probe_seconds or 0.0,
                        description=description, fixed_seconds=fixed_seconds)

    def draws(self, data: AuditData) -> dict[str, list[tuple[int, pd.DataFrame]]]:
        """``{group: [(sample_seed, rows), ...]}`` for the real class (``real``) and every group: sample i is
        block i of a seeded permutation of the group's rows, a new permutation each time the rows run out (so
        the first ``rows // n_rows`` share no row), whatever the number drawn. Sets :attr:`disjoint`."""
        from llmdisc.discrimination.samples import derive_seed

        out = {}
        self.disjoint = {}
        for group in ("real",) + GROUPS:
            table = data.text[group]
            n = min(self.n_rows, len(table))
            per_round = len(table) // n
            self.disjoint[group] = self.counts[group] <= per_round
            orders: dict[int, np.ndarray] = {}
            items = []
            for i in range(self.counts[group]):
                turn, block = divmod(i, per_round)
                if turn not in orders:
                    rng = np.random.default_rng(derive_seed(data.seed, "audit", "samples", group, turn))
                    orders[turn] = rng.permutation(len(table))
                ids = orders[turn][block * n:(block + 1) * n]
                items.append((derive_seed(data.seed, "audit", "samples", group, i),
                              table.iloc[ids].reset_index(drop=True)))
            out[group] = items
        return out

    def plan(self, data: AuditData) -> WorkPlan:
        """Time :data:`PROBE_SAMPLES` after a warm-up sample (it loads the model and the reference rows' shared
        prefix), scored and cached as the run scores them, and plan the passes still to run at their median speed
        (one sample slowed by a transient load does not size the audit)."""
        try:
            scorer, draws, timings = self._open(data), self.draws(data), []
            for number, (group, index) in enumerate(PROBE_SAMPLES):
                if index < len(draws[group]):
                    seed, sample = draws[group][index]
                else:  # a size below the probe's: a sample with a seed of its own, not kept
                    seed, sample = number, self.draws_one(data, number)
                begin = time.perf_counter()
                try:
                    self._score(scorer, data, sample, seed=seed, k=self.k, cached=False)
                except DataError:  # nothing to recombine in this sample: the run records it, the probe skips it
                    continue
                timings.append(time.perf_counter() - begin)
                if index < len(draws[group]):
                    self.probed[group] = index + 1
            if len(timings) < 2:
                raise DataError("the timing probe found no sample whose values can be recombined (every column "
                                "constant within 20 rows); fix: check the real table's columns")
            sample_seconds = float(statistics.median(timings[1:]))
            self.probe_seconds = sample_seconds / (self.k + 1)
        except Exception as exc:  # noqa: BLE001 - the instruments report it
            self.status, self.reason = "unavailable", f"{type(exc).__name__}: {exc}"
            return WorkPlan(units=0, what="passes", seconds_per_unit=0.0)
        return self.work_plan("", fixed_seconds=max(0.0, timings[0] - sample_seconds))

    def draws_one(self, data: AuditData, index: int) -> pd.DataFrame:
        """A probe sample of the real class (seeds of their own, never a scored sample's)."""
        from llmdisc.discrimination.samples import derive_seed, sample_rows

        seed = derive_seed(data.seed, "audit", "probe", index)
        return sample_rows(data.text["real"], min(self.n_rows, len(data.text["real"])), seed=seed)[0]

    def _score(self, scorer: Any, data: AuditData, sample: pd.DataFrame, *, seed: int, k: int,
               cached: bool = True) -> dict[str, Any]:
        """One sample's record: its log P and, with ``k`` >= 1, the joint contrast against ``k`` permutations
        (:func:`llmdisc.discrimination.likelihood.joint.joint_contrast`); cached in the audit folder."""
        from llmdisc.discrimination.likelihood.joint import joint_contrast, score_tables
        from llmdisc.discrimination.cache import ScoreCache
        from llmdisc.manifest import sha256_json

        cache = ScoreCache(data.cache_dir / "samples")
        key = sha256_json({"sample": sample.astype(str).to_numpy().tolist(), "columns": list(map(str, sample.columns)),
                           "reference": sha256_json(data.text["reference"].astype(str).to_numpy().tolist()),
                           "k": k, "seed": seed, "model_digest": scorer.model_digest, "backend": scorer.backend,
                           "serialisation": SERIALISATION})
        hit = cache.get(key) if cached else None
        if hit is not None:
            return hit
        if k >= 1:
            scores = asdict(joint_contrast(scorer, sample, k=k, seed=seed, reference=data.text["reference"],
                                           serialisation=SERIALISATION))
        else:
            (table,), _ = score_tables(scorer, [sample.reset_index(drop=True)], reference=data.text["reference"],
                                       serialisation=SERIALISATION)
            scores = {"logprob": table.logprob, "n_tokens": table.n_tokens, "column_logprob": table.column_logprob}
        record = {**{k_: v for k_, v in scores.items() if k_ != "extras"},
                  "mean_logprob": scores["logprob"] / max(1, scores["n_tokens"])}
        cache.put(key, record)
        return record

    def run(self, data: AuditData, progress: Progress) -> dict[str, list[dict[str, Any]]]:
        """Score every sample of every group (resumable through the audit's score cache); memoised."""
        if self.records is not None:
            return self.records
        draws, scorer = self.draws(data), self._open(data)
        records: dict[str, list[dict[str, Any]]] = {group: [] for group in draws}

        def probed(group: str, index: int) -> bool:  # scored by the timing probe: a cache read, not counted
            return index < self.probed.get(group, 0)

        progress.start("sample passes", sum(not probed(g, i) for g, v in draws.items() for i in range(len(v))),
                       "samples")
        # round-robin over the groups, so that a deadline leaves every group with about as many samples
        for i in range(max(self.counts.values())):
            for group, items in draws.items():
                if i >= len(items):
                    continue
                if not probed(group, i) and progress.out_of_time():
                    self.status, self.reason = "stopped", "--max-minutes reached"
                    self.records = records
                    return records
                seed, rows = items[i]
                try:
                    scores = self._score(scorer, data, rows, seed=seed, k=self.k)
                except DataError as exc:  # e.g. a sample whose columns are all constant: nothing to recombine
                    scores = {"error": str(exc)}
                records[group].append({"sample_seed": seed, "variety": _variety(rows), **scores})
                if not probed(group, i):  # the ETA and the deadline's look-ahead read the speed of real work
                    progress.advance()
        self.records = records
        return records


def _variety(rows: pd.DataFrame) -> float:
    """:func:`llmdisc.scoring.variety.sample_variety`, NaN for a sample it cannot measure (under 2 rows)."""
    from llmdisc.scoring.variety import sample_variety

    try:
        return sample_variety(rows)
    except DataError:
        return float("nan")


class _SampleInstrument(Instrument):
    unit = "20-row samples"
    field: str

    def __init__(self, passes: SamplePasses) -> None:
        self.passes = passes

    def plan(self, data: AuditData) -> WorkPlan:
        if self.passes.probe_seconds is None and self.passes.status == "measured":
            return replace(self.passes.plan(data),
                           description=self.description + " (passes shared with the other sample instrument)")
        return WorkPlan(units=0, what="model passes (shared)", seconds_per_unit=0.0, description=self.description)

    def run(self, data: AuditData, progress: Progress) -> Reading:
        from llmdisc.discrimination.samples import derive_seed
        from llmdisc.scoring.auc import auc_test

        start = time.perf_counter()
        if self.passes.status == "unavailable":
            return self.reading(status="unavailable", reason=self.passes.reason)
        records = self.passes.run(data, progress)
        reading = self.reading(status=self.passes.status, reason=self.passes.reason,
                               details={"score": self.field, "k": self.passes.k,
                                        "reference_rows": len(data.reference), "notes": []})
        real = np.array([r.get(self.field, np.nan) for r in records["real"]], float)
        real = real[np.isfinite(real)]
        skipped = sum("error" in r for rs in records.values() for r in rs)
        if skipped:
            reading.details["notes"].append(f"{skipped} samples could not be scored (e.g. no two columns vary in "
                                            "them) and are left out")
        for group in GROUPS:
            values = np.array([r.get(self.field, np.nan) for r in records[group]], float)
            ok = np.isfinite(values)
            if len(real) < 2 or ok.sum() < 2:
                continue
            labels = np.r_[np.zeros(len(real)), np.ones(int(ok.sum()))]
            test = auc_test(labels, np.r_[real, values[ok]], seed=derive_seed(data.seed, "audit", self.name, group))
            reading.comparisons[group] = Comparison(
                group, test.auc.value, test.auc.ci_low, test.auc.ci_high, test.p_value, len(real), int(ok.sum()),
                extra={"mean_real": float(real.mean()), "mean_other": float(values[ok].mean()),
                       **self.extra(records["real"], records[group])})
        account_for_shared_rows(reading, data, self.passes.n_rows, max(self.passes.counts.values()),
                                disjoint=self.passes.disjoint)
        reading.findings = self.findings(records, reading)
        reading.seconds = time.perf_counter() - start
        return reading

    def extra(self, real: list[dict[str, Any]], other: list[dict[str, Any]]) -> dict[str, Any]:
        return {}

    def findings(self, records: dict[str, list[dict[str, Any]]], reading: Reading) -> list[str]:
        return []


def column_deltas(real: list[dict[str, Any]], other: list[dict[str, Any]], field: str) -> pd.Series:
    """Per column: mean over the other group's samples of ``record[field][column]`` minus the real class's
    (nats per sample), sorted from the most negative."""
    a = pd.DataFrame([r[field] for r in real if field in r]).mean()
    b = pd.DataFrame([r[field] for r in other if field in r]).mean()
    return (b - a).dropna().sort_values()


class LikelihoodInstrument(_SampleInstrument):
    """The table likelihood (module docstring)."""

    name = "likelihood"
    title = "Table likelihood (embedded model)"
    description = "how probable the embedded model finds each sample's values (mean token log-likelihood)"
    expected_direction = "lower"  # shuffled rows pair values the model finds improbable together
    directions = ("less probable", "more probable")
    field = "mean_logprob"

    def findings(self, records: dict[str, list[dict[str, Any]]], reading: Reading) -> list[str]:
        release = reading.comparisons.get(RELEASE)
        if release is None or not release.separated:
            return []
        deltas = column_deltas(records["real"], records[RELEASE], "column_logprob") / 20
        lines = [f"The release's values are {'less' if release.auc < 0.5 else 'more'} probable to the model than "
                 f"real values ({release.words(*self.directions)})."]
        for column, delta in deltas.head(TOP_COLUMNS).items():
            if delta < 0:
                lines.append(f"The values of {column!r} are less probable in the release than in real data "
                             f"({delta:+.2f} nats per row).")
        return lines


class JointInstrument(_SampleInstrument):
    """The joint-structure contrast (module docstring)."""

    name = "joint"
    title = "Joint structure (embedded model)"
    description = ("how much more probable the model finds each sample's rows than the same values recombined "
                   "within the sample (C = log P(sample) − mean log P(permutations))")
    expected_direction = "lower"  # shuffled columns keep no dependence: C near 0, real rows above it
    directions = ("less structured", "more structured")
    field = "contrast"

    def extra(self, real: list[dict[str, Any]], other: list[dict[str, Any]]) -> dict[str, Any]:
        """The groups' mean variety (:mod:`llmdisc.scoring.variety`, 0–1), read beside C: C grows with it."""
        return {"variety_real": float(np.nanmean([r.get("variety", np.nan) for r in real] or [np.nan])),
                "variety_other": float(np.nanmean([r.get("variety", np.nan) for r in other] or [np.nan]))}

    def findings(self, records: dict[str, list[dict[str, Any]]], reading: Reading) -> list[str]:
        release = reading.comparisons.get(RELEASE)
        if release is None or not release.separated:
            return []
        lines = [f"The release's rows hold together {'less' if release.auc < 0.5 else 'more'} than real rows do: "
                 f"mean contrast C {release.extra['mean_other']:+.1f} nats against {release.extra['mean_real']:+.1f} "
                 f"for real samples ({release.words(*self.directions)})."]
        real_variety, other_variety = release.extra.get("variety_real"), release.extra.get("variety_other")
        if real_variety is not None and np.isfinite([real_variety, other_variety]).all():
            lines.append(f"Variety (distinct values per column, 0–1) is {other_variety:.2f} in the release's samples "
                         f"against {real_variety:.2f} in real ones; C tends to rise with variety (a column of "
                         "alike values adds nothing to it), so "
                         + (f"part of this reading may be the release's {'fewer' if release.auc < 0.5 else 'more'} "
                            "distinct values rather than its dependence between columns."
                            if (other_variety - real_variety) * (release.auc - 0.5) > 0 else
                            "the difference in variety runs the other way and does not explain this reading."))
        deltas = column_deltas(records["real"], records[RELEASE], "column_contrast")
        for column, delta in deltas.head(TOP_COLUMNS).items():
            if delta < 0:
                lines.append(f"{column!r} is {-delta:.1f} nats per sample less predictable from the columns before "
                             "it than in real data (the model reads each row left to right, so a lost dependence "
                             "shows at the later of the two columns).")
        return lines
