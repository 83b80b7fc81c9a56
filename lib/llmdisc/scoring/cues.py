"""Reasoning cues: the versioned theme codebook, the cue strings of trial records, and a rule-based coder.

A *cue string* is one unit the discriminator (or a person) wrote about why a table looks REAL or SYNTHETIC:
the ``reasoning`` text, one item of ``red_flags`` or ``supporting_evidence``, or a human label's ``notes``.
Themes (``cue_codebook.yaml``) are multi-label and polarity-free (the field says whether a cue speaks for
SYNTHETIC or REAL). The coder is transparent on purpose (regular expressions beside each theme's
definition and examples); :func:`coder_agreement` measures it against the hand-coded
``cue_reference/cue_reference_v1.csv``.
"""

from __future__ import annotations

import ast
import json
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np
import pandas as pd
import yaml

from llmdisc.errors import DataError

CUE_FIELDS = ("reasoning", "red_flags", "supporting_evidence")
"""Trial record fields holding cues; human labels add ``notes``."""
LIST_FIELDS = ("red_flags", "supporting_evidence")
INPUT_ISSUES = ("ok", "missing", "empty", "non_string", "list_as_string", "string_for_list", "non_english")
"""Kinds of input a cue string can come from: ``ok``; ``missing`` (None/NaN field: one placeholder row, text
``""``); ``empty`` (blank string or empty list item); ``non_string`` (a number or object, kept as its ``str``);
``list_as_string`` (a list field stored as the text of a list, e.g. the paper's CSV summaries: parsed back);
``string_for_list`` (a list field holding one plain string: kept as one item); ``non_english`` (a note that
reads as another language: coded like the rest, which usually gives ``generic``)."""
CODEBOOK_FILE = "cue_codebook.yaml"
TRIAL_KEY_COLUMNS = ("source", "run_id", "trial_id", "line_no")


@dataclass(frozen=True)
class Theme:
    """One theme of the codebook: any of its ``patterns`` assigns it, after the matches of its
    ``exclude_patterns`` are blanked; the tests check its include and exclude examples."""

    id: str
    label: str
    definition: str
    include_examples: tuple[str, ...]
    exclude_examples: tuple[str, ...]
    patterns: tuple[re.Pattern, ...]
    exclude_patterns: tuple[re.Pattern, ...]


@dataclass(frozen=True)
class Codebook:
    """The versioned codebook: ``version`` (an int, stored with every coded table) and the themes in order."""

    version: int
    themes: tuple[Theme, ...]
    generic_id: str

    @property
    def theme_ids(self) -> list[str]:
        """Ids of every theme, ``generic`` last."""
        return [t.id for t in self.themes]


def _compile(patterns: Iterable[str], where: str) -> tuple[re.Pattern, ...]:
    out = []
    for pattern in patterns:
        try:
            out.append(re.compile(pattern, re.IGNORECASE))
        except re.error as exc:
            raise DataError(f"codebook pattern {pattern!r} of {where} is not a valid regular expression "
                            f"({exc}); fix: correct it in {CODEBOOK_FILE}") from exc
    return tuple(out)


def load_codebook(path: Path | str | None = None) -> Codebook:
    """Read the codebook (default: the packaged ``llmdisc/scoring/cue_codebook.yaml``); DataError when it
    lacks ``version``/``themes``, a theme lacks a field, or a pattern does not compile."""
    source = resources.files("llmdisc.scoring").joinpath(CODEBOOK_FILE) if path is None else Path(path)
    return _parse_codebook(source.read_text(encoding="utf-8"))


@lru_cache(maxsize=4)
def _parse_codebook(text: str) -> Codebook:
    raw = yaml.safe_load(text)
    if not isinstance(raw, dict) or "version" not in raw or "themes" not in raw:
        raise DataError(f"{CODEBOOK_FILE} must be a mapping with 'version' and 'themes'; fix: restore the file")
    themes, generic = [], raw.get("generic", "generic")
    for entry in raw["themes"]:
        if missing := [k for k in ("id", "label", "definition", "include", "exclude") if k not in entry]:
            raise DataError(f"codebook theme {entry.get('id', '?')!r} lacks {missing}; fix: add them to "
                            f"{CODEBOOK_FILE}")
        themes.append(Theme(
            id=entry["id"], label=entry["label"], definition=" ".join(str(entry["definition"]).split()),
            include_examples=tuple(entry["include"]), exclude_examples=tuple(entry["exclude"]),
            patterns=_compile(entry.get("patterns", []), entry["id"]),
            exclude_patterns=_compile(entry.get("exclude_patterns", []), entry["id"])))
    ids = [t.id for t in themes]
    if generic not in ids or len(set(ids)) != len(ids):
        raise DataError(f"codebook themes {ids} must be unique and include the generic theme {generic!r}; "
                        f"fix: correct {CODEBOOK_FILE}")
    return Codebook(version=int(raw["version"]), themes=tuple(themes), generic_id=generic)


