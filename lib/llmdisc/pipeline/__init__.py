"""The compendium pipeline: run configs, papermill runs with skip-by-hash, the HTML supplementary, the README
block; writes ``reports/executed/<config>/*.ipynb``, the supplementary in ``reports/html/`` and the README's
blocks.
"""

from llmdisc.pipeline.config import RunConfig, load_config
from llmdisc.pipeline.readme import readme_block, render_results_block, update_readme
from llmdisc.pipeline.reports import find_leaks, scrub_notebook, scrub_text
from llmdisc.pipeline.runs import NOTEBOOKS, NotebookFailed, NotebookRun, plan_run, run_pipeline, run_plan
from llmdisc.pipeline.supplementary import SupplementaryError, render_html

__all__ = [
    "NOTEBOOKS", "NotebookFailed", "NotebookRun", "RunConfig", "find_leaks", "load_config", "plan_run",
    "readme_block", "render_html", "render_results_block", "run_pipeline", "run_plan", "scrub_notebook",
    "scrub_text", "SupplementaryError", "update_readme",
]
