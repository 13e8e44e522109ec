"""The last stage of `evaluate` and `score`, written once: every task's predictions are
scored, and the reports, the results page and the submission are written as one set,
with one record of the run in results.json (the same schema for both commands; each
adds its own fields, such as the generation settings or the predictions files)."""
from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone

from . import json_read
from .options import ScoringOptions
from .tasks import TaskSpec


@dataclass
class TaskPart:
    """One task's inputs: its examples, the predictions by id, where they came from."""
    task: TaskSpec
    examples: list
    predictions: dict
    source: str
    official: bool = False           # the whole official test split from the Hub copy
    dataset: object = None           # the split, for the page's media
    fingerprint: str | None = None
    log: list[dict] | None = None     # evaluate: the sample log's records, example order
    context: int | None = None        # dialogue turns shown with each question


def make_judge(options: ScoringOptions):
    """The judge the options name, ready; None without one."""
    if not (options.judge or options.judge_url):
        return None
    from .judge import get_judge

    extra = {"api_key": options.judge_api_key} if options.judge_api_key else {}
    return get_judge(options.judge, options.judge_url, judge_tokenizer=options.judge_tokenizer,
                     **extra)


def finalize(folder, parts: list[TaskPart], options: ScoringOptions, *, split: str,
             run_info: dict, started: float, notes=()) -> dict:
    """Score ``parts`` and write everything into ``folder`` (a claimed OutputFolder).
    ``run_info``: the command's own fields of the run record (mode, model, ...)."""
    from .reports import report_files, results_doc, write_outputs
    from .results_html import PAGE_NAME, render
    from .scoring import score_task, summarize

    judge = make_judge(options)
    results = [score_task(p.task, p.examples, p.predictions, em_mode=options.em_mode,
                          judge=judge, split=split) for p in parts]
    run = run_record(parts, results, judge, split, run_info, started)
    official = run["official_test_split"]
    notes = list(notes) + result_notes(results, split, official)
    summary = summarize(results)
    files = {f"samples_{p.task.key}_{split}.jsonl": sample_lines(p, r, split)
             for p, r in zip(parts, results) if p.log is not None}
    files.update(report_files(results, summary, run, official))
    files[PAGE_NAME] = render(results, run, page_rows(parts, results, files, split), notes)
    if split == "test" and not options.no_submission:
        logs = {f"samples_{p.task.key}_{split}.jsonl": sample_lines(p, r, split, upload=True)
                for p, r in zip(parts, results) if p.log is not None}
        files["submission.zip"] = submission(parts, logs)
    written = write_outputs(folder, files, results_doc(results, summary, run))
    return {"output_dir": str(folder.path), "run": run, "tasks": results, "summary": summary,
            "files": written, "notes": notes}


def run_record(parts, results, judge, split, run_info: dict, started: float) -> dict:
    """What makes a run reproducible, recorded in results.json: the fields every command
    records, then the command's own (``run_info``)."""
    from .provenance import package_versions
    from .uncertainty import settings as bootstrap_settings

    keys = [p.task.key for p in parts]
    run = {"run_id": uuid.uuid4().hex[:12], "mode": None, "model": None,
           "tasks": keys, "split": split,
           "n_examples": {p.task.key: len(p.examples) for p in parts},
           "dataset_source": {p.task.key: p.source for p in parts},
           "official_test_split": {p.task.key: p.official for p in parts},
           "gold_private": gold_private(parts, results, split),
           "dataset_fingerprint": {p.task.key: p.fingerprint for p in parts},
           "metric_modes": {r["task"]: r.get("metric_modes", {}) for r in results},
           "judge": judge.describe() if judge is not None else None,
           "bootstrap": bootstrap_settings(), "versions": package_versions(), "preflight": None}
    run.update(run_info)
    run["started_at"] = datetime.fromtimestamp(started, timezone.utc).isoformat(
        timespec="seconds")
    run["duration_s"] = round(time.time() - started, 2)
    return run


