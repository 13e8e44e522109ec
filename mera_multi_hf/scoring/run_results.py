"""The score stage of `evaluate` and `score`: every loaded task's answers scored (the
judge made here, once), the totals, and the run's record, returned as one typed
:class:`~mera_multi_hf.scoring.records.Results`; nothing is written here."""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from mera_multi_hf.scoring.options import ScoringOptions
from mera_multi_hf.scoring.records import Results, RunRecord, TaskResult
from mera_multi_hf.scoring.score import score_task, summarize

if TYPE_CHECKING:  # the load stage's record: scoring reads its task, examples, privacy
    from mera_multi_hf.data.loaded import LoadedTask

# What every local file that carries a private split's per-example results says of itself
# (a banner in HTML, the `gold_private` field in JSON); no upload file carries it.
LOCAL_ONLY = "local only: holds private answers"
# results.html's media folder (a listed folder name ends in "/": every file in it); it
# follows the page: closed (0700, its files 0600) where the page is
PAGE_MEDIA = "results_media/"


def make_judge(options: ScoringOptions):
    """The judge the options name, ready; None without one."""
    if not (options.judge or options.judge_url):
        return None
    from mera_multi_hf.judge.choose import get_judge

    extra = {"api_key": options.judge_api_key} if options.judge_api_key else {}
    return get_judge(
        options.judge, options.judge_url, judge_tokenizer=options.judge_tokenizer, **extra
    )


def score_run(
    loaded: list[LoadedTask],
    answers: Mapping[str, Mapping[int, str]],
    options: ScoringOptions,
    *,
    fields: dict,
    started: float,
    models: Mapping[str, str | None] | None = None,
    sample_files: bool = False,
    coverage: dict | None = None,
) -> Results:
    """Score each task's ``answers`` (task key -> {example id: output}); ``fields``: the
    command's own fields of the run record (mode, model, ...), in their order;
    ``models``: the model that answered each task; ``sample_files``: the run writes each
    task's sample file (they are named in the record of private files); ``coverage``:
    what the reports cover against the ones they replace."""
    judge = make_judge(options)
    models = models or {}
    results = [
        score_task(
            d.task,
            d.examples,
            answers[d.key],
            em_mode=options.em_mode,
            judge=judge,
            split=d.split,
            model=models.get(d.key) or fields.get("model"),
            private=d.private,
        )
        for d in loaded
    ]
    run = run_record(loaded, results, judge, fields, started, sample_files)
    run.details["coverage_change"] = coverage
    return Results(run, summarize(results), {r.task: r for r in results})


def answering_model(results: list[TaskResult], configured: str | None) -> str | None:
    """The run's model: the one that answered when one did (an audio task alone is
    answered by the audio model), else the configured one (the tasks name theirs)."""
    answered = list(dict.fromkeys(r.model for r in results if r.model))
    return answered[0] if len(answered) == 1 else configured


def run_record(
    loaded: list[LoadedTask],
    results: list[TaskResult],
    judge,
    fields: dict,
    started: float,
    sample_files: bool,
) -> RunRecord:
    """What makes a run reproducible, recorded in results.json: the fields every command
    records, then the command's own (``fields``)."""
    from mera_multi_hf.core.provenance import package_versions
    from mera_multi_hf.scoring.uncertainty import settings as bootstrap_settings

    details = {
        "n_examples": {d.key: len(d.examples) for d in loaded},
        "dataset_source": {d.key: d.source for d in loaded},
        "official_test_split": {d.key: d.official for d in loaded},
        "gold_private": gold_private(results, sample_files),
        "dataset_fingerprint": {d.key: d.fingerprint for d in loaded},
        "metric_modes": {r.task: r.metric_modes for r in results},
        "judge": judge.describe() if judge is not None else None,
        "bootstrap": bootstrap_settings(),
        "versions": package_versions(),
        "preflight": None,
    }
    own = dict(fields)
    mode, model = own.pop("mode", None), own.pop("model", None)
    details.update(own)
    details["started_at"] = datetime.fromtimestamp(started, timezone.utc).isoformat(
        timespec="seconds"
    )
    details["duration_s"] = round(time.time() - started, 2)
    answered = answering_model(results, model)
    if answered != model and "revision" in details:  # the configured model's, not this one's
        details["revision"] = None  # (backend_options and the manifest keep both models')
    split = loaded[0].split if loaded else "test"
    return RunRecord(uuid.uuid4().hex[:12], mode, answered, [d.key for d in loaded], split, details)


def gold_derived(result: TaskResult) -> bool:
    """Whether a task's result holds per-example scores (verdicts right/wrong) derived
    from a private split's gold answers."""
    return result.scorable and result.private


def gold_private(results: list[TaskResult], sample_files: bool) -> dict | None:
    """Which local files hold a private split's gold answers or per-example scores and
    verdicts derived from them (None: none does)."""
    hidden = [r for r in results if r.private]
    names = [f"samples_{r.task}_{r.split}.jsonl" for r in hidden] if sample_files else []
    scored = any(gold_derived(r) for r in hidden)  # per-example verdicts on the page too
    if not names and not scored:
        return None
    return {
        "files": names + ["results.json"] + (["results.html", PAGE_MEDIA] if scored else []),
        "local_only": LOCAL_ONLY,
        "note": "these files keep a private split's gold answers or per-example scores "
        "derived from them (verdicts right/wrong), for local scoring only: never upload "
        "them (submission.zip and its logs_public.zip leave them out)",
    }
