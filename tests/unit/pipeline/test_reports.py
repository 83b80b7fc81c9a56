"""find_leaks and scrub_text: keys and machine paths found and replaced, words that contain "sk-" left alone."""

from __future__ import annotations

from llmdisc.paths import project_root
from llmdisc.pipeline.reports import find_leaks, scrub_text

KEY = "AIza" + "FAKE" * 8 + "12"  # built here so no key-shaped string is tracked


def test_keys_and_paths_are_found_and_scrubbed():
    text = f"key={KEY} openai sk-{'a' * 24} at {project_root()}/data"
    assert len(find_leaks(text)) == 3
    assert scrub_text(text) == "key=<redacted> openai <redacted> at <project>/data"
    assert find_leaks(scrub_text(text)) == []


def test_a_heading_anchor_holding_sk_is_no_key():
    anchor = 'id="ask-a-model-whether-each-20-row-sample-is-real-or-synthetic"'
    assert find_leaks(anchor) == [] and scrub_text(anchor) == anchor
