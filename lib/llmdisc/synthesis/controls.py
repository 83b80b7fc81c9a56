"""Control releases: pseudo-releases whose answer is known, so a discriminator's power can be checked.

A *positive control* keeps every real column's marginal distribution but shuffles each column
independently, so all joint structure (age vs. education, relationship vs. sex) is destroyed while every
single value is real. A discriminator with any power over cross-column structure must tell it apart from
real rows; one that cannot (AUC near 0.5 on this control) cannot vouch for a release either.
The *negative control* needs no table of its own: it is real holdout rows labelled as the "synthetic" class
(see :func:`llmdisc.discrimination.samples.build_trial_queue`), which any discriminator must score at chance.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from llmdisc.errors import DataError

POSITIVE_CONTROL = "shuffled_columns"
"""Synthesizer name of the positive control in trial records, tables and figures."""
NEGATIVE_CONTROL = "real_holdout"
"""Synthesizer name of the negative control: real holdout rows standing in the synthetic class."""
CONTROLS = (POSITIVE_CONTROL, NEGATIVE_CONTROL)


def shuffled_columns_table(table: pd.DataFrame, *, seed: int) -> pd.DataFrame:
    """Return ``table`` with every column permuted independently (marginals kept, joint structure destroyed).

    Args:
        table: a real table (e.g. the train split), at least 2 rows and 2 columns.
        seed: seed of the permutations; column ``j`` is permuted by ``default_rng([seed, j])``, so the
            result does not depend on the column order of other columns.

    Returns:
        A new DataFrame with the same columns, dtypes and row count; each column holds exactly the values
        of the input column (same multiset), in an order independent of every other column. The index is
        reset to ``0..n-1``.

    Raises:
        DataError: fewer than 2 rows or 2 columns (nothing to shuffle apart).
    """
    if len(table) < 2 or table.shape[1] < 2:
        raise DataError(f"a shuffled-columns control needs at least 2 rows and 2 columns; got {table.shape}; "
                        "fix: pass the real train table, not a sample of one row or one column")
    shuffled = {}
    for j, column in enumerate(table.columns):
        order = np.random.default_rng([seed, j]).permutation(len(table))
        shuffled[column] = table[column].to_numpy()[order]
    out = pd.DataFrame(shuffled, columns=table.columns)
    return out.astype(table.dtypes.to_dict())
