"""The last stage of `evaluate` and `score`, written once: every task's predictions are
scored, and the reports, the results page and the submission are written as one set,
with one record of the run in results.json (the same schema for both commands; each
adds its own fields, such as the generation settings or the predictions files)."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone

from mera_multi_hf.core import json_read
from mera_multi_hf.scoring.options import ScoringOptions
from mera_multi_hf.tasks.spec import TaskSpec


@dataclass
class TaskPart:
    """One task's inputs: its examples, the predictions by id, where they came from."""

    task: TaskSpec
    examples: list
    predictions: dict
    source: str
    official: bool = False  # the whole official test split from the Hub copy
    dataset: object = None  # the split, for the page's media
    fingerprint: str | None = None
    log: list[dict] | None = None  # evaluate: the sample log's records, example order
    context: int | None = None  # dialogue turns shown with each question
    model: str | None = None  # the model that answered this task
    logged: int | None = None  # evaluate: the task's examples in the sample log
    # score: the predictions files' lines of this task, file name -> records, as given;
    # they go into logs_public.zip as the official packer puts the harness's logs there
    given_logs: dict | None = None
    private: bool = False  # a private split (set by finalize: task or data says so)


def make_judge(options: ScoringOptions):
    """The judge the options name, ready; None without one."""
    if not (options.judge or options.judge_url):
        return None
    from mera_multi_hf.judge.choose import get_judge

    extra = {"api_key": options.judge_api_key} if options.judge_api_key else {}
    return get_judge(
        options.judge, options.judge_url, judge_tokenizer=options.judge_tokenizer, **extra
    )


def finalize(
    folder,
    parts: list[TaskPart],
    options: ScoringOptions,
    *,
    split: str,
    run_info: dict,
    started: float,
    notes=(),
) -> dict:
    """Score ``parts`` and write everything into ``folder`` (a claimed OutputFolder).
    ``run_info``: the command's own fields of the run record (mode, model, ...)."""
    from mera_multi_hf.reporting.reports import report_files, results_doc, write_outputs
    from mera_multi_hf.reporting.results_page import PAGE_NAME, render
    from mera_multi_hf.scoring.records import Summary
    from mera_multi_hf.scoring.score import score_task, summarize

    notes = mark_private(parts, split) + list(notes)
    judge = make_judge(options)
    results = [
        score_task(
            p.task,
            p.examples,
            p.predictions,
            em_mode=options.em_mode,
            judge=judge,
            split=split,
            model=p.model or run_info.get("model"),
        )
        for p in parts
    ]
    run = run_record(parts, results, judge, split, run_info, started)
    run["coverage_change"] = coverage_change(folder, parts, split)
    official = run["official_test_split"]
    notes += result_notes(results, split, official)
    if run["coverage_change"]:
        notes.insert(0, run["coverage_change"]["note"])
    summary = Summary.from_dict(summarize(results))
    files = {
        f"samples_{p.task.key}_{split}.jsonl": sample_lines(p, r, split)
        for p, r in zip(parts, results)
        if p.log is not None
    }
    notes += secrets_in_data(parts, files)
    files.update(report_files(results, summary, run, official))
    files[PAGE_NAME] = render(results, run, page_rows(parts, results, files, split), notes, summary)
    if split == "test" and not options.no_submission:
        files["submission.zip"] = submission(parts, results, public_logs(parts, results, split))
    written = write_outputs(folder, files, results_doc(results, summary, run))
    return {
        "output_dir": str(folder.path),
        "run": run,
        "tasks": [r.to_dict() for r in results],  # results.json's form
        "summary": summary.to_dict(),
        "files": written,
        "notes": notes,
    }


def run_record(parts, results, judge, split, run_info: dict, started: float) -> dict:
    """What makes a run reproducible, recorded in results.json: the fields every command
    records, then the command's own (``run_info``)."""
    from mera_multi_hf.core.provenance import package_versions
    from mera_multi_hf.scoring.uncertainty import settings as bootstrap_settings

    keys = [p.task.key for p in parts]
    run = {
        "run_id": uuid.uuid4().hex[:12],
        "mode": None,
        "model": None,
        "tasks": keys,
        "split": split,
        "n_examples": {p.task.key: len(p.examples) for p in parts},
        "dataset_source": {p.task.key: p.source for p in parts},
        "official_test_split": {p.task.key: p.official for p in parts},
        "gold_private": gold_private(parts, results, split),
        "dataset_fingerprint": {p.task.key: p.fingerprint for p in parts},
        "metric_modes": {r.task: r.metric_modes for r in results},
        "judge": judge.describe() if judge is not None else None,
        "bootstrap": bootstrap_settings(),
        "versions": package_versions(),
        "preflight": None,
    }
    run.update(run_info)
    run["started_at"] = datetime.fromtimestamp(started, timezone.utc).isoformat(timespec="seconds")
    run["duration_s"] = round(time.time() - started, 2)
    return run


