"""The LLM's verdict as an instrument: the study's own discriminator, one :class:`LLMInstrument` per
condition.

An LLM is shown 20-row samples and says REAL or SYNTHETIC (:mod:`llmdisc.audit.llm`); its score is
``p_synthetic`` (the probability of SYNTHETIC over REAL as the answer's first value) or, under ``--scoring
verdict``, the verdict itself. The trials of every condition run once (:class:`LLMTrials`). Not in the default
audit with the embedded model (docs/audit.md, the LLM's verdicts).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Sequence

from llmdisc.audit import llm
from llmdisc.audit.cues import cue_section
from llmdisc.audit.llm import frequent_red_flags
from llmdisc.audit.options import N_ROWS
from llmdisc.audit.instruments.base import (GROUPS, RELEASE, AuditData, Block, Comparison, Instrument,
                                            Paragraph, Progress, Reading, WorkPlan, comparison_table,
                                            findings_list)
from llmdisc.audit.instruments.samples import account_for_shared_rows
from llmdisc.audit.scores import cell_rows

SECONDS_PER_TRIAL = {"local": 8.0, "ollama": 3.0, "openai": 2.0, "gemini": 4.0, "replay": 0.01}
"""Planning estimate of one trial's seconds per provider (the local figure measured on 2 cores, C1)."""


class LLMTrials:
    """The audit's LLM trials, run once for every condition (shared by the per-condition instruments).
    ``provider`` is opened (:func:`llmdisc.audit.options.open_checked_provider`), ``out_dir`` the audit folder
    (``trials/`` and ``cache/`` go there), ``data_digest`` keys the trial file, ``parameters`` go into the
    trial records; the other arguments are the ``llmdisc audit`` options of the same name."""

    def __init__(self, provider: Any, provider_name: str, *, trials_per_label: int, conditions: Sequence[str],
                 scoring: str, metadata_source: str, concurrency: int, cache_mode: str, out_dir: Path,
                 data_digest: str, parameters: dict[str, Any]) -> None:
        self.provider, self.provider_name = provider, provider_name
        self.trials_per_label, self.conditions, self.scoring = trials_per_label, list(conditions), scoring
        self.metadata_source, self.concurrency, self.cache_mode = metadata_source, concurrency, cache_mode
        self.out_dir, self.data_digest, self.parameters = Path(out_dir), data_digest, parameters
        self.result: dict[str, Any] | None = None

    def n_trials(self) -> int:
        """Trials planned: 2 labels × trials × conditions × 3 cells."""
        return 2 * self.trials_per_label * len(self.conditions) * len(GROUPS)

    def run(self, data: AuditData, progress: Progress) -> dict[str, Any]:
        """Run (or resume) every trial; return ``{"trials", "scored", "summary", "content_free", "file"}``."""
        if self.result is not None:
            return self.result
        from llmdisc.discrimination.cache import ResponseCache
        from llmdisc.discrimination.content_free import load_content_free
        from llmdisc.discrimination.records import load_trials

        cache = ResponseCache(self.out_dir / "cache", mode=self.cache_mode)
        specs = llm.audit_trial_queue(self.trials_per_label, self.conditions, run_seed=data.seed, cells=GROUPS,
                                      scoring=self.scoring)
        path = llm.trial_file(self.out_dir / "trials", self.provider, self.provider_name, self.metadata_source,
                              data.seed, self.data_digest, scoring=self.scoring, cells=GROUPS)
        if hasattr(self.provider, "token_cache_dir"):  # the local provider's prompt tokens stay in the audit folder
            self.provider.token_cache_dir = self.out_dir / "cache" / "likelihood-tokens"
        tables = {"real": data.text["real"], **{g: data.text[g] for g in GROUPS}}
        summary, content_free = llm.run_audit_trials(
            specs, provider=self.provider, tables=tables, metadata_source=self.metadata_source, out_path=path,
            cache=cache, concurrency=self.concurrency, progress=progress.enabled,
            parameters={"audit": self.parameters, "data_digest": self.data_digest}, scoring=self.scoring,
            conditions=self.conditions, n_rows=N_ROWS)
        trials = load_trials(path)
        trials = trials[trials["trial_id"].isin({s.trial_id for s in specs})]
        free = load_content_free(content_free["file"]) if content_free["file"] is not None else None
        if free is not None:
            free = free[free["log_odds"].notna()]
        scored = cell_rows(trials, list(GROUPS), self.conditions, content_free=free, seed=data.seed)
        self.result = {"trials": trials, "scored": scored, "summary": summary, "file": path, "tables": tables,
                       "content_free": {**content_free, "file": None if content_free["file"] is None else
                                        Path(content_free["file"]).relative_to(self.out_dir).as_posix()}}
        return self.result


