"""Headless Chromium for the browser tests: the machine's flags, a fresh profile, nothing past 127.0.0.1.

The tests drive Debian's ``/usr/bin/chromium`` through the ``playwright`` package (its own browser downloads
are never used). :func:`chromium_context` starts it with the flags these machines need (no sandbox as root in
a container, no GPU, no background traffic of its own) and a fresh user-data-dir, and aborts every page
request that would leave the loopback interface, recording it so that a test can assert that none was tried.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import urlsplit

CHROMIUM = "/usr/bin/chromium"
"""Debian's Chromium (``apt-get install chromium``, or ``bash lib/setup-env.sh --browser``)."""
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
"""Flags for a container: ``--no-sandbox`` (root has no user namespace sandbox), no GPU, and none of the
browser's own traffic (component updates, sync, field trials, first-run pages)."""
LOCAL_SCHEMES = ("data", "blob", "about")


def is_loopback(url: str) -> bool:
    """True for a URL that stays on this machine: ``http(s)``/``ws(s)`` to 127.0.0.1 or ``localhost``, or a
    ``data:``/``blob:``/``about:`` URL (no network at all)."""
    parts = urlsplit(url)
    if parts.scheme in LOCAL_SCHEMES:
        return True
    return parts.scheme in ("http", "https", "ws", "wss") and parts.hostname in ("127.0.0.1", "localhost")


def chromium_missing_reason() -> str | None:
    """Why the browser tests cannot run here (a sentence with the fix), or None when Chromium is present."""
    if Path(CHROMIUM).exists():
        return None
    return (f"{CHROMIUM} is absent; install Debian's chromium (apt-get install chromium, or "
            "bash lib/setup-env.sh --browser) to run this test")


@contextmanager
def chromium_context(playwright: Any, profile_dir: Path, **options: Any) -> Iterator[tuple[Any, list[str]]]:
    """Start headless Chromium with a fresh profile and yield ``(context, leaving)``.

    Args:
        playwright: the object ``playwright.sync_api.sync_playwright()`` yields.
        profile_dir: an empty folder (it must not exist yet, or be empty): the user-data-dir of this run.
        **options: more keyword arguments for ``launch_persistent_context`` (e.g. ``viewport``).

    Yields:
        The browser context (open pages with ``context.new_page()``) and the list of URLs of requests that
        tried to leave 127.0.0.1; each such request was aborted. The browser is closed after the block.
    """
    profile_dir = Path(profile_dir)
    if profile_dir.exists() and any(profile_dir.iterdir()):
        raise FileExistsError(f"{profile_dir} is not empty; fix: pass a fresh folder as the profile")
    leaving: list[str] = []

    def guard(route: Any) -> None:
        url = route.request.url
        if is_loopback(url):
            route.continue_()
        else:
            leaving.append(url)
            route.abort()

    context = playwright.chromium.launch_persistent_context(
        str(profile_dir), executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True, **options)
    try:
        context.route("**/*", guard)
        yield context, leaving
    finally:
        context.close()


__all__ = ["CHROMIUM", "CHROMIUM_ARGS", "chromium_context", "chromium_missing_reason", "is_loopback"]
