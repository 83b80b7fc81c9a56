"""The audit's groups of rows, built once and read by every instrument (:class:`~.instruments.base.AuditData`).

The real rows read are split, by seeded positions, into disjoint parts so that no comparison sets a row against
itself:

- ``reference`` — :data:`REFERENCE_ROWS` real rows that the sample instruments show *before* each sample as
  context (the model reads real combinations there); no other group holds them;
- the **real class** — half of the rest;
- the other half — the source of the positive control (its columns shuffled independently, seeded) and, when
  no ``--holdout`` is given, of the negative control (real rows standing in the synthetic class).

With ``--holdout`` the negative control is the holdout: records the synthesizer never saw.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from llmdisc.audit.instruments.base import NEGATIVE, POSITIVE, RELEASE, AuditData
from llmdisc.discrimination.samples import derive_seed
from llmdisc.errors import DataError
from llmdisc.synthesis.controls import shuffled_columns_table

REFERENCE_ROWS = 40
"""Real rows set aside as the sample instruments' context (fewer when the table is small). The audit keeps 40, the
size its gate tests were measured at; the pipeline's joint contrast uses 20
(:data:`~llmdisc.discrimination.likelihood.joint_runs.DEFAULT_REFERENCE_ROWS`)."""


def _split(n: int, reference: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    order = np.random.default_rng(seed).permutation(n)
    ref, rest = np.sort(order[:reference]), order[reference:]
    half = len(rest) // 2
    return ref, np.sort(rest[:half]), np.sort(rest[half:])


def audit_data(text: dict[str, pd.DataFrame], rows: dict[str, pd.DataFrame], kinds: dict[str, str], *, seed: int,
               cache_dir: Path, reference_rows: int = REFERENCE_ROWS) -> AuditData:
    """Split the rows read into the audit's groups (module docstring).

    Args:
        text: ``{"real", "synthetic"[, "holdout"]}`` as the language models see them (dates as text).
        rows: the same rows for the row-level instruments (dates as days), same order.
        kinds: the row-level column kinds.
        seed: the run seed; the split uses ``derive_seed(seed, "audit", "split")`` and the positive control
            ``derive_seed(seed, "audit", "shuffled_columns")``.
        cache_dir: the audit's cache folder.
        reference_rows: rows set aside as context (reduced to a tenth of the real rows when fewer are read).

    Raises:
        DataError: fewer than 4 real rows, or a single column (no positive control can be built).
    """
    n = len(rows["real"])
    if n < 4:
        raise DataError(f"the real table has {n} rows; an audit needs at least 4 to split into a real class and "
                        "controls; fix: pass the real table the release was made from")
    reference = min(reference_rows, n // 10)
    ref, real_idx, other_idx = _split(n, reference, derive_seed(seed, "audit", "split"))
    shuffle_seed = derive_seed(seed, "audit", POSITIVE)
    out: dict[str, dict[str, pd.DataFrame]] = {}
    for view, tables in (("text", text), ("rows", rows)):
        real = tables["real"]
        other = real.iloc[other_idx].reset_index(drop=True)
        groups = {RELEASE: tables["synthetic"].reset_index(drop=True),
                  POSITIVE: shuffled_columns_table(other, seed=shuffle_seed),
                  NEGATIVE: tables["holdout"].reset_index(drop=True) if "holdout" in tables else other}
        out[view] = {"real": real.iloc[real_idx].reset_index(drop=True),
                     "reference": real.iloc[ref].reset_index(drop=True), **groups}
    notes = {
        "real": f"{len(real_idx)} of the real rows read (seeded half)",
        "reference": f"{len(ref)} other real rows, shown before each sample as context by the sample instruments",
        RELEASE: "the synthetic rows read",
        POSITIVE: f"the other {len(other_idx)} real rows, every column shuffled independently (seeded)",
        NEGATIVE: ("real holdout rows (--holdout): records the synthesizer never saw" if "holdout" in text
                   else f"the other {len(other_idx)} real rows (no --holdout: pass one to use records the "
                   "synthesizer never saw)"),
    }
    rows_view = out["rows"]
    return AuditData(real=rows_view["real"], groups={g: rows_view[g] for g in (RELEASE, POSITIVE, NEGATIVE)},
                     reference=rows_view["reference"], text=out["text"], kinds=dict(kinds), seed=seed,
                     cache_dir=Path(cache_dir), notes=notes)
