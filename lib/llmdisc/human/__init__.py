"""Stage 06, the human pilot: the labelling app and the analysis of its label files.

The app (:mod:`~llmdisc.human.label_app`) shows people the same samples the LLM sees, with balanced labels and
no feedback until a session ends, and writes one CSV per session. :mod:`~llmdisc.human.analysis` reads label
files (ours or the paper's) and writes ``results/tables/human_*.csv``: per-cell DRS, C1→C2 changes, LLM
agreement.
"""

from llmdisc.human.analysis import (CELL, PAPER_ANNOTATOR_MAP, POOLED, SCORE_COLUMNS, STACKED, HumanAnalysis,
                                    LabelProblem, analyse_labels, annotator_totals, cell_table,
                                    condition_deltas, confidence_by_correctness, default_label_dirs,
                                    find_label_files, format_report, llm_agreement, protocol_notes,
                                    read_label_file, read_labels, write_tables)

__all__ = ["CELL", "PAPER_ANNOTATOR_MAP", "POOLED", "SCORE_COLUMNS", "STACKED", "HumanAnalysis",
           "LabelProblem", "analyse_labels", "annotator_totals", "cell_table", "condition_deltas",
           "confidence_by_correctness", "default_label_dirs", "find_label_files", "format_report",
           "llm_agreement", "protocol_notes", "read_label_file", "read_labels", "write_tables"]
