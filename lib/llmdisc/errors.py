"""Exception and warning types of llmdisc.

Every error message names the problem *and* the fix (the value, the limit, the command to run).
Catch :class:`LlmdiscError` to handle any of them.
"""


class LlmdiscError(Exception):
    """Base class of every error raised on purpose by llmdisc."""


class DataError(LlmdiscError):
    """Input data is missing, corrupt or does not match its schema."""


class ChecksumError(DataError):
    """A data file's sha256 differs from the recorded one."""


class ReferenceMissingError(DataError):
    """The paper's reference data is not on this machine; the message ends with :data:`REFERENCE_FIX`."""


REFERENCE_FIX = (
    "fix: run `llmdisc data fetch-reference` (or `make reference`), or set LLMDISC_REFERENCE to a folder that "
    "holds the paper's files"
)
"""The one fix every :class:`ReferenceMissingError` names."""


class ConfigError(LlmdiscError, ValueError):
    """A parameter or configuration value is unknown or out of range."""


class ProviderError(LlmdiscError):
    """An LLM provider cannot be used (unknown, misconfigured, unreachable)."""


class CacheMissError(LlmdiscError):
    """``offline`` cache mode or the replay provider found no stored answer."""


class LlmdiscWarning(RuntimeWarning):
    """Something was recovered from (e.g. a corrupt cache entry refitted) and the user should know."""
