"""``llmdisc audit``: the compendium's method applied to anyone's synthetic-data release.

Reads a user's real and synthetic tables (CSV or Parquet, bounded seeded subsamples); writes ``DIR/audit.json``,
the self-contained ``DIR/report.html``, ``DIR/manifest.json``, the trial records ``DIR/trials/<run>.jsonl`` and the
audit's own response cache. :func:`run_audit` (in :mod:`~llmdisc.audit.run`) is the whole audit.
"""

from llmdisc.audit.run import (DEFAULT_ATTACKS, DEFAULT_MAX_ROWS, DEFAULT_SAMPLES, DEFAULT_TRIALS, N_ROWS,
                               AuditResult, run_audit)

__all__ = ["AuditResult", "run_audit", "DEFAULT_ATTACKS", "DEFAULT_TRIALS", "DEFAULT_MAX_ROWS", "DEFAULT_SAMPLES", "N_ROWS"]
