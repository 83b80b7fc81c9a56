"""The audit's ``report.html`` in a real browser (issue 25, item 3): opened from a ``file://`` URL in headless
Chromium, it shows its verdict line and its figure (an embedded PNG that loads), logs no console error and
asks for nothing but itself and its ``data:`` URIs: every other request is intercepted, refused and counted.

A report whose column names, values and file names carry markup and script (issue 42, item 2) runs none of it:
the browser shows those texts literally.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llmdisc.cli.main import main

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def audit_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real audit (the row instruments, the example gate) of a release that marks itself."""
    from llmdisc.data.datasets import load_dataset

    root = tmp_path_factory.mktemp("report_browser")
    real = load_dataset("adult", n_rows=300, seed=1)
    marked = load_dataset("adult", n_rows=300, seed=2)
    marked["workclass"] = "fake_" + marked["workclass"]
    real.to_csv(root / "real.csv", index=False)
    marked.to_csv(root / "release.csv", index=False)
    out = root / "audit"
    status = main(["audit", "--real", str(root / "real.csv"), "--synthetic", str(root / "release.csv"), "--out",
                   str(out), "--instruments", "c2st", "distances", "--fail-above", "0.5", "--no-progress"])
    assert status == 1  # told apart: the gate fails
    return out


@pytest.mark.browser
def test_the_report_opens_offline_with_its_verdict_and_figure(audit_dir: Path) -> None:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is absent; install Debian's chromium (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    headline = json.loads((audit_dir / "audit.json").read_text(encoding="utf-8"))["headline"]
    url = (audit_dir / "report.html").resolve().as_uri()
    refused, requested, console = [], [], []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})

            def route(r: object) -> None:
                request_url = r.request.url  # type: ignore[attr-defined]
                if request_url.startswith(("file:", "data:")):
                    r.continue_()  # type: ignore[attr-defined]
                else:
                    refused.append(request_url)
                    r.abort()  # type: ignore[attr-defined]

            page.route("**/*", route)
            page.on("request", lambda r: requested.append(r.url))
            page.on("console", lambda m: console.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: console.append(str(e)))
            page.goto(url, wait_until="load")
            verdict = page.locator("p.verdict").first.inner_text()
            images = page.eval_on_selector_all(
                "img", "els => els.map(e => ({src: e.src.slice(0, 22), complete: e.complete, "
                       "width: e.naturalWidth, height: e.naturalHeight, alt: e.alt}))")
            title = page.title()
            headings = page.eval_on_selector_all("h2", "els => els.map(e => e.textContent)")
        finally:
            browser.close()
    assert verdict.strip() == headline and verdict.startswith("FAIL: The release is told apart")
    assert title == "llmdisc audit"
    assert len(images) == 1, images
    figure = images[0]
    assert figure["src"] == "data:image/png;base64,"
    assert figure["complete"] and figure["width"] > 300 and figure["height"] > 100, figure
    assert figure["alt"].startswith("D with 95 % intervals per instrument")
    assert {"Instruments", "What gives the release away", "Data and method"} <= set(headings)
    assert refused == [] and all(u.startswith(("file:", "data:")) for u in requested), requested
    assert console == [], console


@pytest.mark.browser
def test_markup_in_the_users_texts_runs_nothing_and_shows_as_text(tmp_path: Path, hostile_report) -> None:
    from support.browser import chromium_context, chromium_missing_reason

    if (reason := chromium_missing_reason()) is not None:
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    path, texts = hostile_report(tmp_path / "audit")
    dialogs, console = [], []
    with sync_playwright() as playwright, chromium_context(playwright, tmp_path / "profile") as (context, leaving):
        page = context.new_page()
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.on("pageerror", lambda e: console.append(str(e)))
        page.set_content(path.read_text(encoding="utf-8"), wait_until="load")  # file:// is not loopback
        page.wait_for_timeout(300)  # an injected onerror would have fired by now
        pwned = page.evaluate("() => window.__pwned")
        scripts = page.eval_on_selector_all("script", "els => els.length")
        images = page.eval_on_selector_all("img", "els => els.map(e => e.src.slice(0, 22))")
        handlers = page.evaluate("""() => [...document.querySelectorAll('*')].flatMap(
            e => [...e.attributes].filter(a => a.name.startsWith('on')).map(a => e.tagName + ' ' + a.name))""")
        title = page.locator("h1").inner_text()
        shown = page.locator("body").inner_text()
    assert pwned is None and dialogs == [] and scripts == 0 and handlers == [], (pwned, dialogs, handlers)
    assert images == ["data:image/png;base64,"], images
    assert title == f"Audit of {texts[0]} against {texts[1]}"
    assert [t.split("]")[0] + "]" for t in texts if t not in shown] == []
    assert leaving == [] and console == [], (leaving, console)
