"""Errors of ``llmdisc audit`` and the exit status each one maps to: the one table of the audit's exit statuses.

:data:`EXIT_STATUSES` (the table ``--help``, ``audit.json`` and docs/audit.md list) gives each :class:`ExitStatus`
its meaning; :func:`exit_status_for` maps an error to its status. A bug exits 70, never 1, so a release pipeline
can tell a failed gate from a bad input, an unreachable provider and a crash.
"""

from __future__ import annotations

import enum

from llmdisc.errors import CacheMissError, ConfigError, DataError, LlmdiscError, ProviderError


class ExitStatus(enum.IntEnum):
    """The exit statuses of ``llmdisc audit`` (meanings in :data:`EXIT_STATUSES`)."""

    OK = 0
    GATE_FAILED = 1
    USAGE_ERROR = 2
    INCONCLUSIVE = 3
    INPUT_MISSING = 4
    INPUT_UNPARSABLE = 5
    INPUT_COLUMNS = 6
    INPUT_TOO_FEW_ROWS = 7
    REMOTE_REFUSED = 8
    PROVIDER_UNREACHABLE = 9
    PROVIDER_ERROR = 10
    INTERNAL_ERROR = 70
    INTERRUPTED = 130

    @property
    def label(self) -> str:
        """The name written into ``audit.json`` (``gate_failed``, ``internal_error``, ...)."""
        return self.name.lower()


EXIT_OK = ExitStatus.OK
EXIT_GATE = ExitStatus.GATE_FAILED
EXIT_USAGE = ExitStatus.USAGE_ERROR
EXIT_INCONCLUSIVE = ExitStatus.INCONCLUSIVE
EXIT_MISSING = ExitStatus.INPUT_MISSING
EXIT_UNPARSABLE = ExitStatus.INPUT_UNPARSABLE
EXIT_COLUMNS = ExitStatus.INPUT_COLUMNS
EXIT_PROVIDER = ExitStatus.PROVIDER_ERROR
EXIT_INTERNAL = ExitStatus.INTERNAL_ERROR

TRACEBACK_FILE = "traceback.txt"
"""Written into the audit folder on an unexpected error (exit :data:`EXIT_INTERNAL`)."""

EXIT_STATUSES: tuple[tuple[int, str], ...] = (
    (EXIT_OK, "audit written; conclusive, and the --fail-above gate (if any) passed"),
    (EXIT_GATE, "audit written; the release FAILED the gate: the 95 % upper bound of D of an instrument that "
                "passed its controls and can vouch at --fail-above exceeds it, or the lower bound of any that "
                "passed them does (only ever this; an error is never 1)"),
    (EXIT_USAGE, "bad command-line option or value (argparse's usage errors; e.g. --fail-above outside 0..1)"),
    (EXIT_INCONCLUSIVE, "audit written but INCONCLUSIVE (never a pass): no instrument passed its controls, or "
                        "none has the units to vouch at --fail-above"),
    (EXIT_MISSING, "input error: an input file (or the --metadata file) does not exist"),
    (EXIT_UNPARSABLE, "input error: an input file cannot be parsed or used, or its format is not supported "
                      "(Excel); the --metadata file is not SDV single-table metadata JSON or names an "
                      "unknown sdtype"),
    (EXIT_COLUMNS, "input error: the columns of the real and synthetic (or holdout) tables differ, or a "
                   "column's type does (text in a numerical column, an unparseable date); or the --metadata "
                   "columns differ from the tables'"),
    (ExitStatus.INPUT_TOO_FEW_ROWS, "input error: a table has fewer rows than one 20-row sample"),
    (ExitStatus.REMOTE_REFUSED, "provider error: the LLM provider would send real rows off this machine and "
                                "--allow-remote was not given"),
    (ExitStatus.PROVIDER_UNREACHABLE, "provider error: the LLM provider cannot be reached or stopped "
                                      "answering (after retries); finished trials stay cached"),
    (EXIT_PROVIDER, "provider error: the LLM provider refused (missing or rejected key, unknown model; no "
                    "token probabilities under --scoring probability or both: pass --scoring verdict) or "
                    "--cache-mode offline missed"),
    (EXIT_INTERNAL, f"unexpected internal error (a bug; EX_SOFTWARE): its traceback is in DIR/{TRACEBACK_FILE}, "
                    "what was computed stays in DIR and a re-run resumes"),
    (ExitStatus.INTERRUPTED, "interrupted; finished trials and scores stay cached and a re-run resumes"),
)
"""(exit status, meaning) of ``llmdisc audit``, one row per :class:`ExitStatus`."""


