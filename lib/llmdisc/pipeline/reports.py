"""Publishing safely: executed notebooks and rendered pages scrubbed of secrets and machine paths."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from llmdisc.paths import project_root, reference_dir, shared_dir

# Not inside a word: "ask-a-model-whether-each-20-row-sample" (a heading's anchor) holds "sk-" but is no key.
_KEY_PATTERN = re.compile(r"(?<![A-Za-z0-9])(?:AIza[0-9A-Za-z_-]{30,}|sk-[A-Za-z0-9_-]{20,}|gsk_[A-Za-z0-9]{20,})")
_SECRET_ENV = re.compile(r"(API_KEY|TOKEN|SECRET|PASSWORD)$", re.IGNORECASE)


def _replacements() -> list[tuple[str, str]]:
    """Absolute paths to hide, longest first, with what replaces them."""
    # LLMDISC_REFERENCE may name a folder outside the project and ../shared
    found = ((project_root(), "<project>"), (shared_dir(), "<shared>"), (reference_dir(), "<reference>"))
    pairs = [(str(p), name) for p, name in found if p is not None]
    pairs += [(sys.prefix, "<venv>"), (sys.base_prefix, "<python>")]
    home = os.path.expanduser("~")
    if home not in ("/", ""):
        pairs.append((home, "~"))
    pairs.sort(key=lambda p: len(p[0]), reverse=True)
    return pairs


def _secret_values() -> list[str]:
    return [v for k, v in os.environ.items() if _SECRET_ENV.search(k) and len(v) >= 8]


def scrub_text(text: str) -> str:
    for secret in _secret_values():
        text = text.replace(secret, "<redacted>")
    text = _KEY_PATTERN.sub("<redacted>", text)
    for old, new in _replacements():
        text = text.replace(old, new)
    return text


def scrub_notebook(path: Path | str) -> None:
    """Rewrite an executed notebook in place with :func:`scrub_text` applied to sources, outputs and metadata."""
    import nbformat  # imported here: it pulls in jsonschema, slow to import for callers of scrub_text only

    path = Path(path)
    if not path.exists():
        return
    raw = path.read_text(encoding="utf-8")
    cleaned = scrub_text(raw.replace("\\/", "/"))
    if cleaned != raw:
        nbformat.validate(nbformat.reads(cleaned, as_version=4))
        path.write_text(cleaned, encoding="utf-8")


def find_leaks(text: str) -> list[str]:
    """Return the problems in a published text: API-key-shaped strings, secret values, absolute paths."""
    problems = [f"key-shaped string {m.group(0)[:6]}…" for m in _KEY_PATTERN.finditer(text)]
    problems += ["value of a secret environment variable" for v in _secret_values() if v in text]
    return problems + [f"absolute path {p}" for p, _ in _replacements() if len(p) > 1 and p in text]
