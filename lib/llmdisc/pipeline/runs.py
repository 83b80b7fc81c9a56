"""The numbered notebooks run through papermill over a configuration's grid (:func:`plan_run`,
:func:`run_pipeline`). A notebook is skipped when its source, parameters, upstream records and input files
hash as last time and its outputs still match their recorded hashes (never file times).
"""

from __future__ import annotations

import glob
import json
import multiprocessing
import os
import time
from concurrent.futures import FIRST_COMPLETED, Executor, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from llmdisc.errors import ConfigError, LlmdiscError
from llmdisc.manifest import package_versions, sha256_file, sha256_json
from llmdisc.paths import project_root, reference_dir, relative_to_root
from llmdisc.pipeline.config import RunConfig, require_one_provider
from llmdisc.pipeline.kernels import kernel_environment
from llmdisc.synthesis.releases import paper_releases_for

NOTEBOOKS = {
    "01": "notebooks/01_data_prep.ipynb",
    "02": "notebooks/02_synthesis.ipynb",
    "03": "notebooks/03_prompting.ipynb",
    "04": "notebooks/04_llm_trials.ipynb",
    "05": "notebooks/05_baselines.ipynb",
    "06": "notebooks/06_human_pilot.ipynb",
    "08": "notebooks/08_paper_reproduction.ipynb",
    "09": "notebooks/09_likelihood.ipynb",
    "10": "notebooks/10_cues.ipynb",
    "07": "notebooks/07_figures.ipynb",
}


class NotebookFailed(LlmdiscError):
    """A notebook raised; the message names the notebook, the cell and the error."""


@dataclass
class NotebookRun:
    run_id: str
    """Unique, readable id; also the executed copy's file name (``04_llm_trials__adult__local``)."""
    stage: str
    notebook: str
    """Root-relative path of the source notebook."""
    parameters: dict[str, Any]
    depends_on: list[str] = field(default_factory=list)
    """run_ids whose outputs this notebook reads."""
    input_globs: list[str] = field(default_factory=list)
    """Root-relative globs of external input files (raw data, label files)."""
    output_globs: list[str] = field(default_factory=list)
    """Root-relative globs of the files this notebook produces (hashed into its run record)."""


def _suffix(*parts: object) -> str:
    return "__".join(str(p).replace("/", "-").replace(":", "-") for p in parts if p not in ("", None))


def _raw_inputs(dataset: str) -> list[str]:
    """The raw files stage 01 reads for a dataset (the same resolution order as :mod:`llmdisc.data.acs`)."""
    if dataset == "adult":
        return ["data/raw/adult/*"]
    local = os.environ.get("LLMDISC_CENSUS_CSV")
    if local:
        return [str(Path(local).resolve())]
    ref = reference_dir()
    census = ref / "data" / "census" / "real" / "census.csv" if ref is not None else None
    if census is not None and census.is_file():
        return [str(census)]
    return ["data/raw/acs/**/*"]


