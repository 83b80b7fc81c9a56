"""``llmdisc label`` (start the labelling app on 127.0.0.1) and ``llmdisc label-analyse DIR...``."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from llmdisc import SYNTHESIZERS


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    label = subparsers.add_parser(
        "label", help="start the human labelling app (Streamlit, on 127.0.0.1) for one session",
        description="Serve a labelling session: n pairs (half REAL, half SYNTHETIC, seeded order), each a "
        "fresh 20-row sample answered as C1 then C2, every answer saved at once to "
        "data/human/<annotator>/<session>.csv; reopening the same session resumes it.")
    label.add_argument("--annotator", required=True, help="annotator id, e.g. A1 (names the folder)")
    label.add_argument("--dataset", required=True, help="dataset key: adult, census-codes or census-labels")
    label.add_argument("--synthesizer", required=True, choices=SYNTHESIZERS, help="the release under test")
    label.add_argument("--pairs", type=int, default=10, help="samples in the session (even; default 10)")
    label.add_argument("--seed", type=int, default=0,
                       help="session seed: label order and samples (default 0)")
    label.add_argument("--metadata-source", default="real", choices=("source", "real", "sample"),
                       help="C2 metadata from the sample's whole source table (the paper's, "
                       "label-revealing), the whole real table (default) or the sample's rows")
    label.add_argument("--n-rows", type=int, default=20, help="rows per sample (default 20)")
    label.add_argument("--session", default="",
                       help="explicit session id (default: derived from the options)")
    label.add_argument("--port", type=int, default=8501, help="port on 127.0.0.1 (default 8501)")
    label.add_argument("--labels-dir", default="", help="where sessions are saved (default data/human)")
    label.add_argument("--real", default="", help="real table file (.parquet/.csv) instead of data/processed")
    label.add_argument("--synthetic", default="", help="synthetic table file instead of data/synthetic")
    label.set_defaults(func=run_label)

    analyse = subparsers.add_parser(
        "label-analyse", help="analyse label files (ours or the paper's) and print the human-pilot tables")
    analyse.add_argument("paths", nargs="*", help="label files or folders, searched recursively "
                         "(default: the paper's labels in ../shared/reference where present, else "
                         "data/human)")
    analyse.add_argument("--annotator-map", default="ManelS=HA1,TK=HA2",
                         help="renames, OLD=NEW comma-separated (default: the paper's ManelS=HA1,TK=HA2)")
    analyse.add_argument("--llm-cells", default="",
                         help="CSV of LLM per-cell DRS for the agreement statistics")
    analyse.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    analyse.set_defaults(func=run_label_analyse)


def streamlit_command(args: argparse.Namespace) -> list[str]:
    """The command serving the app: ``python -m streamlit run app.py`` on 127.0.0.1, headless, no telemetry.

    Raises:
        ConfigError: the session options are invalid (checked here, before the server starts).
    """
    from llmdisc.human.label_app import session as protocol

    protocol.SessionConfig(annotator_id=args.annotator, dataset=args.dataset, synthesizer=args.synthesizer,
                           n_pairs=args.pairs, seed=args.seed, metadata_source=args.metadata_source,
                           n_rows=args.n_rows, session=args.session)
    app = Path(protocol.__file__).with_name("app.py")
    command = [sys.executable, "-m", "streamlit", "run", str(app),
               "--server.address", "127.0.0.1", "--server.port", str(args.port), "--server.headless", "true",
               "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none",
               "--client.toolbarMode", "minimal", "--",
               "--annotator", args.annotator, "--dataset", args.dataset, "--synthesizer", args.synthesizer,
               "--pairs", str(args.pairs), "--seed", str(args.seed),
               "--metadata-source", args.metadata_source, "--n-rows", str(args.n_rows)]
    for option in ("session", "labels_dir", "real", "synthetic"):
        value = getattr(args, option)
        if value:
            # Absolute paths here: the server's working folder may differ; they are never written to a file.
            value = str(Path(value).resolve()) if option != "session" else value
            command += [f"--{option.replace('_', '-')}", value]
    return command


def check_tables(args: argparse.Namespace) -> tuple[int, int]:
    """Load the session's two tables once before serving, so a missing file is one clear error, not a page
    traceback; return their row counts (real, synthetic).

    Raises:
        DataError: a table is missing (the message names the command that makes it) or too small for a sample.
    """
    from llmdisc.data.datasets import load_processed
    from llmdisc.errors import DataError
    from llmdisc.human.label_app.session import read_table_file
    from llmdisc.synthesis.releases import load_synthetic

    real = read_table_file(args.real) if args.real else load_processed(args.dataset, "train")
    synthetic = (read_table_file(args.synthetic) if args.synthetic
                 else load_synthetic(args.dataset, args.synthesizer))
    for name, table in (("real", real), ("synthetic", synthetic)):
        if len(table) < args.n_rows:
            raise DataError(f"the {name} table has {len(table)} rows, fewer than --n-rows {args.n_rows}; "
                            "fix: use a larger table or a smaller --n-rows")
    return len(real), len(synthetic)


def run_label(args: argparse.Namespace) -> int:
    """Check the inputs, then replace this process with the Streamlit server (stopping it stops the app)."""
    command = streamlit_command(args)
    check_tables(args)
    print(f"llmdisc label: serving on http://127.0.0.1:{args.port} (Ctrl-C to stop)", flush=True)
    os.execv(command[0], command)
    return 0  # not reached


def _parse_map(text: str) -> dict[str, str]:
    from llmdisc.errors import ConfigError

    mapping = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        old, sep, new = item.partition("=")
        if not sep or not old.strip() or not new.strip():
            raise ConfigError(f"--annotator-map item {item!r} is not OLD=NEW; fix: e.g. ManelS=HA1,TK=HA2")
        mapping[old.strip()] = new.strip()
    return mapping


def run_label_analyse(args: argparse.Namespace) -> int:
    """Print the per-cell, per-annotator, confidence, C2−C1 and (optional) agreement tables."""
    import pandas as pd

    from llmdisc.human import analysis as human

    paths = [Path(p) for p in args.paths] or human.default_label_dirs()
    analysis = human.analyse_labels(paths, annotator_map=_parse_map(args.annotator_map), seed=args.seed,
                                    llm_cells=pd.read_csv(args.llm_cells) if args.llm_cells else None)
    print(human.format_report(analysis))
    return 1 if analysis.labels.empty else 0
