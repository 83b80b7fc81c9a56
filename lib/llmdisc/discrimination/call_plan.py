"""What trial runs will ask of their provider, before they ask: calls, tokens, cost and time.

:func:`count_calls` counts one configured run's calls on an empty response cache; :func:`plan_calls` sums and
prices them per provider and model (:class:`CallCosts`); :func:`format_plan` writes the text ``llmdisc run`` and
``llmdisc trials run`` print before any call (alone with ``--plan``). Nothing here reads data or needs a key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

from llmdisc.discrimination.providers.openai_compat import LABEL_ANSWER_TOKENS
from llmdisc.discrimination.providers.registry import DEFAULT_MODELS
from llmdisc.discrimination.trial_runs import TrialRunConfig, trial_queue

__all__ = ["CallCosts", "CallCount", "ModelPlan", "PROMPT_TOKENS", "count_calls", "format_plan", "plan_calls",
           "prompt_tokens"]

PROMPT_TOKENS: dict[tuple[str, str], int] = {
    ("adult", "C1"): 2100, ("adult", "C2"): 3800,
    ("census-codes", "C1"): 1500, ("census-codes", "C2"): 3100,
    ("census-labels", "C1"): 2300, ("census-labels", "C2"): 3500,
}
"""Estimated prompt tokens of one trial call by dataset key and condition: the largest of 8 real-table prompts by
:func:`~llmdisc.discrimination.prompts.estimate_tokens` (SmolLM2's tokenizer; others differ by tens of percent),
rounded up to a hundred."""

LOCAL_PROVIDERS = ("local", "ollama", "replay")
"""Providers that run on the user's own machine or answer from files: no price per token."""


@dataclass(frozen=True)
class CallCosts:
    """What a model's calls are assumed to cost and take (``trials.models[].estimate`` of a configuration).

    Attributes:
        seconds_per_call: seconds one call takes, answer included; 0 = unknown.
        answer_tokens: tokens of one generated verdict (the JSON answer).
        thinking_tokens: thinking tokens a call is expected to add (billed as output).
        max_thinking_tokens: the provider's cap on thinking tokens, for the cost's upper bound; 0 = no bound.
        prices_as_of: the date the prices were read (``YYYY-MM[-DD]``); empty = no price known.
    """

    seconds_per_call: float = 0.0
    answer_tokens: int = 300
    thinking_tokens: int = 0
    max_thinking_tokens: int = 0
    usd_per_million_input_tokens: float = 0.0
    usd_per_million_output_tokens: float = 0.0
    prices_as_of: str = ""


@dataclass
class CallCount:
    """The provider calls of one or more runs on an empty response cache."""

    trials: int = 0
    verdict_calls: int = 0
    label_calls: int = 0
    """Calls that score the labels (a few generated tokens, or none)."""
    input_tokens: int = 0
    """Prompt tokens of all calls (estimated, :data:`PROMPT_TOKENS`)."""

    @property
    def calls(self) -> int:
        return self.verdict_calls + self.label_calls

    def add(self, other: "CallCount") -> None:
        for name in ("trials", "verdict_calls", "label_calls", "input_tokens"):
            setattr(self, name, getattr(self, name) + getattr(other, name))


def prompt_tokens(dataset_key: str, condition: str) -> int:
    """Estimated prompt tokens of one call (:data:`PROMPT_TOKENS`; the largest of the condition when unlisted)."""
    return PROMPT_TOKENS.get((dataset_key, condition)) or max(
        tokens for (_, c), tokens in PROMPT_TOKENS.items() if c == condition)


def count_calls(config: TrialRunConfig) -> CallCount:
    """The provider calls one configured run makes on an empty response cache (none in ``offline`` mode).

    A call is counted once per distinct question the response cache keys (condition, source table, sample seed,
    replicate, kind), so the paper's fixed sample is one call per cell, label and condition. A run that scores
    labels adds its content-free pass (one call per condition) and one log-probability check.
    """
    config = config.effective()
    specs = trial_queue(config)
    count = CallCount(trials=len(specs))
    if config.cache_mode == "offline":
        return count
    kinds = {"verdict": ("verdict",), "probability": ("label",), "both": ("verdict", "label")}
    asked = {(spec.condition, "real" if spec.true_label == "REAL" else spec.synthesizer, spec.sample_seed,
              spec.replicate, kind) for spec in specs for kind in kinds[spec.scoring]}
    count.verdict_calls = sum(key[-1] == "verdict" for key in asked)
    count.label_calls = len(asked) - count.verdict_calls
    count.input_tokens = sum(prompt_tokens(config.dataset_key, key[0]) for key in asked)
    if config.scoring != "verdict":
        count.label_calls += len(config.conditions) + 1  # the content-free pass and the log-probability check
        count.input_tokens += sum(prompt_tokens(config.dataset_key, c) for c in config.conditions)
    return count


@dataclass
class ModelPlan:
    """The calls, tokens, cost and time of every run of one provider and model."""

    provider: str
    model: str
    base_url: str
    costs: CallCosts
    requests_per_minute: float
    """The configured budget; 0 = none."""
    concurrency: int
    runs: int = 0
    offline_runs: int = 0
    count: CallCount = field(default_factory=CallCount)

    def _generated(self, thinking: int) -> int:
        return (self.count.verdict_calls * (self.costs.answer_tokens + thinking)
                + self.count.label_calls * (LABEL_ANSWER_TOKENS + thinking))

    @property
    def output_tokens(self) -> int:
        """Expected generated tokens (answers and thinking)."""
        return self._generated(self.costs.thinking_tokens)

    @property
    def output_tokens_max(self) -> int:
        """Generated tokens if every call thought to ``max_thinking_tokens``."""
        return self._generated(max(self.costs.thinking_tokens, self.costs.max_thinking_tokens))

    def usd(self, output_tokens: int | None = None) -> float | None:
        """Expected cost in US$ (a local provider is free; None: no prices with their date); ``output_tokens``
        overrides the expected ones."""
        if self.provider in LOCAL_PROVIDERS:
            return 0.0
        if not self.costs.prices_as_of:
            return None
        out = self.output_tokens if output_tokens is None else output_tokens
        return (self.count.input_tokens * self.costs.usd_per_million_input_tokens
                + out * self.costs.usd_per_million_output_tokens) / 1e6

    @property
    def seconds(self) -> float | None:
        """Expected wall seconds of the calls, one run after another, at the slower of ``concurrency`` /
        ``seconds_per_call`` and ``requests_per_minute`` (None: neither known)."""
        rates = []
        if self.costs.seconds_per_call > 0:
            rates.append(self.concurrency / self.costs.seconds_per_call)
        if self.requests_per_minute > 0:
            rates.append(self.requests_per_minute / 60.0)
        if not self.count.calls:
            return 0.0
        return self.count.calls / min(rates) if rates else None

    @property
    def time_is_bound(self) -> bool:
        """True when :attr:`seconds` is only the budget's lower bound (no latency estimate)."""
        return self.costs.seconds_per_call <= 0 and self.requests_per_minute > 0


def plan_calls(settings: Sequence[TrialRunConfig],
               costs: Mapping[tuple[str, str, str], CallCosts] | None = None) -> list[ModelPlan]:
    """Sum the runs' calls into one :class:`ModelPlan` per provider, model and base URL, in the order they
    first appear. ``costs`` maps ``(provider, model, base_url)`` to :class:`CallCosts` (default: no price, no
    latency)."""
    plans: dict[tuple[str, str, str], ModelPlan] = {}
    for config in settings:
        key = (config.provider, config.model, config.base_url)
        plan = plans.get(key)
        if plan is None:
            plan = plans[key] = ModelPlan(
                provider=config.provider, model=config.model, base_url=config.base_url,
                costs=(costs or {}).get(key, CallCosts()), requests_per_minute=float(config.requests_per_minute),
                concurrency=int(config.concurrency))
        plan.runs += 1
        plan.offline_runs += config.cache_mode == "offline"
        plan.count.add(count_calls(config))
    return list(plans.values())


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes = seconds / 60
    if minutes < 90:
        return f"{minutes:.0f} min"
    hours = minutes / 60
    return f"{hours:.1f} h" if hours < 48 else f"{hours / 24:.1f} days"


def _tokens(n: int) -> str:
    return f"{n / 1e6:.2f}M" if n >= 1e6 else f"{n / 1e3:.0f}k" if n >= 1e3 else str(n)


def format_plan(plans: Sequence[ModelPlan]) -> str:
    """The plan as text: per provider and model, its runs, calls, tokens, cost and time (several lines each)."""
    lines = ["Provider calls of the trials, estimated before any call (on an empty response cache; a cached answer "
             "is never asked again):"]
    for plan in plans:
        model = plan.model or f"{DEFAULT_MODELS.get(plan.provider, '(default)')} (the provider's default)"
        where = f" at {plan.base_url}" if plan.base_url else ""
        c, count = plan.costs, plan.count
        kinds = [f"{n:,} {what}" for n, what in ((count.verdict_calls, "verdicts"),
                                                 (count.label_calls, "label scores")) if n]
        lines.append(f"- {plan.provider} {model}{where}: {plan.runs} run(s), {count.trials:,} trials")
        offline = f" ({plan.offline_runs} run(s) offline: answered from the cache only)" if plan.offline_runs else ""
        lines.append(f"  calls: {count.calls:,}" + (f" ({', '.join(kinds)})" if kinds else "") + offline)
        each = [text for n, text in ((count.verdict_calls, f"{c.answer_tokens:,} a verdict"),
                                     (count.label_calls, f"{LABEL_ANSWER_TOKENS} a label score"),
                                     (c.thinking_tokens, f"+ {c.thinking_tokens:,} thinking a call")) if n]
        lines.append(f"  tokens: ~{_tokens(count.input_tokens)} prompt, ~{_tokens(plan.output_tokens)} generated"
                     + (f" ({', '.join(each)})" if each else ""))
        usd = plan.usd()
        if usd is None:
            lines.append("  cost: unknown (no prices in the configuration: trials.models[].estimate."
                         "usd_per_million_input_tokens / _output_tokens with prices_as_of)")
        elif plan.provider in LOCAL_PROVIDERS:
            lines.append("  cost: US$0 (runs on your machine; no price per token)")
        else:
            most = plan.usd(plan.output_tokens_max)
            bound = (f", at most ~US${most:,.2f} if every call thinks {c.max_thinking_tokens:,} tokens"
                     if most is not None and plan.output_tokens_max > plan.output_tokens else "")
            lines.append(f"  cost: ~US${usd:,.2f}{bound} (US${c.usd_per_million_input_tokens:g} / "
                         f"US${c.usd_per_million_output_tokens:g} per million prompt / generated tokens, prices "
                         f"of {c.prices_as_of})")
        seconds = plan.seconds
        pace = [text for rate, text in (
            (c.seconds_per_call, f"~{c.seconds_per_call:g} s a call, {plan.concurrency} in flight"),
            (plan.requests_per_minute, f"at most {plan.requests_per_minute:g} requests a minute"),
        ) if rate > 0]
        if seconds is None:
            lines.append("  time: unknown (no seconds_per_call in trials.models[].estimate, no "
                         "requests_per_minute)")
        else:
            bound = "at least " if plan.time_is_bound else "~"
            lines.append(f"  time: {bound}{_duration(seconds)}" + (f" ({'; '.join(pace)})" if pace else ""))
    if not plans:
        lines.append("- none (no trial runs in this plan)")
    return "\n".join(lines)