# --------------------------------------------------------------------------- coding
def _normalise_text(text: str) -> str:
    """Lower-case and unify quotes, backticks, markdown emphasis and underscores so patterns stay simple."""
    text = text.replace("`", "'").replace("\u2019", "'").replace("\u2018", "'").replace("**", "")
    text = re.sub(r"(?<=[a-z])_(?=[a-z])", " ", text.lower())
    return " ".join(text.split())


def code_text(text: Any, codebook: Codebook | None = None) -> list[str]:
    """Themes of one cue string (non-strings as their ``str``, None/NaN as ""), in codebook order;
    ``[generic]`` when no other theme applies."""
    codebook = codebook or load_codebook()
    if text is None or (isinstance(text, float) and math.isnan(text)):
        text = ""
    norm = _normalise_text(str(text))
    found = []
    for theme in codebook.themes:
        if theme.id == codebook.generic_id:
            continue
        probe = norm
        for excl in theme.exclude_patterns:
            probe = excl.sub(" ", probe)
        if any(p.search(probe) for p in theme.patterns):
            found.append(theme.id)
    return found or [codebook.generic_id]


def code_cues(cues: pd.DataFrame, codebook: Codebook | None = None, *, text_column: str = "text") -> pd.DataFrame:
    """``cues`` plus a boolean ``theme_<id>`` per theme, ``themes`` (``;``-joined), ``codebook_version``."""
    codebook = codebook or load_codebook()
    if text_column not in cues.columns:
        raise DataError(f"cue table has no {text_column!r} column (columns: {list(cues.columns)[:8]}); fix: pass "
                        "the output of cue_strings() or note_cues()")
    coded = [code_text(t, codebook) for t in cues[text_column]]
    return cues.assign(**{f"theme_{theme}": [theme in c for c in coded] for theme in codebook.theme_ids},
                       themes=[";".join(c) for c in coded], codebook_version=codebook.version)


# --------------------------------------------------------------------------- cue strings from records
def _is_missing(value: Any) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def _one_string(value: Any, ok: str) -> tuple[str, str]:
    """One cue value as ``(text, input issue)``; ``ok`` is the issue of a non-blank string."""
    if _is_missing(value):
        return "", "missing"
    if not isinstance(value, str):
        return str(value), "non_string"
    return value, ok if value.strip() else "empty"


def _parse_list_string(text: str) -> list[Any] | None:
    """The list a string spells (``"['a', 'b']"`` or JSON), or None when it is not the text of a list."""
    stripped = text.strip()
    if not (stripped.startswith("[") and stripped.endswith("]")):
        return None
    for parse in (json.loads, ast.literal_eval):
        try:
            value = parse(stripped)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if isinstance(value, (list, tuple)):
            return list(value)
    return None


def split_field(value: Any, *, is_list_field: bool) -> list[tuple[str, str]]:
    """The cue strings of one field value, each with its input issue (see :data:`INPUT_ISSUES`).

    A missing field gives one ``("", "missing")`` row and an empty list one ``("", "empty")`` row, so every
    trial keeps a row per field and nothing disappears from the counts.
    """
    if _is_missing(value):
        return [("", "missing")]
    if isinstance(value, np.ndarray):
        value = value.tolist()
    issue_for_all = None
    if isinstance(value, str):
        parsed = _parse_list_string(value) if is_list_field else None
        if parsed is not None:
            value, issue_for_all = parsed, "list_as_string"
        elif is_list_field:
            value, issue_for_all = [value], "string_for_list"
        else:
            return [(value, "ok" if value.strip() else "empty")]
    if isinstance(value, (list, tuple)):
        if not is_list_field:  # reasoning stored as a list: one string, flagged
            joined = " ".join(str(v) for v in value if not _is_missing(v))
            return [(joined, "non_string" if joined.strip() else "empty")]
        return [_one_string(item, issue_for_all or "ok") for item in value] if value else [("", "empty")]
    return [(str(value), "non_string")]