def plan_run(config: RunConfig) -> list[NotebookRun]:
    """Expand a configuration into the ordered notebook runs (01 → 06, 08, 09, 10, then 07's figures)."""
    from llmdisc.data.reference import paper_release_path

    seed, quick = config.seed, config.quick
    runs: list[NotebookRun] = []
    trial_runs: list[str] = []
    baseline_runs: list[str] = []
    releases: dict[str, list[str]] = {}  # per key: ours, then the paper's own when asked for and present
    for key in config.datasets:
        dataset, _, encoding = key.partition("-")
        paper = paper_releases_for(key) if config.synthesis.paper_releases else []
        releases[key] = list(config.synthesis.synthesizers) + paper
        prep = NotebookRun(
            f"01_data_prep__{key}", "01", NOTEBOOKS["01"],
            {"dataset": dataset, "encoding": encoding, "seed": seed,
             "holdout_fraction": config.data.holdout_fraction, "quick": quick},
            input_globs=_raw_inputs(dataset),
            output_globs=[f"data/processed/{key}/*"])
        synth = NotebookRun(
            f"02_synthesis__{key}", "02", NOTEBOOKS["02"],
            {"dataset": dataset, "encoding": encoding, "synthesizers": list(config.synthesis.synthesizers),
             "epochs": config.synthesis.epochs, "fit_rows": config.synthesis.fit_rows, "seed": seed,
             "metadata_mode": config.synthesis.metadata_mode,
             "paper_releases": paper, "quick": quick},
            depends_on=[prep.run_id], output_globs=[f"data/synthetic/{key}/*.*"],
            input_globs=[str(paper_release_path(name.removeprefix("paper_"))) for name in paper])
        runs += [prep, synth]
    prompting = config.prompting
    prompt_key = prompting.dataset_key if prompting.dataset_key in config.datasets else config.datasets[0]
    runs.append(NotebookRun(
        f"03_prompting__{prompt_key}", "03", NOTEBOOKS["03"],
        {"dataset_key": prompt_key, "synthesizer": prompting.synthesizer, "variant": prompting.variant,
         "metadata_source": prompting.metadata_source, "seed": seed, "quick": quick},
        depends_on=[f"01_data_prep__{prompt_key}", f"02_synthesis__{prompt_key}"],
        output_globs=[f"results/prompts/{prompt_key}/*"]))
    trials = config.trials
    last_limited: dict[tuple[str, str, str], str] = {}  # a rate-limited model's latest run: the next waits on it
    for key in config.datasets:
        for model in trials.models:
            endpoint = (model.provider, model.model, model.base_url)
            for protocol in trials.protocols:
                run_id = "04_llm_trials__" + _suffix(key, model.provider, model.model, protocol.variant,
                                                     protocol.metadata_source, protocol.sampling,
                                                     "" if protocol.scoring == "verdict" else protocol.scoring)
                runs.append(NotebookRun(
                    run_id, "04", NOTEBOOKS["04"],
                    {"dataset_key": key, "synthesizers": releases[key],
                     "provider": model.provider, "model": model.model,
                     "trials_per_label": trials.trials_per_label, "conditions": list(trials.conditions),
                     "variant": protocol.variant, "metadata_source": protocol.metadata_source,
                     "sampling": protocol.sampling, "seed": seed, "concurrency": model.concurrency,
                     "cache_mode": trials.cache_mode, "base_url": model.base_url, "quick": quick,
                     "scoring": protocol.scoring, "trials_per_label_c2": trials.trials_per_label_c2,
                     "verdict_trials_per_label": trials.verdict_trials_per_label,
                     "controls": trials.controls, "share_real_samples": trials.share_real_samples,
                     "label_backend": model.label_backend, "config_name": config.name,
                     "requests_per_minute": model.requests_per_minute or 0.0, "api_key_env": model.api_key_env},
                    # a model with a requests-per-minute budget runs one run at a time: the quota is the model's
                    depends_on=[f"01_data_prep__{key}", f"02_synthesis__{key}"]
                    + ([last_limited[endpoint]] if endpoint in last_limited else []),
                    # trials.run_name: <key>__<provider>-<model>__<variant>-<source>-<sampling>__s<seed>__<hash>
                    output_globs=[f"results/trials/{key}__{model.provider}-*__{protocol.variant}-"
                                  f"{protocol.metadata_source}-{protocol.sampling}__s{seed}__*"]))
                trial_runs.append(run_id)
                if model.requests_per_minute:
                    last_limited[endpoint] = run_id
    for key in config.datasets:
        run_id = f"05_baselines__{key}"
        runs.append(NotebookRun(
            run_id, "05", NOTEBOOKS["05"],
            {"dataset_key": key, "synthesizers": releases[key], "seed": seed,
             "c2st_rows": config.baselines.c2st_rows, "dcr_rows": config.baselines.dcr_rows,
             "anonymeter_attacks": config.baselines.anonymeter_attacks, "quick": quick},
            depends_on=[f"01_data_prep__{key}", f"02_synthesis__{key}"],
            output_globs=[f"results/baselines/{key}*"]))
        baseline_runs.append(run_id)
    human_inputs = [str(Path(d) / "**" / "*.csv") for d in config.human.labels_dir]
    ref = reference_dir()
    if not config.human.labels_dir and ref is not None:
        human_inputs = [str(ref / "results" / "human") + "/**/*.csv"]  # absolute: $LLMDISC_REFERENCE may be anywhere
    runs.append(NotebookRun(
        "06_human_pilot", "06", NOTEBOOKS["06"],
        {"labels_dir": list(config.human.labels_dir), "llm_cells": "", "seed": seed, "quick": quick},
        input_globs=human_inputs, output_globs=["results/tables/human_*"]))
    final_deps = trial_runs + baseline_runs + ["06_human_pilot"]
    if config.paper_reproduction:
        paper_inputs = [str(ref) + "/**/*.*"] if ref is not None else []
        runs.append(NotebookRun(
            "08_paper_reproduction", "08", NOTEBOOKS["08"], {"seed": 2026, "quick": quick},
            input_globs=paper_inputs, output_globs=["results/tables/paper_*"]))
        final_deps.append("08_paper_reproduction")
    if config.likelihood.enabled:
        lk = config.likelihood
        for key in config.datasets:
            run_id = f"09_likelihood__{key}"
            runs.append(NotebookRun(
                run_id, "09", NOTEBOOKS["09"],
                {"dataset_key": key, "synthesizers": releases[key],
                 "samples_per_class": lk.samples_per_class, "reference_samples": lk.reference_samples,
                 "model": lk.model, "backend": lk.backend, "serialisation": lk.serialisation,
                 "context": "c1_prompt", "variant": "neutral", "seed": seed, "quick": quick,
                 "joint": lk.joint, "joint_serialisation": lk.joint_serialisation, "joint_k": lk.joint_k, "joint_reference_rows": lk.joint_reference_rows,
                 "joint_column_k": lk.joint_column_k},
                # after the key's trials: their label-score forward passes hold these samples' table tokens
                depends_on=[f"01_data_prep__{key}", f"02_synthesis__{key}"]
                + [run for run in trial_runs if run.startswith(f"04_llm_trials__{key}__")],
                # its own records only (07 writes the tables), so the datasets' runs go side by side
                output_globs=[f"results/likelihood/likelihood-{key}-*", f"results/likelihood/joint/joint-{key}-*"]))
            final_deps.append(run_id)
    if config.cue_analysis:
        # the paper's records and human labels, and its Census files its samples are rebuilt from
        cue_inputs = [str(ref / "results") + "/**/*.*", str(ref / "data" / "census") + "/**/*.csv"] \
            if ref is not None else []
        runs.append(NotebookRun(
            "10_cues", "10", NOTEBOOKS["10"], {"seed": seed, "quick": quick, "trials_dir": "", "out_dir": ""},
            depends_on=trial_runs + ["06_human_pilot"], input_globs=cue_inputs,
            output_globs=["results/tables/cues_*", "results/cues/*", "figures/cue_*"]))
        final_deps.append("10_cues")
    runs.append(NotebookRun(
        "07_figures", "07", NOTEBOOKS["07"], {"config_name": config.name, "seed": seed, "quick": quick},
        depends_on=final_deps, output_globs=["figures/*.png", "figures/*.pdf", "results/tables/llm_*",
                                             "results/tables/baselines_*", "results/tables/discriminators_*",
                                             "results/tables/likelihood_*", "results/tables/joint_cells.*",
                                             "results/tables/joint_columns.*"]))
    return runs


