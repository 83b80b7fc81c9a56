"""The joint instrument's findings read C beside the samples' variety (llmdisc.audit.instruments.samples)."""

from __future__ import annotations

from llmdisc.audit.instruments.base import RELEASE, Comparison
from llmdisc.audit.instruments.samples import JointInstrument, SamplePasses


def _findings(auc: float, real_variety: float, other_variety: float) -> list[str]:
    instrument = JointInstrument(SamplePasses(20, k=2))
    real = [{"variety": real_variety, "contrast": 30.0, "column_contrast": {"a": 15.0, "b": 15.0}}] * 20
    other = [{"variety": other_variety, "contrast": 10.0, "column_contrast": {"a": 5.0, "b": 5.0}}] * 20
    reading = instrument.reading()
    reading.comparisons[RELEASE] = Comparison(RELEASE, auc, max(0.0, auc - 0.1), min(1.0, auc + 0.1), 0.001, 20,
                                              20, extra={"mean_real": 30.0, "mean_other": 10.0,
                                                         **instrument.extra(real, other)})
    return instrument.findings({"real": real, RELEASE: other}, reading)


def test_a_less_structured_and_less_varied_release_is_told_that_variety_may_be_part_of_it():
    lines = _findings(0.1, 0.45, 0.30)
    assert lines[0].startswith("The release's rows hold together less than real rows do")
    assert ("Variety (distinct values per column, 0–1) is 0.30 in the release's samples against 0.45 in real ones; "
            "C tends to rise with variety (a column of alike values adds nothing to it), so part of this reading may "
            "be the release's fewer distinct values rather than "
            "its dependence between columns.") in lines


def test_a_variety_difference_the_other_way_does_not_explain_the_reading():
    lines = _findings(0.1, 0.30, 0.45)  # less structured although more varied
    assert any(line.endswith("runs the other way and does not explain this reading.") for line in lines)
    assert not _findings(0.5, 0.30, 0.45)  # not told apart: no finding at all