_TRIAL_CONTEXT = ("provider", "model", "dataset", "dataset_key", "synthetic_method", "condition", "true_label",
                  "predicted_label", "correct", "status", "prompt_variant", "metadata_source", "sampling")


def cue_strings(trials: pd.DataFrame, *, source: str | None = None, valid_only: bool = True) -> pd.DataFrame:
    """One row per cue string of every trial record: its fields' texts with the trial's cell and verdict.

    ``source`` defaults to the trials' ``source`` column, else ``"llmdisc"``; ``valid_only`` keeps valid
    trials (an error record's ``reasoning`` is the error text, not a cue). Columns: the trial key and context,
    field, item (position in the list), text, input_issue.
    """
    if trials.empty:
        return pd.DataFrame(columns=[*TRIAL_KEY_COLUMNS, *_TRIAL_CONTEXT, "field", "item", "text", "input_issue"])
    if absent := [f for f in CUE_FIELDS if f not in trials.columns]:
        raise DataError(f"trial records lack the cue field(s) {absent}; fix: pass records from load_trials() or "
                        "import_paper_trials()")
    frame = trials
    if valid_only and "status" in frame.columns:
        frame = frame[frame["status"] == "valid"]
    rows: list[dict[str, Any]] = []
    for rec in frame.to_dict("records"):
        base = {"source": source or rec.get("source") or "llmdisc", "run_id": rec.get("run_id"),
                "trial_id": rec.get("trial_id"), "line_no": rec.get("line_no")}
        base.update({k: rec.get(k) for k in _TRIAL_CONTEXT})
        for field in CUE_FIELDS:
            for item, (text, issue) in enumerate(split_field(rec.get(field), is_list_field=field in LIST_FIELDS)):
                rows.append({**base, "field": field, "item": item, "text": text, "input_issue": issue})
    return pd.DataFrame(rows)


_ENGLISH_WORDS = frozenset("""
a an and the of in on to is are was were be not no only too with for from as at by or but this that these those
it its very all some many most few more less than there their they looks look like seems make makes making
sense same different wrong right random real fake synthetic values value rows row column columns data
numbers number correlation correlations age sex male female husband wife education occupation income
marital status relationship race hours country weird strange odd logical plausible implausible what why
""".split())


def looks_non_english(text: str) -> bool:
    """Heuristic language check of a short note: True when it has letters but no common English word.

    Non-ASCII letters with no English word, or three or more words none of which is in a small English
    vocabulary (function words and the tables' column words), read as another language.
    """
    if not (words := re.findall(r"[^\W\d_]+", text.lower())):
        return False
    if any(w in _ENGLISH_WORDS for w in words):
        return False
    return any(ord(ch) > 127 for w in words for ch in w) or len(words) >= 3


def note_cues(labels: pd.DataFrame, *, note_column: str = "notes") -> pd.DataFrame:
    """One row per human label with its note as a cue string (``field="notes"``), bad input counted.

    ``labels``: ``llmdisc.human.read_labels`` output (or its columns). Returns columns source and provider
    (``human``), model (the annotator), dataset, synthetic_method, condition, true_label, predicted_label,
    correct, field, item, text, input_issue.
    """
    if note_column not in labels.columns:
        raise DataError(f"label table has no {note_column!r} column; fix: pass read_labels() output or name the "
                        "note column")
    rows = []
    for rec in labels.to_dict("records"):
        text, issue = _one_string(rec.get(note_column), "ok")
        issue = "non_english" if issue == "ok" and looks_non_english(text) else issue
        annotator = rec.get("annotator") or rec.get("annotator_id")
        rows.append({"source": "human", "run_id": rec.get("session_id"), "trial_id": rec.get("pair_id"),
                     "line_no": rec.get("source_line"), "provider": "human", "model": annotator,
                     "dataset": rec.get("dataset"), "dataset_key": rec.get("dataset"),
                     "synthetic_method": rec.get("method"), "condition": rec.get("condition"),
                     "true_label": rec.get("true_label"), "predicted_label": rec.get("predicted_label"),
                     "correct": rec.get("correct"), "status": "valid", "field": "notes", "item": 0, "text": text,
                     "input_issue": issue})
    return pd.DataFrame(rows)


def has_text(cues: pd.DataFrame) -> pd.Series:
    """Rows whose text is a real cue (not a placeholder of a missing or empty field)."""
    return ~cues["input_issue"].isin(["missing", "empty"]) & cues["text"].astype(str).str.strip().ne("")