def trial_settings(config: RunConfig) -> list[Any]:
    """The :class:`~llmdisc.discrimination.trial_runs.TrialRunConfig` of each trial run of the plan (stage 04)."""
    from llmdisc.discrimination.trial_runs import TrialRunConfig

    return [TrialRunConfig(**run.parameters) for run in plan_run(config) if run.stage == "04"]


def call_plan(config: RunConfig) -> list[Any]:
    """Calls, tokens, cost and time of the configuration's trials per provider and model
    (:func:`llmdisc.discrimination.call_plan.plan_calls`); reads no data, opens no provider, needs no key."""
    from llmdisc.discrimination.call_plan import plan_calls
    from llmdisc.pipeline.config import call_costs

    return plan_calls(trial_settings(config), call_costs(config))


def _hash_globs(patterns: list[str]) -> dict[str, str]:
    root = project_root()
    paths = [path for pattern in patterns for path in sorted(glob.glob(str(root / pattern), recursive=True))]
    return {relative_to_root(path): sha256_file(path) for path in paths if Path(path).is_file()}


class RunRecords:
    """The per-notebook run records of one configuration (``reports/executed/<config>/runs.json``)."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / "runs.json"
        try:
            self.records: dict[str, dict[str, Any]] = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            self.records = {}

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.records, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        tmp.replace(self.path)


def package_source_hash() -> str:
    """sha256 over the llmdisc package's files (not bytecode): a change re-runs the stages (fits and LLM
    answers stay cached)."""
    package = Path(__file__).resolve().parents[1]  # the whole llmdisc package, not only pipeline/
    files = sorted(p for p in package.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    return sha256_json({p.relative_to(package).as_posix(): sha256_file(p) for p in files})


def input_fingerprint(run: NotebookRun, records: RunRecords) -> str:
    """Hash of everything that decides a notebook's result: source, parameters, upstream outputs, inputs, code."""
    upstream = {dep: records.records.get(dep, {}).get("outputs") for dep in run.depends_on}
    return sha256_json({
        "code": package_source_hash(),
        "notebook": sha256_file(project_root() / run.notebook),
        "parameters": run.parameters,
        "upstream": upstream,
        "inputs": _hash_globs(run.input_globs),
    })


