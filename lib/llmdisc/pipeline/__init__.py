"""The compendium pipeline: run configs, papermill runs with skip-by-hash, the HTML supplementary, the README block.

Reads ``configs/*.yaml`` (:mod:`~llmdisc.pipeline.config`, pydantic), plans the numbered notebooks over the
config's grid and runs them through papermill (:mod:`~llmdisc.pipeline.runs`), skipping a notebook whose source,
parameters, upstream outputs, inputs and package code are unchanged; writes ``reports/executed/<config>/*.ipynb``,
the scrubbed ``reports/html/`` (:mod:`~llmdisc.pipeline.reports`) and the README's generated results block
(:mod:`~llmdisc.pipeline.readme`).
"""

from llmdisc.pipeline.config import RunConfig, load_config
from llmdisc.pipeline.readme import readme_block, render_results_block, update_readme
from llmdisc.pipeline.reports import find_leaks, render_html, scrub_notebook, scrub_text
from llmdisc.pipeline.runs import NOTEBOOKS, NotebookFailed, NotebookRun, plan_run, run_pipeline, run_plan

__all__ = [
    "NOTEBOOKS", "NotebookFailed", "NotebookRun", "RunConfig", "find_leaks", "load_config", "plan_run",
    "readme_block", "render_html", "render_results_block", "run_pipeline", "run_plan", "scrub_notebook",
    "scrub_text", "update_readme",
]
