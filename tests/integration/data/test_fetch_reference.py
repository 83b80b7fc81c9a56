"""``llmdisc data fetch-reference`` over real HTTP: a loopback server serves ../shared/reference in the paper
repository's raw-file layout (``/<owner>/<repo>/<commit>/<path>``), with faults on chosen files."""

from __future__ import annotations

import hashlib
import http.server
import re
import threading
from collections import Counter
from pathlib import Path
from typing import ClassVar

import pytest

from llmdisc.cli.main import main as cli_main
from llmdisc.data import reference as ref
from llmdisc.errors import ChecksumError, ConfigError
from llmdisc.manifest import sha256_file

SMALL = ["results/human/annotator_tk/census/*", "data/census/synthetic/ctgan/*"]  # 9 files, ~0.95 MB
PREFIX = f"/{ref.REPOSITORY}/{ref.COMMIT}/"


class _RawFiles(http.server.BaseHTTPRequestHandler):
    """GitHub's raw-file layout over a folder; ``faults`` maps a repository path to how it misbehaves.

    Faults: ``404``; ``truncate`` (announces the whole length, sends half, closes); ``truncate_once`` (the first
    request is truncated, later ones honour ``Range``); ``short`` (a complete response of half the bytes);
    ``corrupt`` (one byte changed, same length).
    """

    root: ClassVar[Path]
    faults: ClassVar[dict[str, str]] = {}
    hits: ClassVar[Counter] = Counter()
    ranges: ClassVar[list[tuple[str, str]]] = []
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        path = self.path[len(PREFIX):] if self.path.startswith(PREFIX) else None
        type(self).hits[path or self.path] += 1
        fault = self.faults.get(path or "")
        target = self.root / path if path else None
        if path is None or fault == "404" or target is None or not target.is_file():
            self._send(404, b"404: Not Found")
            return
        body = target.read_bytes()
        if fault == "corrupt":
            body = body[:100] + bytes([body[100] ^ 0x01]) + body[101:]
        if fault == "short":
            body = body[: len(body) // 2]
        wanted = self.headers.get("Range")
        if wanted:
            type(self).ranges.append((path, wanted))
        first = self.hits[path] == 1
        if fault == "truncate" or (fault == "truncate_once" and first):
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        match = re.fullmatch(r"bytes=(\d+)-", wanted or "")
        if match:
            start = int(match.group(1))
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
            body = body[start:]
        else:
            self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _send(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        return


@pytest.fixture
def server(reference: Path):
    """The loopback raw-file host (``reference`` skips where the paper's files are absent)."""
    _RawFiles.root, _RawFiles.faults, _RawFiles.hits, _RawFiles.ranges = reference, {}, Counter(), []
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _RawFiles)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def _fetch(dest: Path, base: str, only=SMALL, **kwargs) -> ref.FetchReport:
    return ref.fetch_reference(dest, base_url=base, only=only, retries=kwargs.pop("retries", 1), **kwargs)


def _files(folder: Path) -> list[str]:
    """Every file under ``folder`` (pooch's temporary files included), as POSIX paths inside it."""
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def test_fetch_subset_verifies_and_resumes_without_refetching(server: str, reference: Path, tmp_path: Path) -> None:
    dest = tmp_path / "ref"
    pins = ref.pinned_files(SMALL)
    assert len(pins) == 9
    report = _fetch(dest, server)
    assert sorted(report.fetched) == [p.path for p in pins] and report.present == []
    assert report.requests == 9 and report.bytes_received == sum(p.size for p in pins)
    for pin in pins:
        assert (dest / pin.path).read_bytes() == (reference / pin.path).read_bytes()
        assert (dest / pin.path).stat().st_mode & 0o777 == 0o644  # readable by all, as a file written by open()
    assert _files(dest) == [p.path for p in pins]  # no temporary file left behind
    assert ref.check_reference(dest, only=SMALL) == []
    # Second run: everything present with the right hash, no request at all.
    _RawFiles.hits.clear()
    again = _fetch(dest, server)
    assert again.fetched == [] and len(again.present) == 9 and again.requests == 0 and not _RawFiles.hits
    # One file deleted: only that one is fetched.
    gone = "data/census/synthetic/ctgan/synthetic.csv"
    (dest / gone).unlink()
    third = _fetch(dest, server)
    assert third.fetched == [gone] and dict(_RawFiles.hits) == {gone: 1}


def test_cli_fetches_all_and_check_lists_an_edited_file(server: str, reference: Path, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture) -> None:
    dest = tmp_path / "all"
    assert cli_main(["data", "fetch-reference", "--dest", str(dest), "--base-url", server]) == 0
    out = capsys.readouterr().out
    assert "59 fetched, 0 already present" in out
    assert cli_main(["data", "fetch-reference", "--check", "--dest", str(dest)]) == 0
    assert "all 59 pinned files match" in capsys.readouterr().out
    edited = dest / "results/census/llm_results_ctgan_google_20260526_164854.jsonl"
    data = bytearray(edited.read_bytes())
    data[10] ^= 0x01
    edited.chmod(0o644)
    edited.write_bytes(bytes(data))
    (dest / "results/human/annotator_tk/census/human_results_TK_20260530_234822-tvae.csv").unlink()
    assert cli_main(["data", "fetch-reference", "--check", "--dest", str(dest)]) == 1
    out = capsys.readouterr().out
    assert "2 of 59 pinned files differ" in out
    assert re.search(r"sha256 +results/census/llm_results_ctgan_google_20260526_164854\.jsonl", out)
    assert re.search(r"missing +results/human/annotator_tk/census/human_results_TK_20260530_234822-tvae\.csv", out)
    assert "fix: run `llmdisc data fetch-reference`" in out
    # The fetch repairs exactly those two.
    _RawFiles.hits.clear()
    assert cli_main(["data", "fetch-reference", "--dest", str(dest), "--base-url", server]) == 0
    assert "2 fetched, 57 already present" in capsys.readouterr().out and sum(_RawFiles.hits.values()) == 2
    assert ref.check_reference(dest) == []


def test_truncated_body_is_downloaded_again(server: str, reference: Path, tmp_path: Path) -> None:
    name = "data/census/synthetic/ctgan/synthetic.csv"
    _RawFiles.faults = {name: "truncate_once"}
    report = _fetch(tmp_path / "ref", server, only=[name])
    pin = ref.pin_of(name)
    assert report.fetched == [name] and _RawFiles.hits[name] == 2 and report.requests == 2
    assert _RawFiles.ranges == []  # pooch's retry takes the whole file again
    assert pin.size < report.bytes_received <= pin.size + pin.size // 2
    assert sha256_file(tmp_path / "ref" / name) == pin.sha256
    assert _files(tmp_path / "ref") == [name]


def test_always_truncated_file_fails_naming_it_and_leaves_nothing(server: str, tmp_path: Path) -> None:
    name = "results/human/annotator_tk/census/human_results_TK_20260530_235200-ctgan.csv"
    _RawFiles.faults = {name: "truncate"}
    dest = tmp_path / "ref"
    with pytest.raises(ref.ReferenceFetchError) as info:
        _fetch(dest, server)
    message = str(info.value)
    assert f"{name}: the download from" in message and "failed after 2 attempt(s)" in message
    assert "nothing was written for it; fix: re-run `llmdisc data fetch-reference`" in message
    assert "1 of 9 reference file(s) failed" in message and _RawFiles.hits[name] == 2
    assert _files(dest) == sorted(p.path for p in ref.pinned_files(SMALL) if p.path != name)  # no partial file
    assert len(ref.check_reference(dest, only=SMALL)) == 1  # the other 8 were fetched


def test_short_complete_body_is_a_truncation(server: str, tmp_path: Path) -> None:
    name = "data/census/synthetic/ctgan/synthetic.csv"
    _RawFiles.faults = {name: "short"}
    with pytest.raises(ref.ReferenceFetchError, match=re.escape(f"{name}: the download")) as info:
        _fetch(tmp_path / "ref", server, only=[name], retries=0)
    assert "the body ended after 471,743 of 943,487 bytes" in str(info.value)


def test_wrong_hash_names_the_file_both_digests_and_the_fix(server: str, reference: Path, tmp_path: Path) -> None:
    name = "data/census/synthetic/ctgan/synthetic.csv"
    _RawFiles.faults = {name: "corrupt"}
    dest = tmp_path / "ref"
    with pytest.raises(ChecksumError) as info:
        _fetch(dest, server, only=[name])
    data = bytearray((reference / name).read_bytes())
    data[100] ^= 0x01
    message = str(info.value)
    assert f"{name}: downloaded 943,487 bytes with sha256 {hashlib.sha256(bytes(data)).hexdigest()}" in message
    assert f"expected 943,487 bytes with sha256 {ref.pin_of(name).sha256}" in message
    assert "nothing was written for it; fix: re-run `llmdisc data fetch-reference`" in message
    assert not dest.exists() or _files(dest) == []  # nothing under the real name, no temporary file
    assert _RawFiles.hits[name] == 2  # pooch retries a wrong hash once more (retries=1), then gives up


def test_404_names_the_file_the_commit_and_the_base_url(server: str, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture) -> None:
    name = "data/census/synthetic/tvae/synthetic.csv"
    _RawFiles.faults = {name: "404"}
    status = cli_main(["data", "fetch-reference", "--dest", str(tmp_path / "ref"), "--base-url", server,
                       "--only", "data/census/*", "--retries", "0"])
    err = capsys.readouterr().err
    assert status == 2
    assert f"{name}: HTTP 404 at {server}{PREFIX}{name}" in err
    assert "fix: check --base-url" in err and "1 of 4 reference file(s) failed (3 fetched" in err
    assert _RawFiles.hits[name] == 1


def test_no_network_fails_at_once_with_the_fix(tmp_path: Path) -> None:
    import socket

    with socket.socket() as sock:  # a port nothing listens on: connection refused
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(ref.ReferenceNetworkError) as info:
        ref.fetch_reference(tmp_path / "ref", base_url=f"http://127.0.0.1:{port}", retries=1)
    message = str(info.value)
    assert "cannot connect to http://127.0.0.1:" in message and "fix: check the network" in message


def test_unknown_pattern_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=re.escape("--only pattern(s) ['data/adult/*'] match no pinned")):
        ref.fetch_reference(tmp_path, only=["data/adult/*"])


