"""The last stages of a run, on the main process: the merged sample log is scored
against the current references and every output is written as one consistent set
(sample files, results.json/.md, model-index.yaml, submission.zip)."""
from __future__ import annotations

import json
import time
import uuid
from datetime import datetime, timezone

from ..reports import report_files, results_doc, write_outputs
from ..results_html import PAGE_NAME, render, task_rows
from ..scoring import filtered, per_example_scores, score_task, summarize
from ..submission import packed, submission_answers, submission_bytes
from ..tiny_model import TINY_MODEL_ID
from . import dialogue
from ..uncertainty import settings as bootstrap_settings
from .config import RunConfig


def sample_lines(data, records: dict, split: str, upload: bool = False) -> bytes:
    """samples_<task>_<split>.jsonl, rebuilt from the current references: the logged
    generation with today's target, filtered answer and per-example metrics.

    For a private split the local file marks each line (``gold_private``) and the copy
    made for upload (``upload``: logs_public.zip) carries no target and no metric."""
    from ..metric_fns import extract_answer
    from ..submission import hides_answers

    task, examples = data.task, data.examples
    generations = [records[(task.key, split, e.id)]["generation"] for e in examples]
    known = all(e.gold is not None for e in examples) and examples
    scores = per_example_scores(task, [e.gold for e in examples], generations) if known else {}
    lines = []
    for i, (example, generation) in enumerate(zip(examples, generations)):
        record = dict(records[(task.key, split, example.id)])
        record.update(target=example.gold, filtered=filtered(task, [generation])[0],
                      extracted=extract_answer(generation, task.choices or None),
                      metrics={m: float(s[i]) for m, s in scores.items()})
        if hides_answers(task, split):
            if upload:
                del record["target"], record["metrics"]
            else:
                record["gold_private"] = True
        lines.append(json.dumps(record, ensure_ascii=False))
    return ("\n".join(lines) + "\n").encode("utf-8") if lines else b""


def _is_official(data, config: RunConfig) -> bool:
    """The whole official test split from the official Hub copy (what a model card may claim)."""
    return (config.split == "test" and str(data.source or data.task.hub_id) == data.task.hub_id
            and len(data.examples) == data.full_size)


def finish_run(folder, config: RunConfig, engine, loaded: list, records: dict, *,
               counts: dict, started: float, world: int, preflight: dict | None = None) -> dict:
    from ..judge import get_judge

    judge = None
    if config.judge or config.judge_url:
        options = {"api_key": config.judge_api_key} if config.judge_api_key else {}
        judge = get_judge(config.judge, config.judge_url, judge_tokenizer=config.judge_tokenizer,
                          **options)
    split, results, files, answers = config.split, [], {}, {}
    for data in loaded:
        predictions = {e.id: records[(data.task.key, split, e.id)]["generation"]
                       for e in data.examples}
        results.append(score_task(data.task, data.examples, predictions, em_mode=config.em_mode,
                                  judge=judge, split=split))
        files[f"samples_{data.task.key}_{split}.jsonl"] = sample_lines(data, records, split)
        answers[data.task.key] = packed(data.task.key,
                                        submission_answers(data.task.key, predictions),
                                        [e.id for e in data.examples])
    official = {d.task.key: _is_official(d, config) for d in loaded}
    run_info = run_record(config, engine, loaded, results, judge=judge, started=started,
                          world=world, official=official)
    # prompts cut from the left to fit the model (the harness's rule), from the sample log
    run_info["truncated_prompts"] = {
        d.task.key: sum(bool(records[(d.task.key, split, e.id)].get("prompt_tokens_cut"))
                        for e in d.examples) for d in loaded}
    run_info["preflight"] = preflight
    summary = summarize(results)
    files.update(report_files(results, summary, run_info, official))
    notes = run_notes(config, engine, loaded, results, official)
    files[PAGE_NAME] = results_page(loaded, files, results, run_info, notes, config)
    if split == "test":
        logs = {f"samples_{d.task.key}_{split}.jsonl": sample_lines(d, records, split, upload=True)
                for d in loaded}
        files["submission.zip"] = submission_bytes(
            {k: a for k, (a, _) in answers.items()}, {k: i for k, (_, i) in answers.items()},
            logs)
    written = write_outputs(folder, files, results_doc(results, summary, run_info))
    return {"output_dir": str(folder.path), "run": run_info, "tasks": results, "summary": summary,
            "files": written, "notes": notes, "counts": counts}


