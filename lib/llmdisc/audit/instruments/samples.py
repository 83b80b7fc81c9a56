"""The sample instruments: what the embedded language model finds probable in 20-row samples.

Both read the same forward passes (:class:`SamplePasses`, run once per audit): for each 20-row sample of every
group, the table (as :data:`SERIALISATION`) of :data:`~llmdisc.audit.data.REFERENCE_ROWS` real reference rows
followed by the sample's rows is scored by the embedded model (SmolLM2-135M through transformers, no network), only the
sample's tokens counted, and so are ``k`` seeded within-sample permutations of it (every column permuted
independently within the same 20 rows; :mod:`llmdisc.discrimination.likelihood.joint`).

- :class:`LikelihoodInstrument` — the table's mean token log-likelihood (nats per token; higher = more probable).
  It reads *values*: odd numbers, invented codes, collapsed categories. It is blind to whether a row's values
  belong together, and its positive control says so.
- :class:`JointInstrument` — the joint-structure contrast C = log P(sample) − mean log P(permutations): how much
  more probable the model finds the rows' own combinations of values than the same values recombined. Every
  column's values are exactly the same in both terms, so marginal artefacts cancel; a release that lost the
  dependences real rows have (a Husband who is Male, Bachelors with education_num 13) has C near 0, real rows
  well above. Its positive control (columns shuffled) is what it is built to detect.

The real class is :data:`~.base.RELEASE`'s counterpart: samples of the real-class rows. Units are samples, so
the intervals are wider than the row instruments'; ``--samples`` sets how many per group.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import numpy as np
import pandas as pd

from llmdisc.errors import DataError

SERIALISATION = "csv"
"""How the sample instruments write a table: CSV, unpadded, so a sample costs about half the Markdown table's
tokens (Adult) and the reference rows' text, the same for every sample, runs once (Markdown pads each column to the
widest value of the whole table, so a sample with a longer value changes it). On Adult it separated the positive
control as Markdown did (``results/tables/joint_design.csv``); at 20 samples a group Census codes read 0.70 against
Markdown's 0.67."""
from llmdisc.audit.instruments.base import (
    GROUPS,
    POSITIVE,
    RELEASE,
    AuditData,
    Comparison,
    Instrument,
    Progress,
    Reading,
    WorkPlan,
)

PERMUTATIONS = 2
"""Within-sample permutations per sample (k): each costs one more pass of the sample's rows."""
PROBE_SAMPLES = (("real", 0), (RELEASE, 0), ("real", 1), (POSITIVE, 0))
"""The timing probe's samples (group, index): a warm-up, then three timed; the plan reads their median. They are
samples the run scores, so it reuses them."""
MIN_CONTROL_SAMPLES = 10
"""Fewest samples a control gets (unless ``samples`` itself is smaller)."""
TOP_COLUMNS = 3