def exit_status_record(status: int) -> dict[str, object]:
    """``{"code": 3, "name": "inconclusive"}``: an exit status as ``audit.json`` states it."""
    return {"code": int(status), "name": ExitStatus(status).label}


def exit_status_table() -> dict[str, dict[str, str]]:
    """``{"0": {"name": "ok", "meaning": ...}, ...}``: :data:`EXIT_STATUSES` as ``audit.json``'s
    ``exit_statuses`` (JSON object keys are strings)."""
    return {str(int(code)): {"name": ExitStatus(code).label, "meaning": meaning} for code, meaning in EXIT_STATUSES}


def outcome_status(outcome: str, gate_passed: bool | None) -> ExitStatus:
    """The exit status of a finished audit: 3 when ``inconclusive``, 1 when the gate failed (``outcome`` ``fail``
    or ``gate_passed`` False), else 0."""
    if outcome == "inconclusive":
        return EXIT_INCONCLUSIVE
    if gate_passed is False or outcome == "fail":
        return EXIT_GATE
    return EXIT_OK


class AuditInputError(DataError):
    """Base of the input errors; ``exit_status`` says which."""

    exit_status = EXIT_UNPARSABLE


class InputMissingError(AuditInputError):
    """An input path does not exist."""

    exit_status = EXIT_MISSING


class InputUnparsableError(AuditInputError):
    """An input file is not a readable CSV/Parquet table (or is an Excel workbook)."""


class ColumnMismatchError(AuditInputError):
    """Real and synthetic (or holdout) tables differ in columns or column types."""

    exit_status = EXIT_COLUMNS


class MetadataError(AuditInputError):
    """The ``--metadata`` file is not SDV single-table metadata (not JSON, wrong shape, unknown sdtype)."""


class MetadataColumnsError(ColumnMismatchError):
    """The ``--metadata`` file describes other columns than the tables hold."""


class DateParseError(ColumnMismatchError):
    """A datetime column holds a value its format (declared or detected) does not parse."""


class TooFewRowsError(AuditInputError):
    """A table has fewer rows than one sample shown to the LLM."""

    exit_status = ExitStatus.INPUT_TOO_FEW_ROWS


class RemoteProviderRefused(ConfigError):
    """The provider is remote and ``--allow-remote`` was not given (raised before any request)."""

    exit_status = ExitStatus.REMOTE_REFUSED


def exit_status_for(exc: BaseException) -> ExitStatus:
    """The exit status of an error raised during an audit (:data:`EXIT_STATUSES`): its ``exit_status``
    attribute when it has one; else 9 for an unreachable provider, 10 for other provider errors and offline
    cache misses, 5 for another ``DataError``, 2 for other llmdisc errors, 130 for an interruption and 70 for
    anything else (a bug: never 1, which means only that the gate failed)."""
    from llmdisc.discrimination.providers.errors import ProviderUnreachableError, TransientProviderError
    from llmdisc.discrimination.runner import RunAborted

    status = getattr(exc, "exit_status", None)
    if isinstance(status, int) and not isinstance(status, bool) and status in ExitStatus._value2member_map_:
        return ExitStatus(status)
    if isinstance(exc, (ProviderUnreachableError, RunAborted, TransientProviderError)):
        return ExitStatus.PROVIDER_UNREACHABLE
    if isinstance(exc, (ProviderError, CacheMissError)):
        return EXIT_PROVIDER
    if isinstance(exc, DataError):
        return EXIT_UNPARSABLE
    if isinstance(exc, LlmdiscError):
        return EXIT_USAGE
    if isinstance(exc, KeyboardInterrupt):
        return ExitStatus.INTERRUPTED
    return EXIT_INTERNAL