def is_current(run: NotebookRun, records: RunRecords, fingerprint: str) -> bool:
    """True when the last successful run had this fingerprint and its outputs are unchanged."""
    record = records.records.get(run.run_id)
    if not record or record.get("status") != "ok" or record.get("fingerprint") != fingerprint:
        return False
    return record.get("outputs") == _hash_globs(run.output_globs)


def check_parameters(run: NotebookRun) -> None:
    """Refuse parameters the notebook does not declare (papermill itself only logs them)."""
    import papermill

    declared = papermill.inspect_notebook(str(project_root() / run.notebook))
    unknown = sorted(set(run.parameters) - set(declared))
    if unknown:
        raise ConfigError(f"{run.notebook} has no parameter(s) {unknown}; it declares {sorted(declared)}")


def execute(run: NotebookRun, executed_dir: Path, *, log: Callable[[str], None] = print) -> float:
    """Run one notebook through papermill in the ``llmdisc`` kernel; return seconds; raise NotebookFailed."""
    import papermill
    from papermill.exceptions import PapermillExecutionError
    from traitlets.config import Config

    from llmdisc.pipeline.reports import scrub_notebook

    root = project_root()
    executed_dir.mkdir(parents=True, exist_ok=True)
    out = executed_dir / f"{run.run_id}.ipynb"
    started = time.perf_counter()
    try:
        # papermill stores these paths in the executed notebook; scrub_notebook makes them root-relative.
        papermill.execute_notebook(
            str(root / run.notebook), str(out), parameters=run.parameters, kernel_name="llmdisc",
            cwd=str(root / "notebooks"), progress_bar=False, log_output=False,
            # Executed cells carry the data: encrypt the kernel's loopback ZMQ channels with CurveZMQ keys
            # when the kernelspec supports it (ipykernel >= 7.3 does, and warns on every start otherwise).
            config=Config({"KernelManager": {"transport_encryption": "auto"}}))
    except PapermillExecutionError as exc:
        scrub_notebook(out)
        raise NotebookFailed(
            f"{run.notebook} failed in cell {exc.cell_index} (execution count {exc.exec_count}): "
            f"{exc.ename}: {exc.evalue}\n  parameters: {run.parameters}\n"
            f"  executed copy kept for inspection: {relative_to_root(out)}") from None
    finally:
        seconds = time.perf_counter() - started
    scrub_notebook(out)
    return seconds


STAGE_SECONDS = {"02": 1500.0, "04": 1500.0, "09": 2000.0, "05": 150.0, "08": 120.0}
"""A notebook's expected seconds before it has run here (stage 02 fits, 04 trials and 09 model passes dominate);
other stages count 30 s. Only the order of side-by-side runs depends on them."""


def critical_path_seconds(plan: list[NotebookRun], records: "RunRecords") -> dict[str, float]:
    """Per run: its expected seconds (last recorded, else :data:`STAGE_SECONDS`) plus the longest chain of
    runs that wait on it."""
    expected = {r.run_id: float(records.records.get(r.run_id, {}).get("seconds") or STAGE_SECONDS.get(r.stage, 30.0))
                for r in plan}
    waiting_on = {r.run_id: [w.run_id for w in plan if r.run_id in w.depends_on] for r in plan}
    chain: dict[str, float] = {}
    for run in reversed(plan):  # a run's dependants come after it in the plan
        chain[run.run_id] = expected[run.run_id] + max((chain.get(w, 0.0) for w in waiting_on[run.run_id]),
                                                       default=0.0)
    return chain


def run_pipeline(config: RunConfig, *, force: bool = False, only: list[str] | None = None,
                 workers: int | None = None, log: Callable[[str], None] = print) -> list[dict[str, Any]]:
    """Execute the plan of ``config`` (see :func:`run_plan`); ``only`` restricts it to stages like ``["01"]``;
    ``workers`` overrides the configuration's. ConfigError when its trials call more than one provider."""
    plan = [r for r in plan_run(config) if only is None or r.stage in only]
    if any(run.stage == "04" for run in plan):
        require_one_provider(config)
    return run_plan(plan, project_root() / "reports" / "executed" / config.name, force=force,
                    workers=config.workers if workers is None else workers, log=log)


