"""Checks of an audit's options and of its provider, before any input is read or any request is made."""

from __future__ import annotations

from typing import Any, Sequence

from llmdisc import CONDITIONS
from llmdisc.audit.errors import RemoteProviderRefused
from llmdisc.errors import ConfigError

N_ROWS = 20
"""Rows per LLM sample (as in the study)."""


def check_options(trials_per_label: int, conditions: Sequence[str], metadata_source: str,
                  fail_above: float | None, max_rows: int, concurrency: int, n_attacks: int,
                  scoring: str = "probability", samples: int = 20, max_minutes: float | None = None,
                  instruments: Sequence[str] = (), known_instruments: Sequence[str] = ()) -> None:
    """Refuse bad option values before anything is read: :class:`ConfigError` (exit 2), naming the fix."""
    from llmdisc.discrimination.label_scores import SCORING_MODES
    from llmdisc.discrimination.metadata import METADATA_SOURCES

    if not conditions or set(conditions) - set(CONDITIONS) or len(set(conditions)) != len(conditions):
        raise ConfigError(f"conditions {list(conditions)} are not a list of distinct C1/C2; fix: pass e.g. "
                          "--conditions C1 C2")
    if metadata_source not in METADATA_SOURCES:
        raise ConfigError(f"metadata source {metadata_source!r} is not known; fix: use one of "
                          f"{METADATA_SOURCES}")
    if fail_above is not None and not 0.0 <= fail_above <= 1.0:
        raise ConfigError(f"--fail-above {fail_above:g} is outside 0..1; fix: give the bound on "
                          "D = 2·|AUC − 0.5| as a fraction (e.g. 0.5)")
    if scoring not in SCORING_MODES:
        raise ConfigError(f"--scoring {scoring!r} is not known; fix: use one of {', '.join(SCORING_MODES)}")
    bad = [i for i in instruments if i not in known_instruments]
    if bad or not instruments:
        raise ConfigError(f"--instruments {' '.join(bad) or '(none)'} not known; fix: use some of "
                          f"{', '.join(known_instruments)}")
    if max_minutes is not None and max_minutes < 0:
        raise ConfigError(f"--max-minutes {max_minutes:g} is negative; fix: give e.g. --max-minutes 10 (0 = no budget)")
    for name, value, low in (("--trials-per-label", trials_per_label, 1),
                             ("--max-rows", max_rows, 2 * N_ROWS), ("--concurrency", concurrency, 1),
                             ("--n-attacks", n_attacks, 0), ("--samples", samples, 5)):
        if int(value) < low:
            raise ConfigError(f"{name} {value} is below {low}; fix: give at least {low}")


def open_checked_provider(name: str, model: str | None, base_url: str | None, *, allow_remote: bool,
                          replay_path: str | None = None) -> Any:
    """Build the provider and, before any request, refuse a remote one without ``allow_remote``
    (:class:`RemoteProviderRefused`, saying why); :class:`ConfigError` for an unknown provider or an option it
    does not take."""
    from llmdisc.discrimination.cache import public_base_url
    from llmdisc.discrimination.trial_runs import open_provider

    provider = open_provider(name, model or "", base_url or "", replay_path or "")
    if provider.is_remote and not allow_remote:
        where = public_base_url(provider.base_url) or "a service off this machine"
        raise RemoteProviderRefused(f"provider {name!r} would send rows of the REAL table to {where}, which "
                                    "is not this machine; nothing was sent. fix: add --allow-remote if your "
                                    "data-protection rules permit sending real records to that service, or "
                                    "use --provider local (the embedded model) or a loopback --base-url")
    return provider