def test_notebook_08_entry_points_on_a_fetched_folder_found_through_the_environment(
    server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fetch the paper's records into a folder named by LLMDISC_REFERENCE (nothing else reachable), then run the
    library calls notebook 08 makes: the headline numbers and the paper's C2ST on its releases."""
    from llmdisc.baselines import paper_c2st_releases
    from llmdisc.paths import reference_dir
    from llmdisc.scoring import reference as paper
    from llmdisc.scoring import tables

    dest = tmp_path / "fetched"
    empty = tmp_path / "no_shared"
    empty.mkdir()
    monkeypatch.setenv("LLMDISC_REFERENCE", str(dest))
    monkeypatch.setenv("LLMDISC_SHARED", str(empty))
    monkeypatch.setenv("LLMDISC_ROOT", str(tmp_path / "project"))
    assert reference_dir() is None
    ref.fetch_reference(base_url=server, only=["results/**/llm_results_*.jsonl", "data/census/*"])
    # dest defaults to $LLMDISC_REFERENCE
    assert reference_dir() == dest.resolve()
    trials = paper.import_paper_trials(reference_dir() / "results")
    models = tables.paper_model_table(trials).set_index("model")
    assert (int((trials["status"] == "valid").sum()), len(trials)) == (451, 860)
    assert round(float(models.loc["gemini-2.5-flash", "DRS"]), 1) == 83.7
    assert round(float(models.loc["llama-3.1-8b-instant", "DRS"]), 1) == 20.2
    table = paper_c2st_releases(seeds=range(3))
    assert list(table["synthesizer"]) == ["gaussian_copula", "ctgan", "tvae"]
    assert table["input"].str.startswith("$LLMDISC_REFERENCE/data/census/synthetic/").all()