def gold_private(parts, results, split: str) -> dict | None:
    """Which local files hold a private split's gold answers (None: none does)."""
    from .submission import hides_answers

    hidden = [(p, r) for p, r in zip(parts, results) if hides_answers(p.task, split)]
    names = [f"samples_{p.task.key}_{split}.jsonl" for p, _ in hidden if p.log is not None]
    if not names and not any(r.get("scorable") for _, r in hidden):
        return None
    return {"files": names + ["results.json"], "note": "these files keep a private split's gold "
            "answers and scores derived from them, for local scoring only: never upload them "
            "(submission.zip and its logs_public.zip leave them out)"}


def result_notes(results, split: str, official: dict) -> list[str]:
    notes = []
    if not any(official.values()):
        notes.append("no model-index.yaml: it is written only for tasks run on the whole "
                     "official test split from the Hub")
    for result in results:
        if not result.get("scorable"):
            public = (" although the task is public, this copy's test answers are blanked (as "
                      "on the ruSLUn Hub copy): local scoring needs a copy with answers (a raw "
                      "folder with them, or --split shots);") if result["public"] else ""
            notes.append(f"{result['task']}/{split}: cannot score here: the gold answers "
                         f"are hidden;{public} submit submission.zip to the MERA site for scores")
    return notes


def sample_lines(part: TaskPart, result: dict, split: str, upload: bool = False) -> bytes:
    """samples_<task>_<split>.jsonl, rebuilt from the current references: each logged
    generation with today's target, filtered answer and per-example scores (the judge's
    too, when one scored).

    For a private split the local file marks each line (``gold_private``) and the copy
    made for upload (``upload``: logs_public.zip) carries no target and no metric."""
    import json

    from .metric_fns import extract_answer
    from .scoring import filtered
    from .submission import hides_answers

    task, per_example, lines = part.task, result.get("per_example") or {}, []
    for example, logged in zip(part.examples, part.log):
        record, generation = dict(logged), logged["generation"]
        record.update(target=example.gold, filtered=filtered(task, [generation])[0],
                      extracted=extract_answer(generation, task.choices or None),
                      metrics={m: s[example.id] for m, s in per_example.items()
                               if example.id in s})
        if hides_answers(task, split):
            if upload:
                del record["target"], record["metrics"]
            else:
                record["gold_private"] = True
        lines.append(json.dumps(record, ensure_ascii=False))
    return ("\n".join(lines) + "\n").encode("utf-8") if lines else b""


def page_rows(parts, results, files: dict, split: str) -> list[dict]:
    """results.html's rows: every example, from the sample file or the scored predictions."""
    from .results_html import task_rows

    rows = []
    for part, result in zip(parts, results):
        if part.log is not None:
            name = f"samples_{part.task.key}_{split}.jsonl"
            records = [json_read.loads(line, f"{name}:{n}") for n, line in
                       enumerate(files[name].splitlines(), 1) if line]
        else:
            records = prediction_records(part.task, part.examples, part.predictions, result)
        rows += task_rows(part.task.key, split, records, part.examples, part.dataset,
                          context=part.context)
    return rows


def prediction_records(task, examples, predictions: dict, result: dict) -> list[dict]:
    """Sample-file-like records of scored predictions (what results.html shows)."""
    from .scoring import filtered

    per_example = result.get("per_example") or {}
    replaced = getattr(predictions, "replaced", {})  # lone surrogates made U+FFFD
    return [{"id": e.id, "prompt": e.prompt, "generation": predictions[e.id],
             "filtered": filtered(task, [predictions[e.id]])[0], "target": e.gold,
             "metrics": {m: s[e.id] for m, s in per_example.items() if e.id in s},
             **({"unencodable_replaced": replaced[e.id]} if e.id in replaced else {})}
            for e in examples if e.id in predictions]


def submission(parts, logs: dict) -> bytes:
    """submission.zip: every task's answers (checked against its ids) and, from a run,
    the public copies of its sample logs."""
    from .submission import packed, submission_answers, submission_bytes

    answers, ids = {}, {}
    for p in parts:
        answers[p.task.key], ids[p.task.key] = packed(
            p.task.key, submission_answers(p.task.key, p.predictions), [e.id for e in p.examples])
    return submission_bytes(answers, ids, logs or None)
