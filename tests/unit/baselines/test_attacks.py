"""Anonymeter attacks, holdout as control, on small real Adult tables: copies leak, fresh rows do not."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from llmdisc.baselines import anonymeter_attacks
from llmdisc.data.datasets import column_kinds, load_dataset
from llmdisc.errors import ConfigError, DataError

KINDS = column_kinds("adult")


@pytest.fixture(scope="module")
def parts() -> dict[str, pd.DataFrame]:
    """Disjoint real Adult rows: train 1,000, holdout 1,000, fresh 1,000; and exact copies of train."""
    adult = load_dataset("adult")
    order = np.random.default_rng(0).permutation(len(adult))
    train, holdout, fresh = (adult.iloc[order[i * 1000:(i + 1) * 1000]].reset_index(drop=True)
                             for i in range(3))
    return {"train": train, "holdout": holdout, "fresh": fresh,
            "copies": train.sample(frac=1.0, random_state=1).reset_index(drop=True)}


def test_singling_out_risk_high_for_copies_and_near_zero_for_fresh_rows(parts):
    copies = anonymeter_attacks(parts["train"], parts["copies"], parts["holdout"], seed=0, n_attacks=100,
                                kinds=KINDS, attacks=["singling_out"])[0]
    fresh = anonymeter_attacks(parts["train"], parts["fresh"], parts["holdout"], seed=0, n_attacks=100,
                               kinds=KINDS, attacks=["singling_out"])[0]
    assert copies.attack == "singling_out" and copies.n_attacks == 100 and copies.seed == 0
    assert copies.risk.value > 0.5 and copies.risk.ci_low > 0.2
    assert fresh.risk.ci_low <= 0.05
    assert copies.risk.ci_low <= copies.risk.value <= copies.risk.ci_high
    again = anonymeter_attacks(parts["train"], parts["copies"], parts["holdout"], seed=0, n_attacks=100,
                               kinds=KINDS, attacks=["singling_out"])[0]
    assert again == copies


@pytest.mark.slow  # Anonymeter's neighbour search is compiled by numba on first use (~10-30 s)
def test_linkability_and_inference_are_seeded_and_see_copies(parts):
    from anonymeter.evaluators import linkability_evaluator

    upstream = linkability_evaluator._random_links
    np.random.seed(7)
    state = np.random.get_state()[1].copy()
    run = dict(seed=3, n_attacks=60, kinds=KINDS, attacks=["linkability", "inference"])
    copies = anonymeter_attacks(parts["train"], parts["copies"], parts["holdout"], **run)
    assert copies == anonymeter_attacks(parts["train"], parts["copies"], parts["holdout"], **run)
    assert np.array_equal(np.random.get_state()[1], state)  # numpy's global state is restored
    assert linkability_evaluator._random_links is upstream  # the seeded helper is swapped in for the call
    link, infer = copies
    assert (link.attack, infer.attack) == ("linkability", "inference")
    assert link.risk.value > 0.5 and link.attack_rate > link.control_rate
    assert "secret 'income'" in infer.detail and infer.attack_rate > infer.baseline_rate
    fresh_link = anonymeter_attacks(parts["train"], parts["fresh"], parts["holdout"], **run)[0]
    assert fresh_link.risk.ci_low <= 0.05


def test_unknown_attack_and_secret_are_refused(parts):
    with pytest.raises(ConfigError,
                       match=r"unknown Anonymeter attack\(s\) \['membership'\]; fix: choose from"):
        anonymeter_attacks(parts["train"], parts["fresh"], parts["holdout"], seed=0, attacks=["membership"])
    with pytest.raises(ConfigError, match=r"secret column 'salary' is not among the usable columns"):
        anonymeter_attacks(parts["train"], parts["fresh"], parts["holdout"], seed=0, secret="salary")


def test_mismatched_tables_are_named(parts):
    with pytest.raises(DataError, match=r"only in real train: \['native_country'\]; only in synthetic: \[\]"):
        anonymeter_attacks(parts["train"], parts["fresh"].drop(columns=["native_country"]), parts["holdout"],
                           seed=0)


def test_constant_and_all_missing_columns_are_dropped(parts):
    extra = {"constant": "x", "empty": np.nan}
    tables = [parts[k].head(300).assign(**extra) for k in ("train", "copies", "holdout")]
    res = anonymeter_attacks(*tables, seed=0, n_attacks=30, kinds=None, attacks=["singling_out"])[0]
    assert np.isfinite(res.risk.value)


def test_only_anonymeters_own_warnings_reach_the_detail():
    import warnings

    from llmdisc.baselines.attacks import anonymeter_notes

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # a socket another test left open, closed by the garbage collector while an attack runs
        warnings.warn("unclosed <socket.socket fd=19>", ResourceWarning)
        warnings.warn("Attack is as good or worse as baseline model.\nsecond line", UserWarning)
        warnings.warn("Attack is as good or worse as baseline model.", UserWarning)
    assert anonymeter_notes(caught) == "Attack is as good or worse as baseline model."
