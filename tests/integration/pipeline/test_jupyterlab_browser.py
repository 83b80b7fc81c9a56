"""``make lab`` as a user starts it, driven in headless Chromium: a notebook runs on the ``llmdisc`` kernel.

The test takes the ``jupyter lab`` command ``make -n lab`` prints (so the Makefile's own flags are used,
``--allow-root`` included when this runs as root, as in a container), adds a free loopback port, a token and
``--no-browser``, and runs it in a temp folder holding a two-cell notebook whose kernel is ``llmdisc`` (the
spec ``lib/setup-env.sh`` installs into the venv). Chromium opens the notebook, runs every cell through the
Run menu and must see the package's version and a pandas table, no error output, no page or console error,
and no request leaving 127.0.0.1. The server is shut down through its API afterwards.
"""

from __future__ import annotations

import json
import os
import secrets
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

import llmdisc
from support.browser import chromium_context, chromium_missing_reason

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[3]
KERNEL = "llmdisc"
CELLS = ["import llmdisc\nprint('llmdisc version', llmdisc.__version__)",
         "import pandas as pd\npd.DataFrame({'label': ['REAL', 'SYNTHETIC'], 'trials': [3, 4]})"]
QUIET = ["--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
"""No news feed and no update check: both would make the server itself reach the internet."""
DONE_JS = r"""n => {
  const prompts = [...document.querySelectorAll('.jp-Notebook .jp-Cell .jp-InputArea-prompt')];
  return prompts.length === n && prompts.every(el => /\[\d+\]/.test(el.innerText));
}"""
"""True once every cell's prompt shows an execution count: "[ ]" before, "[*]" while running, "[n]" after."""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def make_lab_command() -> list[str]:
    """The ``jupyter lab`` command of ``make lab`` (``make -n`` prints it without running anything)."""
    printed = subprocess.run(["make", "-n", "lab"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout
    lines = [line for line in printed.splitlines() if line.startswith(".venv/bin/jupyter lab")]
    assert len(lines) == 1, f"make -n lab prints no single '.venv/bin/jupyter lab' line:\n{printed}"
    words = shlex.split(lines[0])
    # .venv/bin/jupyter of a checkout is the venv this test runs in.
    return [str(Path(sys.executable).parent / "jupyter"), *words[1:]]


def _write_notebook(path: Path) -> None:
    cells = [{"cell_type": "code", "execution_count": None, "id": f"cell{i}", "metadata": {}, "outputs": [],
              "source": source} for i, source in enumerate(CELLS)]
    notebook = {"cells": cells, "nbformat": 4, "nbformat_minor": 5,
                "metadata": {"kernelspec": {"name": KERNEL, "display_name": "Python (llmdisc)",
                                            "language": "python"}}}
    path.write_text(json.dumps(notebook), encoding="utf-8")


@contextmanager
def _lab(tmp: Path) -> Iterator[dict]:
    """``make lab``'s command on a free port with a token, in ``tmp/work``.

    Yields:
        ``{"base": URL, "token": token}``; after the block it holds ``"stopped"``: ``"api"`` when the server
        exited after ``POST /api/shutdown``, ``"killed"`` when it had to be killed.
    """
    port, token = _free_port(), secrets.token_hex(16)
    command = [*make_lab_command(), f"--port={port}", "--port-retries=0", "--no-browser",
               f"--IdentityProvider.token={token}", *QUIET]
    # Jupyter's own settings, workspaces and runtime files go to tmp, not to $HOME.
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(tmp / "config"), JUPYTER_RUNTIME_DIR=str(tmp / "runtime"),
               JUPYTERLAB_SETTINGS_DIR=str(tmp / "settings"), JUPYTERLAB_WORKSPACES_DIR=str(tmp / "ws"),
               IPYTHONDIR=str(tmp / "ipython"), OMP_NUM_THREADS="1")
    log = open(tmp / "lab.log", "wb")
    process = subprocess.Popen(command, cwd=tmp / "work", stdout=log, stderr=subprocess.STDOUT, env=env,
                               start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    served = {"base": base, "token": token}
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail("JupyterLab did not start (" + " ".join(command[1:]) + "):\n"
                            + (tmp / "lab.log").read_text(errors="replace")[-3000:])
            time.sleep(0.5)
        yield served
    finally:
        try:  # a clean shutdown stops the kernels too
            request = urllib.request.Request(f"{base}/api/shutdown", method="POST",
                                             headers={"Authorization": f"token {token}"})
            urllib.request.urlopen(request, timeout=10).close()
            process.wait(timeout=20)
            served["stopped"] = "api"
        except (OSError, subprocess.TimeoutExpired):
            served["stopped"] = "killed"
            os.killpg(process.pid, signal.SIGKILL)  # the process group this helper started, nothing else
            process.wait(timeout=5)
        log.close()


def test_make_lab_runs_a_notebook_on_the_llmdisc_kernel(tmp_path: Path) -> None:
    reason = chromium_missing_reason()
    if reason:
        pytest.skip(reason)
    from jupyter_client.kernelspec import KernelSpecManager
    from playwright.sync_api import sync_playwright

    assert KERNEL in KernelSpecManager().find_kernel_specs(), (
        "the Jupyter kernel 'llmdisc' is not installed; fix: bash lib/setup-env.sh (it runs "
        "ipykernel install --sys-prefix --name llmdisc)")
    assert ("--allow-root" in make_lab_command()) == (os.getuid() == 0)
    (tmp_path / "work").mkdir()
    _write_notebook(tmp_path / "work" / "check.ipynb")
    console: list[str] = []
    started = time.monotonic()
    with _lab(tmp_path) as served, sync_playwright() as playwright, \
            chromium_context(playwright, tmp_path / "profile", viewport={"width": 1300, "height": 900}) \
            as (context, leaving):
        base, token = served["base"], served["token"]
        page = context.new_page()
        page.on("console", lambda m: console.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: console.append(str(e)))
        page.goto(f"{base}/lab/tree/check.ipynb?token={token}")
        page.locator(".jp-Notebook .jp-Cell").nth(len(CELLS) - 1).wait_for(timeout=60_000)
        page.locator(".jp-NotebookPanel-toolbar").get_by_text("Python (llmdisc)").wait_for(timeout=30_000)
        # The kernel is up and the notebook is the active panel: Run All Cells is enabled only then.
        page.locator('.jp-NotebookPanel-toolbar [data-status="idle"]').wait_for(timeout=60_000)
        page.locator(".jp-Notebook .jp-Cell .jp-InputArea-editor").first.click()
        page.locator(".lm-MenuBar-item", has_text="Run").first.click()
        page.locator(".lm-Menu-item:not(.lm-mod-disabled)", has_text="Run All Cells").first.click()
        try:
            page.wait_for_function(DONE_JS, arg=len(CELLS), timeout=45_000)
        except Exception:
            page.screenshot(path=str(tmp_path / "lab_failure.png"))
            pytest.fail(f"the cells did not all run within 45 s (screenshot {tmp_path / 'lab_failure.png'}); "
                        f"console errors {console}; server log:\n"
                        + (tmp_path / "lab.log").read_text(errors="replace")[-3000:])
        page.locator(".jp-OutputArea-output table").wait_for()
        page.screenshot(path=str(tmp_path / "lab.png"))
        outputs = page.locator(".jp-OutputArea-output")
        texts = outputs.all_inner_texts()
        mime_types = [outputs.nth(i).get_attribute("data-mime-type") for i in range(outputs.count())]
        table = page.locator(".jp-OutputArea-output table").inner_text()
        with urllib.request.urlopen(f"{base}/api/sessions?token={token}", timeout=5) as response:
            sessions = json.loads(response.read())
        errors = list(console)
        # The guard works: a request for another host is aborted in the browser and recorded.
        probe = page.evaluate("fetch('https://example.org/probe').then(() => 'sent', () => 'blocked')")
        probed, leaving[:] = list(leaving), []
    elapsed = time.monotonic() - started
    assert served["stopped"] == "api", (tmp_path / "lab.log").read_text(errors="replace")[-3000:]
    with pytest.raises(OSError):  # and nothing answers on its port any more
        urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2)

    assert f"llmdisc version {llmdisc.__version__}" in texts[0], texts
    assert "SYNTHETIC" in table and "trials" in table, table
    assert not [m for m in mime_types if m in ("application/vnd.jupyter.stderr",
                                               "application/vnd.jupyter.error")], (mime_types, texts)
    assert [s["kernel"]["name"] for s in sessions] == [KERNEL]
    assert probe == "blocked" and probed == ["https://example.org/probe"], (probe, probed)
    assert leaving == [], leaving
    assert errors == [], errors
    print(f"JupyterLab start, notebook run and shutdown: {elapsed:.1f} s")