class LLMInstrument(Instrument):
    """The LLM's verdict (as a probability, or as words) in one condition (module docstring)."""

    name = "llm"
    unit = "20-row samples"
    description = "an LLM is shown 20-row samples and says REAL or SYNTHETIC; AUC of its p_synthetic (or verdict)"
    directions = ("called synthetic less often", "called synthetic more often")

    def __init__(self, trials: LLMTrials, condition: str) -> None:
        self.trials, self.condition = trials, condition
        self.name = f"llm-{condition}"
        self.title = f"LLM verdict, {condition} ({'table only' if condition == 'C1' else 'table + metadata'})"

    def plan(self, data: AuditData) -> WorkPlan:
        per = SECONDS_PER_TRIAL.get(self.trials.provider_name, 5.0) / max(1, self.trials.concurrency)
        units = self.trials.n_trials() if self.condition == self.trials.conditions[0] else 0
        return WorkPlan(units=units, what="trials (all conditions)", seconds_per_unit=per,
                        description=self.description + f"; {self.trials.trials_per_label} per label per cell")

    def run(self, data: AuditData, progress: Progress) -> Reading:
        start = time.perf_counter()
        reading = self.reading()
        if progress.out_of_time():
            reading.status, reading.reason = "stopped", "--max-minutes reached before the trials"
            return reading
        result = self.trials.run(data, progress)
        reading_kind = "verdict" if self.trials.scoring == "verdict" else "probability"
        rows = {}
        for group in GROUPS:
            rows[group] = row = next(r for r in result["scored"][group] if r["condition"] == self.condition)
            if reading_kind == "probability":
                prob = row.get("probability") or {}
                auc = (prob.get("auc"), prob.get("auc_ci_low"), prob.get("auc_ci_high"), prob.get("auc_p_value"))
                n = (int(prob.get("n_real") or 0), int(prob.get("n_syn") or 0))
            else:
                va = row.get("verdict_auc") or {}
                auc = (va.get("auc"), va.get("ci_low"), va.get("ci_high"), va.get("p_value"))
                n = (int(row.get("n_valid_real") or 0), int(row.get("n_valid_syn") or 0))
            extra = {k: row.get(k) for k in ("p_real", "p_syn", "drs", "drs_ci_low", "drs_ci_high")}
            if row.get("probability"):
                extra.update({k: row["probability"].get(k) for k in
                              ("batch_drs", "batch_drs_ci_low", "batch_drs_ci_high", "raw_drs", "auc_direction")})
            reading.comparisons[group] = Comparison(group, *auc, *n, extra=extra)
        trials = result["trials"]
        release = trials[(trials["synthetic_method"] == RELEASE) & (trials["condition"] == self.condition)]
        reading.details = {
            "reading": reading_kind, "condition": self.condition, "trials_file": Path(result["file"]).name,
            "n_trials": int(len(trials[trials["condition"] == self.condition])),
            "content_free": result["content_free"], "rows": rows,
            "run": {"n_planned": result["summary"].n_planned, "n_resumed": result["summary"].n_skipped,
                    "n_run": result["summary"].n_run, "n_error": result["summary"].n_error},
            "red_flags": frequent_red_flags(release),
            "cues": cue_section(trials[trials["condition"] == self.condition], result["tables"], cell=RELEASE),
            "notes": [f"reading: {'p_synthetic (label scores)' if reading_kind == 'probability' else 'the verdict'};"
                      " the paper's DRS = min(p_REAL, p_SYN) of the verdicts is in audit.json (0 for a model that "
                      "always says one label, 0.5 for a coin)"],
        }
        account_for_shared_rows(reading, data, N_ROWS, self.trials.trials_per_label)
        reading.seconds = time.perf_counter() - start
        return reading

    def section(self, reading: Reading) -> list[Block]:
        parts: list[Block | None] = [comparison_table(reading), findings_list(reading)]
        flags = reading.details.get("red_flags") or []
        if flags:
            parts.append(Paragraph("Red flags the LLM cited most often on the release: "
                                   + "; ".join(f"{f['red_flag']} ({f['count']})" for f in flags[:8])))
        cues = reading.details.get("cues") or {}
        if cues.get("n_trials"):
            counts = cues["counts"]
            parts.append(Paragraph(f"Claims about the shown rows in {cues['n_trials']} verdicts: {counts['true']} "
                                   f"verified true, {counts['false']} false, {counts['not_checkable']} not "
                                   "checkable."))
        return [part for part in parts if part is not None]
