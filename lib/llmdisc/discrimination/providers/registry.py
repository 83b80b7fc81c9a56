"""Provider names → classes, with lazy imports (a missing SDK fails only when its provider is used).

>>> provider = get_provider("openai", "llama-3.1-8b-instant",
...                         base_url="https://api.groq.com/openai/v1", api_key_env="GROQ_API_KEY")

The options of each provider are its class's keyword arguments (:func:`provider_options`).
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

from llmdisc.discrimination.providers.base import Provider
from llmdisc.errors import ConfigError

PROVIDERS = ("local", "ollama", "gemini", "openai", "replay")
"""Registry names, in the order the docs list them."""

DEFAULT_MODELS = {"local": "smollm2-135m-instruct-q4_1", "ollama": "llama3.1:8b", "gemini": "gemini-2.5-flash",
                  "openai": "llama-3.1-8b-instant"}
"""Model used when none is given (``replay`` takes any model unless one is given)."""

_CLASSES = {
    "local": ("llmdisc.discrimination.providers.embedded", "EmbeddedProvider"),
    "ollama": ("llmdisc.discrimination.providers.ollama", "OllamaProvider"),
    "gemini": ("llmdisc.discrimination.providers.gemini", "GeminiProvider"),
    "openai": ("llmdisc.discrimination.providers.openai_compat", "OpenAICompatibleProvider"),
    "replay": ("llmdisc.discrimination.providers.replay", "ReplayProvider"),
}


def provider_class(name: str) -> type[Provider]:
    """Return the class registered as ``name``; ConfigError (listing :data:`PROVIDERS`) for an unknown name."""
    if name not in _CLASSES:
        raise ConfigError(f"unknown provider {name!r}; fix: use one of {', '.join(PROVIDERS)}")
    module_name, class_name = _CLASSES[name]
    return getattr(importlib.import_module(module_name), class_name)


def provider_options(name: str) -> tuple[str, ...]:
    """Names of the keyword options ``get_provider(name, ...)`` accepts besides the model."""
    parameters = inspect.signature(provider_class(name).__init__).parameters
    return tuple(p for p in parameters if p not in ("self", "model"))


def get_provider(name: str, model: str | None = None, **options: Any) -> Provider:
    """Build the provider ``name`` for ``model`` (default :data:`DEFAULT_MODELS`) with its options.

    Options whose value is None are dropped, so configuration layers can pass every key.

    Raises:
        ConfigError: unknown provider name (lists :data:`PROVIDERS`) or an option the provider does not
            take (lists the ones it takes).
    """
    cls = provider_class(name)
    accepted = provider_options(name)
    given = {key: value for key, value in options.items() if value is not None}
    unknown = sorted(set(given) - set(accepted))
    if unknown:
        raise ConfigError(f"provider {name!r} takes no option {', '.join(unknown)}; fix: use only "
                          f"{', '.join(accepted)}")
    chosen = model if model is not None else DEFAULT_MODELS.get(name)
    return cls(chosen, **given) if chosen is not None else cls(**given)