class SamplePasses:
    """The model passes both sample instruments read, computed once per audit and cached in the audit folder.

    Args:
        samples: samples of the real class and of the release (the comparison the gate reads); each control gets
            half as many, but at least ``min(samples, MIN_CONTROL_SAMPLES)`` (a control's effect is large or nil:
            fewer samples decide it).
        k: within-sample permutations per sample (0: the likelihood alone, one pass per sample).
        n_rows: rows per sample.
    """

    def __init__(self, samples: int, *, k: int = PERMUTATIONS, n_rows: int = 20) -> None:
        self.k, self.n_rows = k, n_rows
        self.resize(samples)
        self.records: dict[str, list[dict[str, Any]]] | None = None
        self.scorer: Any = None
        self.probe_seconds: float | None = None
        self.probed: dict[str, int] = {}  # per group, the first samples scored (and cached) by the probe
        self.status, self.reason = "measured", None

    def _open(self, data: AuditData) -> Any:
        if self.scorer is None:
            from llmdisc.discrimination.likelihood.token_cache import TokenCache
            from llmdisc.discrimination.likelihood.transformers_backend import TransformersScorer

            self.scorer = TransformersScorer(token_cache=TokenCache(enabled=False), dtype="auto")
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
        """Shrink ``samples`` (never grow it, never below ``fewest``) so that the passes take at most ``seconds``
        at the probe's speed; returns the new ``samples``. Samples are drawn by index, so the smaller run's
        samples are the first ones of the larger run's: sizing changes n, never which samples are read."""
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
        """The passes still to run at the probe's speed (after :meth:`plan` has probed; the samples it scored
        are in the cache already)."""
        left = self.passes - (self.k + 1) * sum(min(n, self.counts[g]) for g, n in self.probed.items())
        return WorkPlan(units=left, what="model passes", seconds_per_unit=self.probe_seconds or 0.0,
                        description=description, fixed_seconds=fixed_seconds)

    def draws(self, data: AuditData) -> dict[str, list[tuple[int, pd.DataFrame]]]:
        """``{group: [(sample_seed, rows), ...]}`` for the real class (``real``) and every group."""
        from llmdisc.discrimination.samples import derive_seed, sample_rows

        out = {}
        for group in ("real",) + GROUPS:
            table = data.text[group]
            items = []
            for i in range(self.counts[group]):
                seed = derive_seed(data.seed, "audit", "samples", group, i)
                rows, _ = sample_rows(table, min(self.n_rows, len(table)), seed=seed)
                items.append((seed, rows))
            out[group] = items
        return out

    def plan(self, data: AuditData) -> WorkPlan:
        """Time :data:`PROBE_SAMPLES` (the first samples of the real class, the release and the positive control,
        whose lengths differ) after a warm-up sample (which loads the model and the reference rows' shared prefix,
        reused by every later pass), scored as the run scores them (``k + 1`` passes in one call) and cached, so
        the run does not score them again; plan the passes still to run at their median speed (one sample slowed
        by a transient load does not size the audit)."""
        try:
            scorer = self._open(data)
            draws = self.draws(data)
            timings = []
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
        from dataclasses import asdict

        from llmdisc.discrimination.likelihood.joint import joint_contrast, score_tables
        from llmdisc.discrimination.likelihood.score_cache import ScoreCache
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
        draws = self.draws(data)
        scorer = self._open(data)
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
                records[group].append({"sample_seed": seed, **scores})
                if not probed(group, i):  # the ETA and the deadline's look-ahead read the speed of real work
                    progress.advance()
        self.records = records
        return records


class _SampleInstrument(Instrument):
    unit = "20-row samples"
    field: str

    def __init__(self, passes: SamplePasses) -> None:
        self.passes = passes

    def plan(self, data: AuditData) -> WorkPlan:
        if self.passes.probe_seconds is None and self.passes.status == "measured":
            first = self.passes.plan(data)
            return WorkPlan(units=first.units, what=first.what, seconds_per_unit=first.seconds_per_unit,
                            fixed_seconds=first.fixed_seconds, description=self.description + " (passes shared with the other sample instrument)")
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
    field = "mean_logprob"

    def findings(self, records: dict[str, list[dict[str, Any]]], reading: Reading) -> list[str]:
        release = reading.comparisons.get(RELEASE)
        if release is None or not release.separated:
            return []
        deltas = column_deltas(records["real"], records[RELEASE], "column_logprob") / 20
        lines = [f"The release's values are {'less' if release.auc < 0.5 else 'more'} probable to the model than "
                 f"real values (AUC {release.auc:.2f})."]
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
    field = "contrast"

    def findings(self, records: dict[str, list[dict[str, Any]]], reading: Reading) -> list[str]:
        release = reading.comparisons.get(RELEASE)
        if release is None or not release.separated:
            return []
        lines = [f"The release's rows hold together {'less' if release.auc < 0.5 else 'more'} than real rows do: "
                 f"mean contrast C {release.extra['mean_other']:+.1f} nats against {release.extra['mean_real']:+.1f} "
                 f"for real samples (AUC {release.auc:.2f})."]
        deltas = column_deltas(records["real"], records[RELEASE], "column_contrast")
        for column, delta in deltas.head(TOP_COLUMNS).items():
            if delta < 0:
                lines.append(f"{column!r} no longer goes with the rest of its row: its values are {-delta:.1f} nats "
                             "per sample less predictable from the row than in real data.")
        return lines
