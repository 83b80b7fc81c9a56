"""Personal information in a release (issue 25, item 5; issue 40, item 7): a person-name column and an e-mail
column are left out of every instrument and reported on their own, with the share of the release's values copied
from the real table, also when the SDV metadata calls the name column categorical and the names are lower case.

The tables are made here, deterministically: names from small first- and last-name lists, e-mail addresses,
and ordinary columns. The release copies real people's names (every one a real name) and makes up its e-mail
addresses. The LLM answers over real HTTP on 127.0.0.1 (the OpenAI wire server) and its prompts are inspected:
no name and no address may reach it.
"""

from __future__ import annotations

import html
import itertools
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from llmdisc.cli.main import main
from support.wire_servers import OpenAIWireServer

FIRST = ["Alice", "Bruno", "Chiara", "Dmitri", "Elena", "Farid", "Greta", "Hiroshi", "Ines", "Jonas", "Katja",
         "Liam", "Maria", "Nikolai", "Olga", "Pedro", "Quentin", "Rosa", "Sven", "Tamara"]
LAST = ["Andersen", "Bianchi", "Costa", "Dubois", "Eriksson", "Fischer", "Garcia", "Horvat", "Ivanova", "Jensen",
        "Kowalski", "Lopez", "Mueller", "Novak", "O'Brien", "Petrov", "Quinn", "Rossi", "Schmidt", "Tanaka"]
CITIES = ["Springfield", "Riverton", "Lakeside", "Fairview", "Greenville", "Milton"]


def _table(n: int, seed: int, *, names: list[str] | None = None, mail_domain: str = "example.org") -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    people = [f"{f} {last}" for f, last in itertools.product(FIRST, LAST)]  # 400 distinct people
    chosen = names if names is not None else [people[i] for i in rng.permutation(len(people))[:n]]
    return pd.DataFrame({
        "name": chosen,
        "email": [f"{p.lower().replace(' ', '.').replace(chr(39), '')}{i}@{mail_domain}"
                  for i, p in enumerate(chosen)],
        "age": rng.integers(18, 90, n),
        "city": rng.choice(CITIES, n),
        "income": np.round(rng.lognormal(10, 0.5, n), 2),
        "has_car": rng.choice(["yes", "no"], n),
    })


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("personal")
    real = _table(300, seed=1)
    # the release: ordinary columns drawn afresh, every name copied from the real rows, addresses made up
    copied = list(np.random.default_rng(2).choice(real["name"].to_numpy(), 300))
    release = _table(300, seed=2, names=copied, mail_domain="synthetic.example")
    paths = {"real": root / "real.csv", "release": root / "release.csv", "metadata": root / "metadata.json"}
    real.to_csv(paths["real"], index=False)
    release.to_csv(paths["release"], index=False)
    sdtypes = {"name": "name", "email": "email", "age": "numerical", "city": "categorical",
               "income": "numerical", "has_car": "categorical"}
    paths["metadata"].write_text(json.dumps({"columns": {c: {"sdtype": t} for c, t in sdtypes.items()},
                                             "METADATA_SPEC_VERSION": "SINGLE_TABLE_V1"}), encoding="utf-8")
    # issue 40, item 7: a public table's SDV metadata calls its name column categorical, and the names are
    # written in lower case; what the column is decides, not the sdtype or the capitals
    for role, table in (("real", real), ("release", release)):
        paths[f"{role}_lower"] = root / f"{role}_lower.csv"
        table.assign(name=table["name"].str.lower()).to_csv(paths[f"{role}_lower"], index=False)
    paths["metadata_categorical"] = root / "metadata_categorical.json"
    paths["metadata_categorical"].write_text(json.dumps({"columns": {
        c: {"sdtype": "categorical" if c == "name" else t} for c, t in sdtypes.items()},
        "METADATA_SPEC_VERSION": "SINGLE_TABLE_V1"}), encoding="utf-8")
    return paths


