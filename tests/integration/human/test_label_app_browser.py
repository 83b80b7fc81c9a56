"""The real labelling app (``llmdisc label``) driven in headless Chromium through a whole session.

Starts the server on a free 127.0.0.1 port with two small tables, answers steps, closes the browser
mid-session, reopens it, finishes, and checks the CSV and what the page showed along the way.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Iterator

import numpy as np
import pandas as pd
import pytest

from llmdisc.human.label_app import session as protocol

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
FEEDBACK = re.compile(r"correct|wrong|right answer|accuracy|score|DRS|✓|✔|✅|❌|✗", re.IGNORECASE)
PAIRS = 2  # 4 steps: 3 before the browser is closed, 1 after it is reopened
ARTEFACTS = Path(tempfile.gettempdir())  # screenshots kept for a person to look at after a run
SCREENSHOT = ARTEFACTS / "llmdisc_label_app_c2.png"
IDLE = '[data-testid="stApp"][data-test-script-state="notRunning"]'
"""Streamlit's root element once the script run is over: before that, the previous step's widgets may
still be on the page (stale), and a click on them would be lost when the new step replaces them."""


def _wait_idle(page, text: str, timeout: int = 30_000) -> None:  # type: ignore[no-untyped-def]
    page.get_by_text(text).first.wait_for(timeout=timeout)
    page.locator(IDLE).wait_for(timeout=timeout)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    """``llmdisc label`` serving a 2-pair session over two 60-row tables (its process group stopped after)."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is absent; install Debian's chromium (apt-get install chromium) "
                    "to run this test")
    tmp = tmp_path_factory.mktemp("label_app")
    rng = np.random.default_rng(5)
    real = pd.DataFrame({"age": rng.integers(18, 90, 60),
                         "workclass": rng.choice(["Private", "State-gov"], 60),
                         "hours_per_week": rng.integers(10, 60, 60)})
    real.to_csv(tmp / "real.csv", index=False)
    real.assign(hours_per_week=rng.normal(40, 9, 60).round(2)).to_csv(tmp / "synthetic.csv", index=False)
    port = _free_port()
    argv = ["--annotator", "T1", "--dataset", "toy", "--synthesizer", "tvae", "--pairs", str(PAIRS),
            "--seed", "3", "--n-rows", "6", "--metadata-source", "real", "--port", str(port)]
    env = dict(os.environ, LLMDISC_ROOT=str(tmp), OMP_NUM_THREADS="1")
    log = open(tmp / "server.log", "wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "llmdisc", "label", *argv, "--labels-dir", str(tmp / "human"),
         "--real", str(tmp / "real.csv"), "--synthetic", str(tmp / "synthetic.csv")],
        stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as response:
                    if response.read() == b"ok":
                        break
            except OSError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail("the app did not start: " + (tmp / "server.log").read_text(errors="replace"))
            time.sleep(0.5)
        config = protocol.SessionConfig(annotator_id="T1", dataset="toy", synthesizer="tvae", n_pairs=PAIRS,
                                        seed=3, metadata_source="real", n_rows=6)
        yield {"url": f"http://127.0.0.1:{port}", "csv": protocol.session_path(config, tmp / "human"),
               "config": config}
    finally:
        os.killpg(process.pid, signal.SIGTERM)  # the process group this fixture started, nothing else
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=5)
        log.close()


def _answer(page, step: int, verdict: str, confidence: int,  # type: ignore[no-untyped-def]
            texts: list[str]) -> None:
    """Answer the step on screen (1-based ``step`` of 2 * PAIRS) and wait for the next one."""
    _wait_idle(page, f"Step {step} of {2 * PAIRS}")
    texts.append(page.locator("body").inner_text())
    page.locator('[data-testid="stRadio"]').get_by_text(verdict, exact=True).click()
    page.get_by_role("spinbutton").fill(str(confidence))
    page.get_by_role("button", name="Save answer and continue").click()
    following = f"Step {step + 1} of {2 * PAIRS}" if step < 2 * PAIRS else "Session complete"
    try:
        _wait_idle(page, following)
    except Exception:
        page.screenshot(path=str(ARTEFACTS / "llmdisc_label_app_failure.png"), full_page=True)
        raise


def test_a_session_survives_a_closed_browser_and_shows_feedback_only_at_the_end(server: dict) -> None:
    from playwright.sync_api import sync_playwright

    path: Path = server["csv"]
    plan = protocol.plan_session(server["config"])
    seen: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1300, "height": 1000})
            page.goto(server["url"])
            _wait_idle(page, f"Step 1 of {2 * PAIRS}", timeout=60_000)
            # Nothing is preset: saving with a verdict but no confidence is refused and writes nothing.
            page.locator('[data-testid="stRadio"]').get_by_text("REAL", exact=True).click()
            page.get_by_role("button", name="Save answer and continue").click()
            _wait_idle(page, "Set your confidence from 0")
            assert not path.exists()
            _answer(page, 1, "REAL", 55, seen)
            _answer(page, 2, "SYNTHETIC", 65, seen)
            _answer(page, 3, "REAL", 70, seen)
            _wait_idle(page, "Statistical metadata")  # step 4 is pair 1's C2
            page.screenshot(path=str(SCREENSHOT), full_page=True)
            assert len(protocol.read_session(path)) == 3  # saved before the browser goes away
            browser.close()

            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page()
            page.goto(server["url"])
            _wait_idle(page, f"Answers saved: 3 of {2 * PAIRS}", timeout=60_000)  # resumed at step 4
            for step in range(4, 2 * PAIRS + 1):
                _answer(page, step, "SYNTHETIC" if step % 3 else "REAL", 40 + step, seen)
            _wait_idle(page, "mean_confidence")  # the summary table itself, not only its title
            final = page.locator("body").inner_text()
            (ARTEFACTS / "llmdisc_label_app_final.txt").write_text(final, encoding="utf-8")
            page.screenshot(path=str(ARTEFACTS / "llmdisc_label_app_final.png"), full_page=True)
        finally:
            browser.close()

    for step, text in enumerate(seen, start=1):
        assert not FEEDBACK.search(text), f"feedback shown at step {step}: {FEEDBACK.search(text).group(0)!r}"
        assert ("Statistical metadata" in text) == (step % 2 == 0)
    assert "Session complete" in final and "drs" in final and "accuracy" in final
    answers = protocol.read_session(path)
    assert len(answers) == 2 * PAIRS
    assert not answers.duplicated(["pair_id", "condition"]).any()
    expected_steps = [(i, c) for i in range(PAIRS) for c in ("C1", "C2")]
    assert list(zip(answers["pair_id"], answers["condition"])) == expected_steps
    per_pair = answers.drop_duplicates("pair_id")["true_label"]
    assert (per_pair == "REAL").sum() == (per_pair == "SYNTHETIC").sum() == PAIRS // 2
    assert list(answers["true_label"]) == [p.true_label for p in plan for _ in ("C1", "C2")]
    assert list(answers["confidence"][:3]) == [55, 65, 70]
    assert (answers["elapsed_seconds"] > 0).all() and (answers["metadata_source"] == "real").all()
    assert answers.groupby("pair_id")["row_ids"].nunique().eq(1).all()  # C1 and C2 showed the same rows
