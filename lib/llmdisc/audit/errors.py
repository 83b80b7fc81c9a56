"""Errors of ``llmdisc audit`` and the exit status each one maps to.

``llmdisc.cli.main.main`` prints any :class:`~llmdisc.errors.LlmdiscError` as one line and exits with the
error's ``exit_status`` attribute (2 when absent); the audit's errors carry distinct statuses so that a
release pipeline can tell a bad input from an unreachable provider. :data:`EXIT_STATUSES` is the table the
command's ``--help`` prints.
"""

from __future__ import annotations

from llmdisc.errors import CacheMissError, ConfigError, DataError, LlmdiscError, ProviderError

EXIT_OK = 0
EXIT_GATE = 1
EXIT_USAGE = 2
EXIT_INCONCLUSIVE = 3
EXIT_MISSING = 4
EXIT_UNPARSABLE = 5
EXIT_COLUMNS = 6
EXIT_TOO_FEW_ROWS = 7
EXIT_REMOTE_REFUSED = 8
EXIT_UNREACHABLE = 9
EXIT_PROVIDER = 10

EXIT_STATUSES: tuple[tuple[int, str], ...] = (
    (EXIT_OK, "audit written; conclusive, and the --fail-above gate (if any) passed"),
    (EXIT_GATE, "audit written; the release FAILED the gate: the 95 % upper bound of D of an instrument that "
                "passed its controls and can vouch at --fail-above exceeds it, or the lower bound of any that "
                "passed them does (an unexpected crash also exits 1)"),
    (EXIT_USAGE, "bad command-line option or value (argparse's usage errors; e.g. --fail-above outside 0..1)"),
    (EXIT_INCONCLUSIVE, "audit written but INCONCLUSIVE (never a pass): no instrument passed its controls, or "
                        "none has the units to vouch at --fail-above"),
    (EXIT_MISSING, "an input file (or the --metadata file) does not exist"),
    (
        EXIT_UNPARSABLE,
        "an input file cannot be parsed, or its format is not supported (Excel); the --metadata file is not "
        "SDV single-table metadata JSON or names an unknown sdtype",
    ),
    (
        EXIT_COLUMNS,
        "the columns of the real and synthetic (or holdout) tables differ, or a column's type does (text in a "
        "numerical column, an unparseable date); or the --metadata columns differ from the tables'",
    ),
    (EXIT_TOO_FEW_ROWS, "a table has fewer rows than one 20-row sample"),
    (
        EXIT_REMOTE_REFUSED,
        "the LLM provider would send real rows off this machine and --allow-remote was not given",
    ),
    (EXIT_UNREACHABLE, "the LLM provider cannot be reached or stopped answering; finished trials stay cached"),
    (
        EXIT_PROVIDER,
        "the LLM provider refused (missing key, unknown model; no token probabilities under --scoring probability "
        "or both: pass --scoring verdict) or --cache-mode offline missed",
    ),
    (130, "interrupted; finished trials and scores stay cached and a re-run resumes"),
)
"""(exit status, meaning) of ``llmdisc audit``."""


class AuditInputError(DataError):
    """Base of the input errors; ``exit_status`` says which."""

    exit_status = EXIT_UNPARSABLE


class InputMissingError(AuditInputError):
    """An input path does not exist."""

    exit_status = EXIT_MISSING


class InputUnparsableError(AuditInputError):
    """An input file is not a readable CSV/Parquet table (or is an Excel workbook)."""

    exit_status = EXIT_UNPARSABLE


class ColumnMismatchError(AuditInputError):
    """Real and synthetic (or holdout) tables differ in columns or column types."""

    exit_status = EXIT_COLUMNS


class MetadataError(AuditInputError):
    """The ``--metadata`` file is not SDV single-table metadata (not JSON, wrong shape, unknown sdtype)."""

    exit_status = EXIT_UNPARSABLE


class MetadataColumnsError(ColumnMismatchError):
    """The ``--metadata`` file describes other columns than the tables hold."""


class DateParseError(ColumnMismatchError):
    """A datetime column holds a value its format (declared or detected) does not parse."""


class TooFewRowsError(AuditInputError):
    """A table has fewer rows than one sample shown to the LLM."""

    exit_status = EXIT_TOO_FEW_ROWS


class RemoteProviderRefused(ConfigError):
    """The provider is remote and ``--allow-remote`` was not given (raised before any request)."""

    exit_status = EXIT_REMOTE_REFUSED


def exit_status_for(exc: BaseException) -> int:
    """Map an error raised during an audit to its exit status (see :data:`EXIT_STATUSES`).

    Args:
        exc: the error.

    Returns:
        Its ``exit_status`` attribute when it has one; 9 for an unreachable provider or a run that stopped
        because the provider kept failing; 10 for other provider errors and offline cache misses; 2 for other
        llmdisc errors (bad options); 1 for anything else (a crash).
    """
    from llmdisc.discrimination.providers.errors import ProviderUnreachableError, TransientProviderError
    from llmdisc.discrimination.runner import RunAborted

    status = getattr(exc, "exit_status", None)
    if isinstance(status, int):
        return status
    if isinstance(exc, (ProviderUnreachableError, RunAborted, TransientProviderError)):
        return EXIT_UNREACHABLE
    if isinstance(exc, (ProviderError, CacheMissError)):
        return EXIT_PROVIDER
    if isinstance(exc, LlmdiscError):
        return EXIT_USAGE
    return 1
