"""Control releases: pseudo-releases whose answer is known, so a discriminator's power can be checked.

The *positive control* (:func:`shuffled_columns_table`) keeps every real marginal but destroys all joint structure;
a discriminator that cannot tell it from real rows (AUC near 0.5) cannot vouch for a release either. The *negative
control* is real holdout rows labelled as the synthetic class, which any discriminator must score at chance.
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
    """Return a new ``table`` (index ``0..n-1``, same dtypes) with column ``j`` permuted by
    ``default_rng([seed, j])``: marginals kept, joint structure destroyed.

    Raises:
        DataError: fewer than 2 rows or 2 columns (nothing to shuffle apart).
    """
    if len(table) < 2 or table.shape[1] < 2:
        raise DataError(f"a shuffled-columns control needs at least 2 rows and 2 columns; got {table.shape}; "
                        "fix: pass the real train table, not a sample of one row or one column")
    shuffled = {column: table[column].to_numpy()[np.random.default_rng([seed, j]).permutation(len(table))]
                for j, column in enumerate(table.columns)}
    return pd.DataFrame(shuffled, columns=table.columns).astype(table.dtypes.to_dict())
