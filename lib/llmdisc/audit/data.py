"""The audit's groups of rows, built once and read by every instrument (:func:`audit_data`).

The real rows read are split, by seeded positions, into disjoint parts so that no comparison sets a row against
itself: :data:`REFERENCE_ROWS` rows of context for the sample instruments, the real class, and the rows of both
controls (the negative control as read, the positive control with every column shuffled). With ``--holdout`` the
real class is the holdout, so a generator that memorised its training rows cannot look indistinguishable, and the
distance checks measure against all the training rows with the holdout as fresh rows (docs/audit.md, Groups and
controls).
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
"""Real rows set aside as the sample instruments' context (at most a tenth of the rows read)."""


def _split(n: int, reference: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    order = np.random.default_rng(seed).permutation(n)
    ref, rest = np.sort(order[:reference]), order[reference:]
    half = len(rest) // 2
    return ref, np.sort(rest[:half]), np.sort(rest[half:])


def audit_data(text: dict[str, pd.DataFrame], rows: dict[str, pd.DataFrame], kinds: dict[str, str], *, seed: int,
               cache_dir: Path, reference_rows: int = REFERENCE_ROWS) -> AuditData:
    """Split the rows read into the audit's groups (module docstring): ``text`` is ``{"real", "synthetic"[,
    "holdout"]}`` as the language models see them (dates as text), ``rows`` the same rows for the row-level
    instruments (dates as days), same order; the split and the shuffle derive their own seeds from ``seed``.
    :class:`DataError` for fewer than 4 real (or holdout) rows, or a single column (no positive control)."""
    n = len(rows["real"])
    if n < 4:
        raise DataError(f"the real table has {n} rows; an audit needs at least 4 to split into a real class and "
                        "controls; fix: pass the real table the release was made from")
    reference = min(reference_rows, n // 10)
    has_holdout = "holdout" in text
    if has_holdout and len(rows["holdout"]) < 4:
        raise DataError(f"the holdout has {len(rows['holdout'])} rows; with --holdout it is the real class and "
                        "needs at least 4; fix: pass a larger holdout, or leave --holdout out")
    ref, real_idx, other_idx = _split(n, reference, derive_seed(seed, "audit", "split"))
    if has_holdout:  # the training rows past the reference all go to the controls
        other_idx = np.sort(np.r_[real_idx, other_idx])
    shuffle_seed = derive_seed(seed, "audit", POSITIVE)
    out: dict[str, dict[str, pd.DataFrame]] = {}
    for view, tables in (("text", text), ("rows", rows)):
        read = tables["real"]
        other = read.iloc[other_idx].reset_index(drop=True)
        real = tables["holdout"].reset_index(drop=True) if has_holdout else read.iloc[real_idx].reset_index(drop=True)
        out[view] = {"real": real, "reference": read.iloc[ref].reset_index(drop=True),
                     RELEASE: tables["synthetic"].reset_index(drop=True),
                     POSITIVE: shuffled_columns_table(other, seed=shuffle_seed), NEGATIVE: other}
    rows_view = out["rows"]
    if has_holdout:
        notes = {"real": f"the {len(real)} --holdout rows: records the generator never saw (a generator that "
                         "memorised its training rows is indistinguishable from those, not from these)",
                 NEGATIVE: f"{len(other_idx)} of the --real rows (the generator's training rows), in the synthetic "
                           "class: real against real"}
        training, fresh = rows["real"].reset_index(drop=True), rows_view["real"]
    else:
        notes = {"real": f"{len(real_idx)} of the --real rows (seeded half); no --holdout, so the real class is the "
                         "generator's own training rows and a generator that memorised them reads as "
                         "indistinguishable on every instrument but the distances (pass --holdout)",
                 NEGATIVE: f"the other {len(other_idx)} --real rows, in the synthetic class: real against real"}
        training, fresh = rows_view["real"], rows_view[NEGATIVE]
    notes.update({
        "reference": f"{len(ref)} other --real rows, shown before each sample as context by the sample instruments",
        RELEASE: "the synthetic rows read",
        POSITIVE: f"the positive control: the negative control's {len(other_idx)} --real rows, every column shuffled "
                  "independently (seeded)"})
    return AuditData(real=rows_view["real"], groups={g: rows_view[g] for g in (RELEASE, POSITIVE, NEGATIVE)},
                     reference=rows_view["reference"], text=out["text"], kinds=dict(kinds), seed=seed,
                     cache_dir=Path(cache_dir), notes=notes, training=training, fresh=fresh)