def coverage_change(folder, parts, split: str) -> dict | None:
    """What the reports cover now against what the reports they replace covered (tasks,
    split, examples): None when the same (or no reports of this tool's are replaced),
    else both and a one-line note."""

    if "results.json" not in folder.owned():
        return None
    try:
        old = json_read.read_file(folder.path / "results.json")["run"]
        before = {k: {"split": old["split"], "n": n} for k, n in old["n_examples"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # not a results file this version can read: nothing to compare
    after = {p.task.key: {"split": split, "n": len(p.examples)} for p in parts}
    if before == after:
        return None

    def named(key, cover):
        return key + (f" ({cover['split']})" if cover["split"] != "test" else "")

    now = [
        f"{len(p.examples)}"
        + (f" of {p.logged} logged" if p.logged is not None else "")
        + f" examples of {named(p.task.key, after[p.task.key])}"
        for p in parts
        if before.get(p.task.key) != after[p.task.key]
    ]
    gone = [named(k, c) for k, c in before.items() if k not in after]
    note = (
        "results now cover "
        + "; ".join(now or ["fewer tasks"])
        + (f", no longer {', '.join(gone)}" if gone else "")
        + " (the reports replaced covered "
        + ", ".join(f"{c['n']} of {named(k, c)}" for k, c in before.items())
        + ")"
    )
    return {"before": before, "after": after, "note": note}


def mark_private(parts, split: str) -> list[str]:
    """Set each part's ``private``: the test split of a task declared private, or whose
    data says it is private or names no task (data_owner.check_data_task); the notes to show."""
    from mera_multi_hf.data.data_owner import check_data_task, data_says_private
    from mera_multi_hf.data.sources import resolve_source, source_kind
    from mera_multi_hf.reporting.submission import hides_answers

    notes = []
    for part in parts:
        source = resolve_source(part.task, part.source)
        kind = source_kind(source)
        note = check_data_task(part.task, source, kind)
        data_private = note is not None or data_says_private(part.task, source, kind)
        part.private = hides_answers(part.task, split, data_private)
        notes += [note] if note and split == "test" else []
    return notes


def gold_private(parts, results, split: str) -> dict | None:
    """Which local files hold a private split's gold answers or per-example scores and
    verdicts derived from them (None: none does)."""
    from mera_multi_hf.reporting.submission import LOCAL_ONLY, gold_derived

    hidden = [(p, r) for p, r in zip(parts, results) if p.private]
    names = [f"samples_{p.task.key}_{split}.jsonl" for p, _ in hidden if p.log is not None]
    scored = any(gold_derived(r) for _, r in hidden)  # per-example verdicts on the page too
    if not names and not scored:
        return None
    return {
        "files": names + ["results.json"] + (["results.html"] if scored else []),
        "local_only": LOCAL_ONLY,
        "note": "these files keep a private split's gold answers or per-example scores "
        "derived from them (verdicts right/wrong), for local scoring only: never upload "
        "them (submission.zip and its logs_public.zip leave them out)",
    }


def secrets_in_data(parts, files: dict) -> list[str]:
    """One line (printed, and a note of the run) when a secret value the run was given
    is inside its stored prompts or answers: they are data, kept as they are (masking
    them would change the scores and break resuming), so the user checks them."""
    import sys

    from mera_multi_hf.core.masking import holds_secret

    where = [
        name for name, data in files.items() if name.startswith("samples_") and holds_secret(data)
    ]
    if any(holds_secret(str(answer)) for p in parts for answer in p.predictions.values()):
        where.append("the answers of submission.zip")
    if not where:
        return []
    note = (
        f"a secret value given to this run (a key, a token, a URL's password) is inside "
        f"the stored prompts or answers of {', '.join(dict.fromkeys(where))}; they are data "
        "and are kept as they are: do not share them before removing it"
    )
    print(f"mera-multi: note: {note}", file=sys.stderr)
    return [note]


def result_notes(results, split: str, official: dict) -> list[str]:
    notes = []
    if not any(official.values()):
        notes.append(
            "no model-index.yaml: it is written only for tasks run on the whole "
            "official test split from the Hub"
        )
    for result in results:
        if not result.scorable:
            public = (
                (
                    " although the task is public, this copy's test answers are blanked (as "
                    "on the ruSLUn Hub copy): local scoring needs a copy with answers (a raw "
                    "folder with them, or --split shots);"
                )
                if result.public
                else ""
            )
            notes.append(
                f"{result.task}/{split}: cannot score here: the gold answers "
                f"are hidden;{public} submit submission.zip to the MERA site for scores"
            )
    return notes


def sample_lines(part: TaskPart, result, split: str, upload: bool = False) -> bytes:
    """samples_<task>_<split>.jsonl, rebuilt from the current references: each logged
    generation with today's target, filtered answer and per-example scores (the judge's
    too, when one scored).

    For a private split the local file marks each line (``gold_private``) and the copy
    made for upload (``upload``: logs_public.zip) carries no target and no metric."""
    import json

    from mera_multi_hf.scoring.metric_extraction import extract_answer

    answers, lines = result.answer_of(), []
    for example, logged in zip(part.examples, part.log):
        record, answer = dict(logged), answers[example.id]  # its generation, filtered once
        record["model"] = part.model or record.get("model")  # the task's, from the manifest
        record.update(
            target=example.gold,
            filtered=answer.filtered,
            extracted=extract_answer(answer.output, part.task.choices or None),
            metrics=dict(answer.scores),
        )
        if part.private:
            if upload:
                del record["target"], record["metrics"]
            else:
                record["gold_private"] = True
        lines.append(json.dumps(record, ensure_ascii=False))
    return _jsonl(lines)


def _jsonl(lines: list[str]) -> bytes:
    return ("\n".join(lines) + "\n").encode("utf-8") if lines else b""


def public_logs(parts, results, split: str) -> dict[str, bytes]:
    """logs_public.zip's files, the same for both commands: a run's sample logs
    (:func:`sample_lines`), or the predictions files `score` was given; for a private split
    with no gold answer and no per-example score in them."""
    import json

    logs = {}
    for part, result in zip(parts, results):
        if part.log is not None:
            logs[f"samples_{part.task.key}_{split}.jsonl"] = sample_lines(
                part, result, split, upload=True
            )
        for name, records in (part.given_logs or {}).items():  # as given, less any surrogate
            records = json_read.replace_unencodable(records)[0]
            logs[name] = _jsonl(
                [
                    json.dumps(without_gold(r) if part.private else r, ensure_ascii=False)
                    for r in records
                ]
            )
    return logs


# What a predictions line may carry of the gold: this project's sample log (target,
# metrics) and lm-eval's (target and its hash; the doc's outputs; each metric the line's
# "metrics" names, at the top level).
GOLD_KEYS = ("target", "target_hash", "metrics", "gold_private")


def without_gold(record: dict) -> dict:
    """A predictions line with no gold answer and no per-example score left."""
    from mera_multi_hf.scoring.registry import METRICS

    named = record.get("metrics") if isinstance(record.get("metrics"), list) else []
    drop = set(GOLD_KEYS) | set(METRICS) | {m for m in named if isinstance(m, str)}
    out = {k: v for k, v in record.items() if k not in drop}
    if isinstance(out.get("doc"), dict):
        out["doc"] = {k: v for k, v in out["doc"].items() if k != "outputs"}
    return out


def page_rows(parts, results, files: dict, split: str) -> list[dict]:
    """results.html's rows: every example, from the sample file or the scored predictions."""
    from mera_multi_hf.reporting.results_page import task_rows

    rows = []
    for part, result in zip(parts, results):
        if part.log is not None:
            name = f"samples_{part.task.key}_{split}.jsonl"
            records = [
                json_read.loads(line, f"{name}:{n}")
                for n, line in enumerate(files[name].splitlines(), 1)
                if line
            ]
        else:
            records = prediction_records(part.examples, part.predictions, result, part.private)
        rows += task_rows(
            part.task.key, split, records, part.examples, part.dataset, context=part.context
        )
    return rows


def prediction_records(examples, predictions: dict, result, private: bool = False) -> list[dict]:
    """Sample-file-like records of scored predictions (what results.html shows); the
    filtered answers and scores are the scoring's (``result``: a TaskResult)."""
    answers = result.answer_of()
    replaced = getattr(predictions, "replaced", {})  # lone surrogates made U+FFFD
    return [
        {
            "id": e.id,
            "prompt": e.prompt,
            "generation": predictions[e.id],
            "filtered": answers[e.id].filtered,
            "target": e.gold,
            "metrics": dict(answers[e.id].scores),
            **({"gold_private": True} if private else {}),
            **({"unencodable_replaced": replaced[e.id]} if e.id in replaced else {}),
        }
        for e in examples
        if e.id in predictions
    ]


def results_table(result: dict) -> str:
    """The short table both commands print: one row per task and metric, the notes, the
    files written."""
    from mera_multi_hf.core.arguments import text_table
    from mera_multi_hf.reporting.reports import SUMMARY_HEAD, footnotes, summary_rows
    from mera_multi_hf.scoring.records import TaskResult

    tasks = [TaskResult.from_dict(doc) for doc in result["tasks"]]  # results.json's form
    lines = [text_table([SUMMARY_HEAD, *summary_rows(tasks)])]
    lines += [f"note: {note}" for note in footnotes(tasks) + result["notes"]]
    lines.append("wrote: " + ", ".join(str(p) for p in result["files"].values()))
    return "\n".join(lines)


def submission(parts, results, logs: dict) -> bytes:
    """submission.zip: every task's answers (checked against its ids), as the scoring
    filtered them (``ExampleResult.submitted``), and, from a run, the public copies of its
    sample logs."""
    from mera_multi_hf.reporting.submission import packed, submission_bytes

    answers, ids = {}, {}
    for p, result in zip(parts, results):
        answers[p.task.key], ids[p.task.key] = packed(
            p.task.key, {a.id: a.submitted for a in result.answers}, [e.id for e in p.examples]
        )
    return submission_bytes(answers, ids, logs or None)
