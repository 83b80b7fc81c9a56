"""The sample instruments' 20-row samples: disjoint while the rows last, and, where they must share rows, an
interval whose coverage under no difference is checked by simulating the very draws the audit makes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from llmdisc.audit.instruments.base import GROUPS, NEGATIVE, POSITIVE, RELEASE, AuditData, Comparison
from llmdisc.audit.instruments.samples import SamplePasses, effective_samples, shared_rows_comparison


def _data(rows: dict[str, int], tmp_path: Path) -> AuditData:
    """An AuditData whose tables hold a row id only (``id`` = group name and position)."""
    text = {g: pd.DataFrame({"id": [f"{g}-{i}" for i in range(n)], "x": np.arange(n) % 7}) for g, n in rows.items()}
    return AuditData(real=text["real"], groups={g: text[g] for g in GROUPS}, reference=text["real"].iloc[:0],
                     text=text, kinds={"id": "categorical", "x": "numerical"}, seed=7, cache_dir=tmp_path)


def test_samples_share_no_row_while_the_rows_last(tmp_path: Path) -> None:
    data = _data({"real": 400, RELEASE: 400, POSITIVE: 200, NEGATIVE: 205}, tmp_path)
    passes = SamplePasses(20)  # 20 for the real class and the release, 10 for each control
    draws = passes.draws(data)
    for group, n_rows in (("real", 400), (RELEASE, 400), (POSITIVE, 200), (NEGATIVE, 205)):
        ids = [i for _, sample in draws[group] for i in sample["id"]]
        assert len(ids) == len(set(ids)) == 20 * passes.counts[group], group  # disjoint: independent samples
        assert passes.disjoint[group]
    # the same seed draws the same samples, and sample i does not depend on how many are drawn
    again = SamplePasses(20).draws(data)
    assert all(a[1].equals(b[1]) for a, b in zip(draws["real"], again["real"]))
    fewer = SamplePasses(12).draws(data)
    assert all(a[1].equals(b[1]) for a, b in zip(fewer["real"], draws["real"][:12]))


def test_past_the_rows_a_new_permutation_starts_and_the_group_is_marked_as_sharing_rows(tmp_path: Path) -> None:
    data = _data({"real": 97, RELEASE: 97, POSITIVE: 97, NEGATIVE: 97}, tmp_path)
    passes = SamplePasses(20)
    draws = passes.draws(data)
    first_round = [i for _, sample in draws["real"][:4] for i in sample["id"]]
    assert len(set(first_round)) == 80  # 97 // 20 = 4 disjoint samples, then the rows run out
    assert not passes.disjoint["real"] and all(len(sample) == 20 for _, sample in draws["real"])


def _auc(real: np.ndarray, other: np.ndarray) -> float:
    ranks = stats.rankdata(np.r_[real, other])
    return (ranks[len(real):].sum() - len(other) * (len(other) + 1) / 2) / (len(real) * len(other))


@pytest.mark.parametrize(("pool", "samples"), [(97, 20), (97, 10), (200, 20), (400, 20)])
def test_where_samples_share_rows_the_interval_still_covers_chance_95_percent_of_the_time(pool: int,
                                                                                          samples: int) -> None:
    # two groups of real rows (no difference); a sample's score adds up over its rows, as C and log P nearly do;
    # the samples are drawn as the audit draws them once the rows run out: 20 rows each, independently
    rng = np.random.default_rng(pool * 100 + samples)
    covered, runs = 0, 1500
    for _ in range(runs):
        scores = []
        for _group in range(2):
            rows = rng.normal(size=pool)
            scores.append(np.array([rows[rng.choice(pool, 20, replace=False)].sum() for _ in range(samples)]))
        comparison = shared_rows_comparison(
            Comparison(RELEASE, _auc(*scores), 0.5, 0.5, None, samples, samples), pool, pool, 20)
        covered += comparison.auc_low <= 0.5 <= comparison.auc_high
    assert effective_samples(samples, pool, 20) < 0.9 * samples  # they do share rows
    assert covered / runs >= 0.94, covered / runs