class PromptRecorder:
    def __init__(self) -> None:
        self.prompts: list[str] = []

    def __call__(self, chat: object) -> str:
        self.prompts.append(chat.user)  # type: ignore[attr-defined]
        return json.dumps({"verdict": "REAL", "confidence": 50, "reasoning": "plausible", "red_flags": [],
                           "supporting_evidence": []})


@pytest.mark.parametrize("variant", ["detected", "metadata", "metadata-categorical"])
def test_personal_columns_are_left_out_of_every_instrument_and_their_copies_reported(
        files: dict[str, Path], tmp_path: Path, variant: str) -> None:
    recorder, out = PromptRecorder(), tmp_path / "audit"
    lower = variant == "metadata-categorical"
    real_path, release_path = (files["real_lower"], files["release_lower"]) if lower else (files["real"],
                                                                                          files["release"])
    extra = {"detected": (), "metadata": ("--metadata", str(files["metadata"])),
             "metadata-categorical": ("--metadata", str(files["metadata_categorical"]))}[variant]
    with OpenAIWireServer(responder=recorder) as server:
        status = main(["audit", "--real", str(real_path), "--synthetic", str(release_path), "--out", str(out),
                       "--instruments", "c2st", "distances", "llm", "--provider", "openai", "--base-url",
                       server.base_url, "--scoring", "verdict", "--trials-per-label", "1", "--conditions", "C1",
                       "--no-progress", *extra])
    # the ordinary columns are drawn independently, so shuffling them changes nothing: no instrument can pass its
    # positive control and the audit is inconclusive. The personal columns are reported all the same.
    assert status == 3
    audit = json.loads((out / "audit.json").read_text(encoding="utf-8"))
    why = {"detected": {"name": "detected: person names", "email": "detected: e-mail addresses"},
           "metadata": {"name": "sdtype name", "email": "sdtype email"},
           "metadata-categorical": {"name": "detected: person names", "email": "sdtype email"}}[variant]
    # left out of every instrument ...
    assert audit["schema"]["used"] == ["age", "city", "income", "has_car"]
    said = {"name": "detected: person names; --metadata says categorical"} if lower else {}
    assert audit["schema"]["excluded"] == [{"name": c, "reason": f"personal information ({said.get(c, r)})"}
                                           for c, r in why.items()]
    for reading in audit["instruments"]:
        assert reading["status"] == "measured", reading
        assert not re.search(r"'(name|email)'", json.dumps(reading["details"])), reading["instrument"]
    real = pd.read_csv(real_path)
    assert len(recorder.prompts) == 4  # 1 REAL sample shared by the 3 cells + 1 per cell
    for prompt in recorder.prompts:  # ... the LLM's included: no name, no address, no such column
        assert "@" not in prompt and not any(person in prompt for person in real["name"])
        header = next(line for line in prompt.splitlines() if line.strip().startswith("|"))
        assert [c.strip() for c in header.strip("|").split("|")] == ["age", "city", "income", "has_car"]
    # ... and reported on their own: every release name is a real person's, no address is
    personal = {p["column"]: p for p in audit["personal"]}
    assert {c: p["reason"] for c, p in personal.items()} == why
    name, email = personal["name"], personal["email"]
    assert (name["copied_share"], name["copied_share_folded"], name["n_release"]) == (1.0, 1.0, 300)
    assert name["distinct_copied"] == name["distinct_release"] == len(set(pd.read_csv(release_path)["name"]))
    assert name["distinct_copied_share"] == name["distinct_copied_share_folded"] == 1.0
    assert (email["copied_share"], email["distinct_copied"]) == (0.0, 0)
    page = (out / "report.html").read_text(encoding="utf-8")
    section = html.unescape(page.split("<h2>Personal information</h2>")[1].split("<h2>")[0])
    assert f"100 % of the release's values of 'name' ({why['name']}) are values of the real table" in section
    assert "the synthesizer copies them; they leak whatever the discriminators say" in section
    assert re.search(r"<td>name</td><td>[^<]+</td><td class=\"num\">1\.00</td>", section)
    assert f"0 % of the release's values of 'email' ({why['email']})" in section
    # the names themselves are never printed
    assert not any(person in page for person in real["name"]) and "@example.org" not in page
