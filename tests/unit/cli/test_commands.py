"""Command-line flags: one name and one list syntax per concept; ``trials run`` expresses a config's stage 04."""

from __future__ import annotations

import argparse

import pytest

from llmdisc.cli.commands.trials import _settings_and_costs
from llmdisc.cli.main import build_parser
from llmdisc.errors import ConfigError
from llmdisc.paths import project_root
from llmdisc.pipeline.config import load_config
from llmdisc.pipeline.runs import plan_run

DEFAULT_BACKEND = "transformers"  # the default config's label backend: float32 on every CPU


def parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(list(argv))


def run_settings(args: argparse.Namespace) -> list:
    """The TrialRunConfig of each run ``trials run`` builds from these flags."""
    return _settings_and_costs(args)[0]


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    found = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found[name] = sub
                found.update({f"{name} {k}": v for k, v in _subparsers(sub).items()})
    return found


@pytest.mark.parametrize("argv", [["--conditions", "C1", "C2"], ["--conditions", "C1,C2"],
                                  ["--conditions", "C1,", "C2"]])
def test_list_flags_take_spaces_or_commas(argv: list[str]) -> None:
    (config,) = run_settings(parse("trials", "run", *argv, "--synthesizers", "ctgan,tvae"))
    assert config.conditions == ("C1", "C2") and config.synthesizers == ("ctgan", "tvae")


def test_an_unknown_list_item_is_named() -> None:
    with pytest.raises(ConfigError, match="C3"):
        run_settings(parse("trials", "run", "--conditions", "C1,C3"))


def test_trials_run_with_a_config_is_the_runs_stage_04() -> None:
    # the notebook parameters `llmdisc run` gives each 04 run, against what `trials run --config` builds
    config = load_config(project_root() / "configs" / "default.yaml")
    planned = [r.parameters for r in plan_run(config) if r.stage == "04"]
    settings = run_settings(parse("trials", "run", "--config", "configs/default.yaml"))
    assert len(settings) == len(planned) == 2  # two datasets × one model × one protocol
    for params, run in zip(planned, settings):
        for name, value in params.items():
            got = getattr(run, name)
            assert (list(got) if isinstance(got, tuple) else got) == value, name
    assert settings[0].conditions == ("C1",) and settings[0].trials_per_label_c2 == 0  # C2 only in paper.yaml
    assert settings[0].verdict_trials_per_label == 0 and settings[0].label_backend == DEFAULT_BACKEND
    assert settings[0].controls and settings[0].share_real_samples and settings[0].scoring == "probability"


def test_a_flag_beside_a_config_overrides_it_and_out_needs_one_run() -> None:
    settings = run_settings(parse("trials", "run", "--config", "configs/default.yaml", "--dataset-key", "adult",
                                  "--trials-per-label", "3", "--no-controls", "--conditions", "C1"))
    assert [(s.dataset_key, s.trials_per_label, s.controls, s.conditions) for s in settings] == [
        ("adult", 3, False, ("C1",))]
    assert settings[0].label_backend == DEFAULT_BACKEND and settings[0].share_real_samples  # from the config
    flagged = run_settings(parse("trials", "run", "--config", "configs/default.yaml", "--dataset-key", "adult",
                                 "--label-backend", "transformers"))
    assert flagged[0].label_backend == "transformers"
    with pytest.raises(ConfigError, match="--out"):
        run_settings(parse("trials", "run", "--config", "configs/paper.yaml", "--out", "x.jsonl"))


def test_paper_config_gives_a_run_per_dataset_model_and_protocol() -> None:
    settings = run_settings(parse("trials", "run", "--config", "configs/paper.yaml"))
    assert len(settings) == 2 * 3 * 2  # described for the plan; a run picks one provider (test_run_plan.py)
    assert {(s.variant, s.metadata_source, s.sampling) for s in settings} == {
        ("paper", "source", "fixed"), ("neutral", "real", "fresh")}
    assert {s.config_name for s in settings} == {"paper"}
    # --provider picks the config's models of that provider, with their quota and key variable
    groq = run_settings(parse("trials", "run", "--config", "configs/paper.yaml", "--provider", "openai"))
    assert len(groq) == 2 * 2 and {(s.provider, s.model, s.api_key_env) for s in groq} == {
        ("openai", "llama-3.1-8b-instant", "GROQ_API_KEY")}
    assert {s.requests_per_minute for s in groq} == {2.0}
    # a provider the config does not list overrides every run's, as any flag beside --config does
    replay = run_settings(parse("trials", "run", "--config", "configs/default.yaml", "--provider", "replay"))
    assert {s.provider for s in replay} == {"replay"}


def test_defaults_without_a_config() -> None:
    (config,) = run_settings(parse("trials", "run", "--replay-path", "results/trials"))
    assert (config.dataset_key, config.trials_per_label, config.conditions, config.replay_path,
            config.config_name) == ("adult", 2, ("C1", "C2"), "results/trials", "")


def test_synth_takes_synthesizers_and_still_the_old_spelling() -> None:
    assert parse("synth", "--dataset-key", "adult", "--synthesizers", "ctgan", "tvae").synthesizers == [
        "ctgan", "tvae"]
    assert parse("synth", "--dataset-key", "adult", "--synthesizer", "ctgan").synthesizers == ["ctgan"]
    help_text = _subparsers(build_parser())["synth"].format_help()
    assert "--synthesizers" in help_text and "--synthesizer " not in help_text


def test_run_only_takes_spaces_or_commas() -> None:
    assert parse("run", "--only", "01", "02").only == ["01", "02"]
    assert parse("run", "--only", "01,02").only == ["01,02"]  # split by the command


def test_one_name_per_concept_outside_audit() -> None:
    # audit is being rewritten separately; benchmarks' --trials counts prompts, not trials per label
    names = {name: {s for a in sub._actions for s in a.option_strings if a.help != argparse.SUPPRESS}
             for name, sub in _subparsers(build_parser()).items() if name != "audit" and not name.startswith("bench")}
    flags = set().union(*names.values())
    assert "--trials" not in flags and "--replay" not in flags
    assert "--trials-per-label" in names["trials run"] and "--replay-path" in names["trials run"]
    lists = {s for name, sub in _subparsers(build_parser()).items() if name != "audit"
             for a in sub._actions if a.nargs == "+" for s in a.option_strings if a.help != argparse.SUPPRESS}
    assert {"--synthesizers", "--conditions", "--only"} <= lists