def results_page(loaded, files: dict, results, run_info, notes, config) -> str:
    """results.html: every example of the run, from the sample files just made."""
    rows = []
    for data in loaded:
        lines = files[f"samples_{data.task.key}_{config.split}.jsonl"].decode("utf-8")
        records = [json.loads(line) for line in lines.splitlines() if line]
        rows += task_rows(data.task.key, config.split, records, data.examples, data.dataset,
                          context=config.dialogue_context)
    return render(results, run_info, rows, notes)


def run_notes(config, engine, loaded, results, official) -> list[str]:
    notes = []
    partial = [d.task.key for d in loaded if len(d.examples) < d.full_size]
    if partial and config.split == "test":
        notes.append(f"submission.zip covers only the first {config.limit} examples of "
                     f"{', '.join(partial)} (--limit): not a leaderboard submission")
    if not any(official.values()):
        notes.append("no model-index.yaml: it is written only for tasks run on the whole "
                     "official test split from the Hub")
    for result in results:
        if not result.get("scorable"):
            public = (" although the task is public, this copy's test answers are blanked (as "
                      "on the ruSLUn Hub copy): local scoring needs a copy with answers (a raw "
                      "folder with them, or --split shots);") if result["public"] else ""
            notes.append(f"{result['task']}/{config.split}: cannot score here: the gold answers "
                         f"are hidden;{public} submit submission.zip to the MERA site for scores")
    if engine.model_id == TINY_MODEL_ID:
        notes.append("the built-in tiny model has random weights: its answers are noise "
                     "(a plumbing check, not a score)")
    return notes


def _gold_private(loaded, split: str) -> dict | None:
    """Which local files hold a private split's gold answers (None: none does)."""
    from ..submission import hides_answers

    names = [f"samples_{d.task.key}_{split}.jsonl" for d in loaded if hides_answers(d.task, split)]
    if not names:
        return None
    return {"files": names + ["results.json"], "note": "these files keep a private split's gold "
            "answers and scores derived from them, for local scoring only: never upload them "
            "(submission.zip and its logs_public.zip leave them out)"}


def run_record(config: RunConfig, engine, loaded, results, *, judge, started, world,
               official) -> dict:
    """What makes the run reproducible; recorded in results.json."""
    from ..provenance import command_line, mask_secrets, package_versions

    info = engine.info()
    return {
        "run_id": uuid.uuid4().hex[:12],
        "mode": "evaluate",
        "model": info.pop("model"), "revision": info.pop("revision"),
        "backend": info.pop("backend"), "dtype": info.pop("dtype", None),
        "backend_options": {k: mask_secrets(v) if isinstance(v, str) else v
                            for k, v in info.items()},
        "generation": {
            "do_sample": False, "num_beams": 1,
            "max_new_tokens": {d.task.key: config.max_new_tokens or d.task.max_new_tokens
                               for d in loaded},
            "stop": {d.task.key: list(config.stop if config.stop is not None else d.task.stop)
                     for d in loaded},
            "user_choices": {k: v for k, v in (("max_new_tokens", config.max_new_tokens),
                                               ("stop", config.stop)) if v is not None},
            "dialogue_context": {d.task.key: config.dialogue_context
                                 if config.dialogue_context is not None
                                 else d.task.dialogue.context_turns
                                 for d in loaded if d.task.dialogue},
        },
        "prompt_source": "the dataset's per-example `instruction`, filled as the task's "
                         "official doc_to_text, rendered " +
                         ("with the model's chat template" if info.get("prompt_mode") != "plain"
                          else "as plain text") + "; media placeholders in place",
        "tasks": [d.task.key for d in loaded],
        "split": config.split, "limit": config.limit,
        "n_examples": {d.task.key: len(d.examples) for d in loaded},
        "dataset_source": {d.task.key: str(d.source or d.task.hub_id) for d in loaded},
        "official_test_split": official,
        "gold_private": _gold_private(loaded, config.split),
        "dataset_fingerprint": {d.task.key: d.fingerprint for d in loaded},
        "metric_modes": {r["task"]: r.get("metric_modes", {}) for r in results},
        # ruTiE: examples whose meta placed them elsewhere than the official arithmetic
        "dialogue_meta_disagrees": {d.task.key: len(dialogue.meta_disagreements(d.task, d.examples))
                                    for d in loaded if d.task.dialogue},
        "judge": judge.describe() if judge is not None else None,
        "bootstrap": bootstrap_settings(),
        "batch_size": engine.batch_size, "num_processes": world, "seed": config.seed,
        "limits": config.limits().as_record(),
        "versions": package_versions(),
        "command": mask_secrets(command_line(config)),
        "started_at": datetime.fromtimestamp(started, timezone.utc).isoformat(timespec="seconds"),
        "duration_s": round(time.time() - started, 2),
    }
