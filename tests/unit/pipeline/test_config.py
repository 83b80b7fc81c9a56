"""Run configurations: validated on load, with errors that name the wrong key; plans cover the grid."""

from __future__ import annotations

import re

import pytest

from llmdisc.errors import ConfigError
from llmdisc.paths import project_root
from llmdisc.pipeline.config import load_config
from llmdisc.pipeline.runs import plan_run


@pytest.mark.parametrize("name", ["default", "paper", "tiny"])
def test_shipped_configs_load(name):
    config = load_config(project_root() / "configs" / f"{name}.yaml")
    assert config.name == name


def test_unknown_keys_are_named_with_the_valid_ones(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("name: bad\ntrials:\n  trails_per_label: 3\n  models: [{provider: local, modle: x}]\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert "unknown key 'trials.trails_per_label'" in message
    assert "'trials_per_label'" in message
    assert "unknown key 'trials.models.0.modle'" in message


def test_bad_values_are_named(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("name: bad\ndatasets: [adult, cencus]\nsynthesis: {synthesizers: [ctgan, gan]}\n")
    with pytest.raises(ConfigError, match=re.escape("datasets: 'cencus' is not one of adult, census-codes")) as info:
        load_config(path)
    assert "synthesis.synthesizers: synthesizers: 'gan' is not one of gaussian_copula, ctgan, tvae" in str(info.value)


def test_list_keys_accept_one_string_or_comma_separated_items(tmp_path):
    path = tmp_path / "strings.yaml"
    path.write_text("name: s\ndatasets: census-codes\nsynthesis: {synthesizers: 'ctgan, tvae'}\n"
                    "trials: {conditions: C2}\nhuman: {labels_dir: data/human}\n")
    config = load_config(path)
    assert config.datasets == ["census-codes"]
    assert config.synthesis.synthesizers == ["ctgan", "tvae"]
    assert config.trials.conditions == ["C2"]
    assert config.human.labels_dir == ["data/human"]
    path.write_text("name: s\ntrials: {conditions: C3}\n")
    with pytest.raises(ConfigError, match=re.escape("trials.conditions: conditions: 'C3' is not one of C1, C2")):
        load_config(path)


def test_a_label_backend_is_for_the_local_model_only(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("name: bad\ntrials:\n  models: [{provider: ollama, model: llama3.1, "
                    "label_backend: transformers-bfloat16}]\n")
    with pytest.raises(ConfigError, match="is for the local provider, not 'ollama'; fix: remove label_backend"):
        load_config(path)
    path.write_text("name: ok\ntrials:\n  models: [{provider: local, label_backend: transformers-bfloat16}]\n")
    run = next(r for r in plan_run(load_config(path)) if r.stage == "04")
    assert run.parameters["label_backend"] == "transformers-bfloat16"


def test_missing_file_and_non_mapping(tmp_path):
    with pytest.raises(ConfigError, match="does not exist; pick one of configs"):
        load_config(tmp_path / "nope.yaml")
    (tmp_path / "list.yaml").write_text("- a\n- b\n")
    with pytest.raises(ConfigError, match="must be a YAML mapping"):
        load_config(tmp_path / "list.yaml")


def test_paper_plan_runs_each_protocol_for_each_dataset_and_model():
    config = load_config(project_root() / "configs" / "paper.yaml")
    trial_runs = [r for r in plan_run(config) if r.stage == "04"]
    assert len(trial_runs) == len(config.datasets) * len(config.trials.models) * len(config.trials.protocols)
    assert len({r.run_id for r in trial_runs}) == len(trial_runs)
    fixed = [r for r in trial_runs if r.parameters["sampling"] == "fixed"]
    assert fixed and all(r.parameters["variant"] == "paper" for r in fixed)


def test_the_paper_study_has_controls_and_20_samples_a_class_in_every_cell():
    config = load_config(project_root() / "configs" / "paper.yaml")
    trials = config.trials
    assert trials.controls  # the positive and negative control cells, as the default run has them
    assert trials.trials_per_label >= 20 and (trials.trials_per_label_c2 == 0 or trials.trials_per_label_c2 >= 20)
    assert list(trials.conditions) == ["C1", "C2"]
    assert {(p.variant, p.metadata_source, p.sampling) for p in trials.protocols} == {
        ("paper", "source", "fixed"), ("neutral", "real", "fresh")}
    for run in (r for r in plan_run(config) if r.stage == "04"):
        assert run.parameters["controls"] and run.parameters["trials_per_label"] >= 20
    # one entry per provider (a run picks one), the paper's models, and every remote service with its quota and
    # its prices dated
    assert [(m.provider, m.model) for m in trials.models] == [
        ("ollama", "llama3.1:8b"), ("gemini", "gemini-2.5-flash"), ("openai", "llama-3.1-8b-instant")]
    for model in trials.models:
        assert model.estimate.seconds_per_call > 0
        if model.provider != "ollama":
            assert model.requests_per_minute and model.estimate.prices_as_of
            assert model.estimate.usd_per_million_input_tokens > 0
    groq = trials.models[2]
    assert groq.base_url == "https://api.groq.com/openai/v1" and groq.api_key_env == "GROQ_API_KEY"


def test_requests_per_minute_and_prices_are_checked(tmp_path):
    path = tmp_path / "bad.yaml"
    for model, message in (
            ("{provider: gemini, requests_per_minute: 0}", "requests_per_minute: Input should be greater than 0"),
            ("{provider: gemini, estimate: {usd_per_million_input_tokens: 0.3}}", "needs the date it was read"),
            ("{provider: gemini, estimate: {prices_as_of: June}}", "prices_as_of"),
            ("{provider: gemini, api_key_env: GROQ_API_KEY}", "api_key_env 'GROQ_API_KEY' is for the openai")):
        path.write_text(f"name: bad\ntrials:\n  models: [{model}]\n")
        with pytest.raises(ConfigError, match=re.escape(message)):
            load_config(path)


def test_a_rate_limited_model_runs_one_run_at_a_time_with_its_key_variable(tmp_path):
    path = tmp_path / "limited.yaml"
    path.write_text("name: limited\ndatasets: [adult, census-codes]\ntrials:\n  models:\n"
                    "    - {provider: openai, model: m, api_key_env: GROQ_API_KEY, requests_per_minute: 30}\n"
                    "    - {provider: local}\n")
    trials = [r for r in plan_run(load_config(path)) if r.stage == "04"]
    limited = [r for r in trials if r.parameters["provider"] == "openai"]
    assert [r.parameters["requests_per_minute"] for r in trials] == [30.0, 0.0, 30.0, 0.0]
    assert {r.parameters["api_key_env"] for r in limited} == {"GROQ_API_KEY"}
    assert limited[0].run_id in limited[1].depends_on  # never side by side: the quota is the model's
    assert not any(r.run_id in other.depends_on for r in trials for other in trials if r.parameters["provider"]
                   == "local")


def test_a_run_calls_one_provider(tmp_path):
    from llmdisc.pipeline.config import require_one_provider, select_provider
    from llmdisc.pipeline.runs import run_pipeline

    paper = load_config(project_root() / "configs" / "paper.yaml")
    with pytest.raises(ConfigError, match="--provider ollama, --provider gemini, --provider openai"):
        require_one_provider(paper)
    with pytest.raises(ConfigError, match="--provider ollama"):
        run_pipeline(paper, only=["04"])  # refused before any notebook is looked at
    gemini = select_provider(paper, "gemini")
    require_one_provider(gemini)
    assert [m.model for m in gemini.trials.models] == ["gemini-2.5-flash"]
    assert {r.parameters["provider"] for r in plan_run(gemini) if r.stage == "04"} == {"gemini"}
    with pytest.raises(ConfigError, match="no trial model of provider 'local'"):
        select_provider(paper, "local")


def test_plan_order_respects_dependencies():
    config = load_config(project_root() / "configs" / "default.yaml")
    plan = plan_run(config)
    seen: set[str] = set()
    for run in plan:
        assert set(run.depends_on) <= seen, f"{run.run_id} runs before {set(run.depends_on) - seen}"
        seen.add(run.run_id)
    assert plan[-1].stage == "07"


@pytest.mark.parametrize("name", ["default", "paper", "tiny"])
def test_every_notebook_declares_exactly_the_parameters_the_pipeline_passes(name):
    import papermill

    config = load_config(project_root() / "configs" / f"{name}.yaml")
    for run in plan_run(config):
        declared = set(papermill.inspect_notebook(str(project_root() / run.notebook)))
        # A help comment with '=' in it hides a parameter from papermill's inspector: caught here.
        assert declared == set(run.parameters), f"{run.notebook}: declared {declared}, passed {set(run.parameters)}"


def test_no_two_runs_claim_the_same_outputs():
    # an output written by two runs makes the first look stale after the second ran (it re-ran on every
    # second `make reproduce` when both notebooks 09 claimed the shared likelihood_* tables)
    for name in ("default", "small", "paper", "encoding", "tiny"):
        plan = plan_run(load_config(project_root() / "configs" / f"{name}.yaml"))
        claimed: dict[str, str] = {}
        for run in plan:
            for pattern in run.output_globs:
                assert pattern not in claimed, f"{name}: {run.run_id} and {claimed[pattern]} both claim {pattern}"
                claimed[pattern] = run.run_id


def test_the_default_run_scores_by_probability_with_enough_trials_in_every_cell():
    config = load_config(project_root() / "configs" / "default.yaml")
    trials = config.trials
    assert trials.trials_per_label >= 20 and list(trials.conditions) == ["C1"]  # C2 left out: see the config
    assert all(p.scoring in ("probability", "both") for p in trials.protocols)
    # no generated verdicts: one per cell and label gave n = 1 (no DRS), at ~6x a label score's cost
    assert trials.controls and trials.share_real_samples and trials.verdict_trials_per_label == 0
    assert config.likelihood.enabled and config.likelihood.samples_per_class >= 20
    # notebook 09 reads the tables' token log-probabilities the trials' label pass stored: the same backend, float32
    # on every CPU (issue 41: with transformers-auto the reader's CPU chose bfloat16 cells); bfloat16 is an opt-in
    assert [m.label_backend for m in trials.models] == [config.likelihood.backend]
    assert config.likelihood.backend == "transformers"
    # the joint-structure statistic is part of the default run (issue 26): 20 or more samples a class, every
    # release and both controls
    assert config.likelihood.joint and config.likelihood.joint_k >= 2 and config.likelihood.samples_per_class >= 20
    plan = {run.run_id: run for run in plan_run(config)}
    # each dataset's 09 claims only its own records, so the two run side by side; 07 writes the shared tables
    assert all("results/tables" not in glob for key in config.datasets
               for glob in plan[f"09_likelihood__{key}"].output_globs)
    assert {"results/tables/likelihood_*", "results/tables/joint_cells.*"} <= set(plan["07_figures"].output_globs)
    assert set(config.datasets) == {"adult", "census-codes"} and len(config.synthesis.synthesizers) == 3


def test_the_default_run_fits_at_the_papers_budget_and_the_quick_look_stays_quick():
    default = load_config(project_root() / "configs" / "default.yaml")
    assert default.synthesis.epochs == 300 and default.synthesis.fit_rows == 5000
    synth = next(run for run in plan_run(default) if run.stage == "02")
    # the 5-epoch comparison is `llmdisc bench fit-budget`, not a part of the run (15-18 minutes a dataset)
    assert synth.parameters["epochs"] == 300 and "compare_budgets" not in synth.parameters
    small = load_config(project_root() / "configs" / "small.yaml")
    assert small.synthesis.epochs == 5
    tiny = load_config(project_root() / "configs" / "tiny.yaml")
    assert tiny.synthesis.epochs == 1


def test_the_default_plan_adds_the_papers_releases_as_census_cells_only(reference, tmp_path, monkeypatch):
    from llmdisc import PAPER_RELEASES, SYNTHESIZERS

    config = load_config(project_root() / "configs" / "default.yaml")
    by_id = {r.run_id: r for r in plan_run(config)}
    census = [*SYNTHESIZERS, *PAPER_RELEASES]
    assert by_id["02_synthesis__census-codes"].parameters["synthesizers"] == list(SYNTHESIZERS)  # fitted: ours only
    assert by_id["02_synthesis__census-codes"].parameters["paper_releases"] == list(PAPER_RELEASES)
    assert any("census/synthetic/ctgan/synthetic.csv" in g for g in by_id["02_synthesis__census-codes"].input_globs)
    for run_id in ("05_baselines__census-codes", "09_likelihood__census-codes"):
        assert by_id[run_id].parameters["synthesizers"] == census
    assert [r.parameters["synthesizers"] for r in by_id.values() if r.run_id.startswith("04_llm_trials__census")] \
        == [census]
    assert by_id["02_synthesis__adult"].parameters["paper_releases"] == []
    assert by_id["05_baselines__adult"].parameters["synthesizers"] == list(SYNTHESIZERS)
    # without the reference there is nothing to add, and the plan says nothing about it
    monkeypatch.setenv("LLMDISC_REFERENCE", str(tmp_path))
    plan = {r.run_id: r for r in plan_run(config)}
    assert plan["02_synthesis__census-codes"].parameters["paper_releases"] == []
    assert plan["05_baselines__census-codes"].parameters["synthesizers"] == list(SYNTHESIZERS)


def test_side_by_side_runs_start_the_longest_chain_first(tmp_path):
    from llmdisc.pipeline.runs import NotebookRun, RunRecords, critical_path_seconds

    plan = [NotebookRun("fit", "02", "n", {}), NotebookRun("scores", "09", "n", {}, depends_on=["fit"]),
            NotebookRun("baselines", "05", "n", {}), NotebookRun("figures", "07", "n", {},
                                                                  depends_on=["scores", "baselines"])]
    records = RunRecords(tmp_path)
    chain = critical_path_seconds(plan, records)
    assert chain == {"figures": 30.0, "scores": 2030.0, "fit": 3530.0, "baselines": 180.0}
    # what an earlier run of this configuration measured wins over the stage's guess
    records.records["baselines"] = {"seconds": 9000.0}
    assert critical_path_seconds(plan, records)["baselines"] == 9030.0
    # in the default plan, Adult's likelihood run outranks the stages that are ready beside it
    default = plan_run(load_config(project_root() / "configs" / "default.yaml"))
    chain = critical_path_seconds(default, RunRecords(tmp_path / "none"))
    assert chain["09_likelihood__adult"] > max(chain["05_baselines__census-codes"], chain["08_paper_reproduction"],
                                               chain["06_human_pilot"])


def test_the_package_hash_follows_every_package_file_but_bytecode(tmp_path, monkeypatch):
    # a change to the cue codebook or the caption YAML must re-run the stages that read them, as a code change does
    from llmdisc.pipeline import runs

    package = tmp_path / "llmdisc"
    (package / "pipeline").mkdir(parents=True)
    (package / "pipeline" / "runs.py").write_text("# code\n")
    (package / "scoring").mkdir()
    (package / "scoring" / "cue_codebook.yaml").write_text("kinds: []\n")
    (package / "pipeline" / "__pycache__").mkdir()
    (package / "pipeline" / "__pycache__" / "runs.cpython-311.pyc").write_bytes(b"\0")
    monkeypatch.setattr(runs, "__file__", str(package / "pipeline" / "runs.py"))
    first = runs.package_source_hash()
    (package / "pipeline" / "__pycache__" / "runs.cpython-311.pyc").write_bytes(b"\1")
    assert runs.package_source_hash() == first
    (package / "scoring" / "cue_codebook.yaml").write_text("kinds: [count]\n")
    assert runs.package_source_hash() != first
