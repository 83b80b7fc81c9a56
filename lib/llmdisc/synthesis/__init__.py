"""Stage 02, the synthetic releases: seeded SDV fits of GaussianCopula, CTGAN and TVAE on the train split.

Reads ``data/processed/<key>/train.parquet``; fits (:mod:`~llmdisc.synthesis.fit`, cached by everything that
changes the fit in :mod:`~llmdisc.synthesis.model_cache`) and writes the published release
``data/synthetic/<key>/<synthesizer>.parquet`` with its ``manifest.json`` (:mod:`~llmdisc.synthesis.releases`),
plus quality and out-of-vocabulary reports. Later stages read releases through :func:`load_synthetic`.
"""

from llmdisc.synthesis.fit import FitResult, build_metadata, fit_and_sample, seeded, torch_thread_limit
from llmdisc.synthesis.releases import (METADATA_MODES, SyntheticRelease, load_synthetic, out_of_vocabulary,
                                         paper_releases_for, publish_paper_release, publish_release,
                                         quality_report, resolve_column_kinds, synthesize, synthetic_path)

__all__ = ["METADATA_MODES", "FitResult", "SyntheticRelease", "build_metadata", "fit_and_sample",
           "load_synthetic", "out_of_vocabulary", "paper_releases_for", "publish_paper_release",
           "publish_release", "quality_report", "resolve_column_kinds", "seeded", "synthesize",
           "synthetic_path", "torch_thread_limit"]
