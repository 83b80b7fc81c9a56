"""llmdisc: ask LLMs whether a 20-row sample of a table is REAL or SYNTHETIC, and score the answers.

The package is organised one subpackage per stage of the compendium, in pipeline order — ``data`` (01),
``synthesis`` (02), ``discrimination`` (03–04), ``scoring`` (07–08), ``baselines`` (05), ``human`` (06),
``figures`` (07), ``pipeline``, ``audit``, ``cli`` — each reading named input files and writing named outputs
with a ``manifest.json`` beside them. Imports run one way, from later stages to earlier ones; this module,
``errors``, ``paths`` and ``manifest`` sit below them all (docs/ARCHITECTURE.md).
"""

__version__ = "0.1.0"

LABELS = ("REAL", "SYNTHETIC")
CONDITIONS = ("C1", "C2")
SYNTHESIZERS = ("gaussian_copula", "ctgan", "tvae")
PAPER_RELEASES = tuple(f"paper_{name}" for name in SYNTHESIZERS)
"""The paper's own Census releases as cells (``paper_ctgan``: its CTGAN file), never pooled with ours: fitted by
the paper on every real row, so our holdout was in their training data."""
RELEASES = SYNTHESIZERS + PAPER_RELEASES
"""Every name a release cell can have."""
