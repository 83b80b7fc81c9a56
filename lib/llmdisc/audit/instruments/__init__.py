"""The audit's instruments: discriminators with their own controls, behind one interface (:mod:`.base`).

``c2st`` and ``distances`` read rows (:mod:`.rows`); ``joint`` and ``likelihood`` read 20-row samples with the
embedded model (:mod:`.samples`); ``llm`` is the LLM's verdict per condition (:mod:`.llm`), in the default only with
a fast provider or ``--llm``. :func:`build_instruments` makes the audit's list from their names.
"""

from __future__ import annotations

from typing import Any, Sequence

from llmdisc.audit.instruments.base import (GROUPS, NEGATIVE, POSITIVE, RELEASE, AuditData, Block, Bullets,
                                            Comparison, Instrument, Paragraph, Progress, Reading, Table,
                                            WorkPlan, control_check, discrimination)
from llmdisc.audit.instruments.rows import C2STInstrument, DistanceInstrument

INSTRUMENT_NAMES = ("c2st", "distances", "joint", "likelihood", "llm")
"""Every ``--instruments`` key."""
DEFAULT_INSTRUMENTS = ("c2st", "distances", "joint", "likelihood")
"""The offline default, before ``llm`` is added for a fast provider or ``--llm``."""
ROW_INSTRUMENTS = {"c2st": C2STInstrument, "distances": DistanceInstrument}


def build_instruments(names: Sequence[str], *, llm_trials: Any = None, conditions: Sequence[str] = (),
                      samples: int = 20) -> list[Instrument]:
    """The instruments of ``names`` in report order (``llm``: one per condition, sharing ``llm_trials``;
    ``samples``: 20-row samples per group of the sample instruments)."""
    from llmdisc.audit.instruments.samples import PERMUTATIONS, JointInstrument, LikelihoodInstrument, SamplePasses

    out: list[Instrument] = []
    passes = SamplePasses(samples, k=PERMUTATIONS if "joint" in names else 0)
    for name in names:
        if name in ROW_INSTRUMENTS:
            out.append(ROW_INSTRUMENTS[name]())
        elif name in ("joint", "likelihood"):
            out.append((JointInstrument if name == "joint" else LikelihoodInstrument)(passes))
        elif name == "llm":
            from llmdisc.audit.instruments.llm import LLMInstrument

            out += [LLMInstrument(llm_trials, condition) for condition in conditions]
    return out


__all__ = ["DEFAULT_INSTRUMENTS", "GROUPS", "INSTRUMENT_NAMES", "NEGATIVE", "POSITIVE", "RELEASE", "AuditData",
           "Block", "Bullets", "C2STInstrument", "Comparison", "DistanceInstrument", "Instrument", "Paragraph",
           "Progress", "Reading", "Table", "WorkPlan", "build_instruments", "control_check", "discrimination"]
