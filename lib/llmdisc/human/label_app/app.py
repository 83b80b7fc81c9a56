"""Streamlit page of the human pilot: one step at a time, each answer saved, results only at the end.

Started by ``llmdisc label``; the protocol lives in :mod:`llmdisc.human.label_app.session`, this file only
draws it, re-reading the state from the session CSV on every Streamlit re-run. The sample is an HTML table
(:mod:`~llmdisc.human.label_app.table_view`), not ``st.dataframe`` (a grid that scrolls and sorts, as the LLM
cannot).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pandas as pd
import streamlit as st

from llmdisc.data.datasets import load_processed
from llmdisc.discrimination.metadata import metadata_block
from llmdisc.discrimination.prompts import render_table
from llmdisc.errors import LlmdiscError
from llmdisc.human.label_app import session as protocol
from llmdisc.human.label_app.table_view import PAGE_CSS, metadata_html, sample_table_html
from llmdisc.paths import data_dir
from llmdisc.synthesis.releases import load_synthetic


def parse_app_args(argv: list[str]) -> argparse.Namespace:
    """Parse the options ``llmdisc label`` passes after ``--`` (see :mod:`llmdisc.cli.commands.label`)."""
    parser = argparse.ArgumentParser(prog="llmdisc-label-app")
    parser.add_argument("--annotator", required=True)
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--synthesizer", required=True)
    parser.add_argument("--pairs", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--metadata-source", default="real")
    parser.add_argument("--n-rows", type=int, default=20)
    parser.add_argument("--session", default="")
    parser.add_argument("--labels-dir", default="")
    parser.add_argument("--real", default="")
    parser.add_argument("--synthetic", default="")
    return parser.parse_args(argv)


@st.cache_resource(show_spinner="Loading the tables…")
def load_tables(dataset: str, synthesizer: str, real_path: str, synthetic_path: str) -> tuple[pd.DataFrame,
                                                                                                pd.DataFrame]:
    """The real train table and the synthetic release (explicit files win over the project's data)."""
    real = protocol.read_table_file(real_path) if real_path else load_processed(dataset, "train")
    synthetic = (protocol.read_table_file(synthetic_path) if synthetic_path
                 else load_synthetic(dataset, synthesizer))
    return real, synthetic


@st.cache_data(show_spinner="Computing the metadata…")
def whole_table_metadata(dataset: str, synthesizer: str, real_path: str, synthetic_path: str,
                         which: str) -> str:
    """Metadata block of the whole real (``which="real"``) or synthetic table, computed once per server."""
    real, synthetic = load_tables(dataset, synthesizer, real_path, synthetic_path)
    return metadata_block(real if which == "real" else synthetic, include_row_count=False)


# No bare string or other bare expression anywhere in this script, not even a note under a constant:
# Streamlit's "magic" writes each one to the page (above the title, at module level), so notes are comments.
# tests/unit/human/test_label_session.py compiles this file with Streamlit's magic to check it.

# st.session_state key (one per browser tab) of the line shown once at the top of the next step.
NOTICE = "llmdisc:notice"
# st.session_state key of (step key, messages): why the last Save of that step wrote nothing.
PROBLEMS = "llmdisc:problems"
# Scrolls the page back to its heading: Streamlit keeps the scroll position of the previous step, whose Save
# button sits at the foot. The {step} placeholder makes the script differ per step, so that it runs for each.
TO_TOP_JS = """<script>/* {step} */
(() => {{
  const toTop = () => {{
    const heading = document.querySelector('h1');
    for (let el = heading; el; el = el.parentElement) {{ if (el.scrollTop) el.scrollTop = 0; }}
    window.scrollTo(0, 0);
  }};
  toTop();
  for (const ms of [50, 150, 400]) setTimeout(toTop, ms);
}})();
</script>"""


def _show_notice(step: str) -> None:
    """Show the line left by the previous run (a save, or a save refused as stale) and scroll to the top."""
    notice = st.session_state.pop(NOTICE, None)
    if notice is None:
        return
    kind, text = notice
    (st.success if kind == "saved" else st.warning)(text)
    st.html(TO_TOP_JS.format(step=step), unsafe_allow_javascript=True)


def _save(config: protocol.SessionConfig, path: Path, index: int, pair: protocol.PairPlan, condition: str,
          row_ids: list[int]) -> None:
    """Save button callback: write the answer of the step the tab showed, once; leave a notice (saved, or
    already answered in another tab) for the next page, or an incomplete answer's problems for this step."""
    state = st.session_state
    step_key = f"{config.session_id}:{pair.pair_id}:{condition}"
    name = f"step {index + 1} (sample {pair.pair_id + 1}, {condition})"  # as the annotator sees it
    # Re-read: another tab may have saved this step meanwhile; never write an answer twice, and say so.
    if protocol.is_answered(protocol.read_session(path), pair, condition):
        state[NOTICE] = ("stale", f"{name[0].upper()}{name[1:]} was already answered in another tab or "
                         "window, so the answer from this tab was not saved (the first answer counts). This "
                         "tab now shows the next unanswered step; keep one tab open.")
        return
    verdict, confidence, notes = (state.get(f"{field}:{step_key}") for field in ("verdict", "confidence",
                                                                                   "notes"))
    problems = protocol.check_answer(verdict, confidence)
    if problems:
        state[PROBLEMS] = (step_key, problems)
        return
    shown_at = state.get(f"shown:{step_key}", time.monotonic())
    record = protocol.build_record(config, pair, condition, row_ids, verdict, confidence, notes or "",
                                   elapsed_seconds=time.monotonic() - shown_at)
    protocol.append_answer(path, record)
    state[NOTICE] = ("saved", f"Answer saved: {name}.")


def _show_summary(config: protocol.SessionConfig, answers: pd.DataFrame) -> None:
    st.success("Session complete — thank you. Your answers are saved.")
    st.subheader("Summary per condition")
    st.caption("Rates are shares (0-1). DRS = min(p_REAL, p_SYN): 0.5 is chance-level, 1 means every sample "
               "was recognised. Mean confidence is 0-100.")
    # st.table (plain HTML), not st.dataframe: its text is readable by screen readers and the browser test.
    st.table(protocol.session_summary(answers, seed=config.seed).round(3).set_index("condition"))
    st.subheader("Your answers")
    st.table(answers[["pair_id", "condition", "true_label", "predicted_label", "correct", "confidence",
                      "elapsed_seconds"]].set_index(["pair_id", "condition"]))


def main() -> None:
    """Draw the current step of the session named by the command-line options."""
    args = parse_app_args(sys.argv[1:])
    st.set_page_config(page_title="Real or synthetic? — llmdisc human pilot", layout="wide")
    config = protocol.SessionConfig(annotator_id=args.annotator, dataset=args.dataset,
                                    synthesizer=args.synthesizer, n_pairs=args.pairs, seed=args.seed,
                                    metadata_source=args.metadata_source, n_rows=args.n_rows,
                                    session=args.session)
    labels_dir = Path(args.labels_dir) if args.labels_dir else data_dir() / "human"
    path = protocol.session_path(config, labels_dir)
    plan = protocol.plan_session(config)
    steps = protocol.session_steps(plan)
    answers = protocol.read_session(path)
    index = protocol.resume_index(config, plan, answers)

    st.html(PAGE_CSS)  # style sheet only: Streamlit puts it out of the page flow
    st.title("Real or synthetic?")
    with st.sidebar:
        # No synthesizer name (nor the session id, which holds it): the annotator is told only the dataset.
        st.markdown(f"**Annotator:** `{config.annotator_id}`  \n**Dataset:** {config.dataset}")
        st.markdown(f"**Answers saved:** {len(answers)} of {len(steps)}")
        st.caption("Each answer is written to disk as soon as you press Save; you can close this page and "
                   "reopen the same session later. Results are shown only after the last answer.")
    _show_notice(f"{config.session_id}:{index}")
    if index >= len(steps):
        _show_summary(config, answers)
        return

    pair, condition = steps[index]
    st.progress(index / len(steps), text=f"Step {index + 1} of {len(steps)} — sample {pair.pair_id + 1} of "
                                         f"{len(plan)}, condition {condition}")
    try:
        real, synthetic = load_tables(args.dataset, args.synthesizer, args.real, args.synthetic)
        sample, row_ids = protocol.draw_pair_sample(pair, real, synthetic, config.n_rows)
    except LlmdiscError as exc:
        st.error(str(exc))
        st.stop()
    if condition == "C1":
        st.header("C1 — table only")
        st.write(f"Is this sample of {len(sample)} rows REAL data or SYNTHETIC data?")
    else:
        st.header("C2 — the same table, with statistical metadata")
        st.write("Same rows as the previous step, now with summary statistics. Answer again.")
    st.html(sample_table_html(sample))
    with st.expander("Exact text the model receives (Markdown)"):
        st.code(render_table(sample), language=None)
    if condition == "C2":
        st.subheader("Statistical metadata")
        kind = protocol.metadata_table_kind(config.metadata_source, pair.true_label)
        if kind == "sample":
            text = metadata_block(sample, include_row_count=False)
        else:
            text = whole_table_metadata(args.dataset, args.synthesizer, args.real, args.synthetic, kind)
        st.html(metadata_html(text))

    step_key = f"{config.session_id}:{pair.pair_id}:{condition}"
    st.session_state.setdefault(f"shown:{step_key}", time.monotonic())
    # enter_to_submit=False: Enter must not save before the notes are written. No min/max on the number box:
    # Streamlit would silently refuse 150; check_answer names the range instead. The callback carries the step
    # this tab showed, since another tab may have answered it by the next run.
    with st.form(key=f"form:{step_key}", enter_to_submit=False):
        st.radio("Verdict", ["REAL", "SYNTHETIC"], index=None, horizontal=True, key=f"verdict:{step_key}")
        st.number_input("Confidence, 0 (a pure guess) to 100 (certain)", value=None, step=1,
                        placeholder="type a number 0-100", key=f"confidence:{step_key}")
        st.text_area("Notes (optional): what guided your decision?", key=f"notes:{step_key}")
        st.form_submit_button("Save answer and continue", type="primary", on_click=_save,
                              args=(config, path, index, pair, condition, row_ids))
    problems = st.session_state.pop(PROBLEMS, None)
    if problems is not None and problems[0] == step_key:
        for problem in problems[1]:
            st.error(problem)  # by the Save button, where the annotator is looking


if __name__ == "__main__":
    main()