def run_plan(plan: list[NotebookRun], executed_dir: Path, *, force: bool = False, workers: int = 1,
             log: Callable[[str], None] = print) -> list[dict[str, Any]]:
    """Execute ``plan`` into ``executed_dir``, each run once its ``depends_on`` have finished, at most
    ``workers`` side by side (longest chain of expected work first); ``force`` re-runs unchanged notebooks.
    Returns per run, in plan order, ``run_id``, ``status`` (``ran`` or ``skipped``) and ``seconds``.

    Raises:
        ConfigError: a notebook is missing, a run depends on a cycle, or ``workers`` < 1 (checked first).
        NotebookFailed: a notebook raised. No new run starts; runs already started finish and are recorded,
            so a second call resumes after the failed one.
    """
    if workers < 1:
        raise ConfigError(f"workers={workers} must be at least 1; fix: pass workers=1 (one notebook at a time)")
    root = project_root()
    records = RunRecords(executed_dir)
    for run in plan:
        if not (root / run.notebook).is_file():
            raise ConfigError(f"notebook {run.notebook} is missing from this checkout")
        check_parameters(run)
    in_plan = {run.run_id for run in plan}
    priority = critical_path_seconds(plan, records)
    waiting = list(plan)
    running: dict[Future, NotebookRun] = {}
    finished: set[str] = set()
    outcomes: dict[str, dict[str, Any]] = {}
    failure: NotebookFailed | None = None

    def ready(run: NotebookRun) -> bool:
        return all(dep in finished or dep not in in_plan for dep in run.depends_on)

    def finish(run: NotebookRun, fingerprint: str, seconds: float) -> None:
        records.records[run.run_id] = {
            "status": "ok", "fingerprint": fingerprint, "seconds": round(seconds, 1),
            "notebook": run.notebook, "parameters": run.parameters,
            "outputs": _hash_globs(run.output_globs), "versions": package_versions(("llmdisc", "papermill")),
        }
        records.save()
        log(f"[done] {run.run_id} in {seconds:.1f} s")
        outcomes[run.run_id] = {"run_id": run.run_id, "status": "ran", "seconds": round(seconds, 1)}

    with kernel_environment(workers), _executor(workers) as pool:
        while (waiting and failure is None) or running:
            started_one = False
            while failure is None and len(running) < workers:
                candidates = [r for r in waiting if ready(r)]
                run = max(candidates, key=lambda r: priority[r.run_id], default=None) if workers > 1 else \
                    next(iter(candidates), None)
                if run is None:
                    break
                waiting.remove(run)
                fingerprint = input_fingerprint(run, records)
                if not force and is_current(run, records, fingerprint):
                    log(f"[skip] {run.run_id}: inputs and parameters unchanged")
                    outcomes[run.run_id] = {"run_id": run.run_id, "status": "skipped", "seconds": 0.0}
                    finished.add(run.run_id)
                    started_one = True
                    continue
                log(f"[run ] {run.run_id} ...")
                future = pool.submit(execute, run, executed_dir)
                future.fingerprint = fingerprint  # type: ignore[attr-defined]
                running[future] = run
                started_one = True
            if not running:
                if waiting and failure is None and not started_one:
                    names = ", ".join(r.run_id for r in waiting)
                    raise ConfigError(f"runs {names} wait on each other (a dependency cycle); fix: plan_run's "
                                      "depends_on")
                continue
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                run = running.pop(future)
                try:
                    seconds = future.result()
                except NotebookFailed as exc:
                    records.records[run.run_id] = {"status": "failed", "fingerprint": future.fingerprint}
                    records.save()
                    failure = failure or exc
                    continue
                finish(run, future.fingerprint, seconds)
                finished.add(run.run_id)
    if failure is not None:
        raise failure
    return [outcomes[run.run_id] for run in plan if run.run_id in outcomes]


class _InlineExecutor(Executor):
    """One notebook at a time in this process (Ctrl-C interrupts the notebook, as papermill alone does)."""

    def submit(self, fn, /, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN201
        future: Future = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except Exception as exc:  # noqa: BLE001 - handed to the caller through the future
            future.set_exception(exc)
        return future


def _executor(workers: int) -> Executor:
    """Inline for one worker; else a pool of spawned processes (each starts and stops its own kernels)."""
    if workers == 1:
        return _InlineExecutor()
    return ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))