def input_quality_table(cues: pd.DataFrame, trials: Mapping[str, pd.DataFrame] | None = None) -> pd.DataFrame:
    """Counts of every input issue per source and field, plus the records left out of the cue analysis.

    ``trials`` (optional, ``{source: trial records}``): their non-valid records are counted as
    ``not_valid_record`` (their ``reasoning`` is an error text, not a cue). Columns: source, field,
    input_issue, n.
    """
    counts = (cues.groupby(["source", "field", "input_issue"], dropna=False).size()
              .rename("n").reset_index())
    extra = [{"source": source, "field": "record", "input_issue": "not_valid_record",
              "n": int((frame["status"] != "valid").sum())}
             for source, frame in (trials or {}).items() if "status" in frame.columns]
    return pd.concat([counts, pd.DataFrame(extra)], ignore_index=True) if extra else counts


def themes_as_sets(codes: Iterable[str]) -> list[set[str]]:
    """Parse ``;``-joined theme ids into sets."""
    return [set(str(c).split(";")) - {""} for c in codes]


def coder_agreement(reference: pd.DataFrame, codebook: Codebook | None = None, *,
                    code_column: str = "reference_themes") -> pd.DataFrame:
    """Per theme: precision, recall, F1 and Cohen's kappa of the automatic coder against the hand codes.

    ``reference``: the hand-coded set (text and ``code_column``, ``;``-joined theme ids); its
    ``codebook_version``, if present, must equal the codebook's.

    Returns one row per theme plus ``all`` (micro-averaged precision/recall, mean kappa, exact-match share):
    theme, n, support (hand-coded positives), predicted (coder positives), true_pos, precision, recall, f1,
    kappa (1 = perfect agreement, 0 = chance), and ``quality`` (``good`` for kappa >= 0.8, ``moderate`` for >=
    0.6, else ``poor``).
    """
    from sklearn.metrics import cohen_kappa_score, precision_recall_fscore_support

    codebook = codebook or load_codebook()
    if "codebook_version" in reference.columns:
        versions = set(reference["codebook_version"].astype(int))
        if versions != {codebook.version}:
            raise DataError(f"reference set coded with codebook v{sorted(versions)}, coder has v{codebook.version}; "
                            "fix: re-code the reference set with this codebook version")
    truth = themes_as_sets(reference[code_column])
    if (unknown := set().union(*truth) - set(codebook.theme_ids) if truth else set()):
        raise DataError(f"reference codes {sorted(unknown)} are not themes of codebook v{codebook.version}; "
                        f"fix: use {codebook.theme_ids}")
    predicted = [set(code_text(t, codebook)) for t in reference["text"]]
    rows = []
    tp_all = fp_all = fn_all = 0
    for theme in codebook.theme_ids:
        y = np.array([theme in s for s in truth])
        p = np.array([theme in s for s in predicted])
        tp, fp, fn = int((y & p).sum()), int((~y & p).sum()), int((y & ~p).sum())
        tp_all, fp_all, fn_all = tp_all + tp, fp_all + fp, fn_all + fn
        prec, rec, f1, _ = precision_recall_fscore_support(y, p, average="binary", zero_division=np.nan)
        kappa = cohen_kappa_score(y, p) if (y.any() or p.any()) and not (y.all() and p.all()) else np.nan
        rows.append({"theme": theme, "n": len(y), "support": int(y.sum()), "predicted": int(p.sum()),
                     "true_pos": tp, "precision": prec, "recall": rec, "f1": f1, "kappa": kappa})
    out = pd.DataFrame(rows)
    micro_p = tp_all / (tp_all + fp_all) if tp_all + fp_all else np.nan
    micro_r = tp_all / (tp_all + fn_all) if tp_all + fn_all else np.nan
    exact = float(np.mean([a == b for a, b in zip(truth, predicted)])) if truth else np.nan
    out.loc[len(out)] = {"theme": "all", "n": len(truth), "support": tp_all + fn_all, "predicted": tp_all + fp_all,
                         "true_pos": tp_all, "precision": micro_p, "recall": micro_r,
                         "f1": 2 * micro_p * micro_r / (micro_p + micro_r) if micro_p + micro_r else np.nan,
                         "kappa": float(out["kappa"].mean()), "exact_match": exact}
    out["quality"] = np.select([out["kappa"] >= 0.8, out["kappa"] >= 0.6], ["good", "moderate"], "poor")
    out.loc[out["kappa"].isna(), "quality"] = "undefined"
    out["codebook_version"] = codebook.version
    return out
