"""`score` as one straight line, beside `evaluate`'s: plan (the task, the preflight)
-> load (:class:`~mera_multi_hf.data.loaded.LoadedTask`, private decided) -> read the
predictions against it -> the score and write steps `evaluate` uses (:mod:`.outcome`)."""

from __future__ import annotations

import time
from pathlib import Path

from mera_multi_hf.core import json_read
from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.core.input_files import open_binary
from mera_multi_hf.pipeline.outcome import Answered, score_and_write
from mera_multi_hf.scoring.options import ScoringOptions


def score_predictions(
    task_key: str,
    predictions_path: str | Path,
    out_dir: str | Path,
    *,
    data=None,
    split: str = "test",
    em_mode: str | None = None,
    judge=None,
    judge_url: str | None = None,
    judge_tokenizer: str | None = None,
    judge_api_key: str | None = None,
    submission: bool = True,
    model: str | None = None,
    overwrite: bool = False,
) -> dict:
    """Score one task's predictions file; write results.json/.md, model-index.yaml and
    (for the test split) submission.zip into ``out_dir``; ``model``: the name of the model
    that made the predictions (default: what the files record); ``overwrite``: write the
    outputs again even when they are those of these very predictions and options.
    Returns the task result."""
    from mera_multi_hf.core.outputs import OutputFolder
    from mera_multi_hf.pipeline.preflight import preflight_score
    from mera_multi_hf.tasks.table import get_task

    started = time.time()
    task = get_task(task_key)
    checked = preflight_score(task, data, out_dir, judge, judge_url, judge_tokenizer, judge_api_key)
    options = ScoringOptions(
        em_mode, judge, judge_url, judge_tokenizer, judge_api_key, no_submission=not submission
    )
    folder = OutputFolder(out_dir, kind="score", inputs=[data, predictions_path, judge])
    with folder.claim() as folder:  # before any work
        loaded, predictions = _load_with_predictions(task, predictions_path, data, split)
        fields = _score_record(predictions_path, checked, f"{task.key}/{split}")
        fields["model"] = model or fields["model"]
        # answers whose lone surrogates were replaced by U+FFFD as they were read
        fields["unencodable_replaced"] = {task.key: len(predictions.replaced)}
        fields["environment"] = _environment(judge_url, judge_api_key)
        answered = Answered(
            {task.key: predictions},
            fields,
            given_logs={task.key: _given_logs(predictions_path, task.key, split)},
        )
        outcome = score_and_write(folder, [loaded], answered, options, started, rewrite=overwrite)
    (scored,) = outcome.results.tasks.values()
    result = scored.to_dict()  # the Python API's answer: results.json's form
    result["written"] = sorted(outcome.files)
    result["coverage_note"] = (outcome.results.run.details["coverage_change"] or {}).get("note")
    result["table"] = outcome.table()  # what `mera-multi score` prints: evaluate's table
    return result


def _load_with_predictions(task, predictions_path, data, split):
    """The task's split (a LoadedTask) and the predictions file read against it."""
    from mera_multi_hf.data.loaded import load_task_split
    from mera_multi_hf.scoring.predictions import read_predictions

    # the harness reads the official copy in its order: there lm-eval's doc_id, a
    # position, names an example (a domain task's logs count positions per domain)
    harness_order = data is None and split == "test" and not task.domains
    if not (task.dialogue or harness_order):
        predictions = read_predictions(predictions_path, task.key, split)  # a bad file: no loading
    loaded = load_task_split(task, data, split)
    examples = loaded.examples
    if task.dialogue or harness_order:
        predictions = read_predictions(
            predictions_path, task.key, split, _places(task, examples, harness_order)
        )
    extra = sorted(set(predictions) - {e.id for e in examples})
    if extra:
        raise MeraError(
            f"{predictions_path}: ids not in {task.key}/{split}: {', '.join(map(str, extra[:20]))}"
        )
    return loaded, predictions


def _places(task, examples, harness_order: bool) -> dict:
    """Positions -> example ids: ruTiE's (dialog id, question id), whose official logs
    null meta.id, and lm-eval's doc_id where the harness's order is known."""
    from mera_multi_hf.scoring.predictions import DOC_POSITION

    places = {}
    if task.dialogue:
        from mera_multi_hf.tasks.dialogue import positions

        places = {p: i for i, p in positions(task, examples).items()}
    if harness_order:
        places.update({(DOC_POSITION, n): e.id for n, e in enumerate(examples)})
    return places


def _given_logs(predictions_path, task_key: str, split: str) -> dict[str, list[dict]]:
    """The predictions files' lines of this task and split, by file name: what
    logs_public.zip carries of a scoring, as the official packer carries the logs."""
    from mera_multi_hf.scoring.predictions import task_lines

    logs: dict[str, list[dict]] = {}
    for file, _, record in task_lines(predictions_path, task_key, split):
        logs.setdefault(file.name, []).append(record)
    return logs


def _score_record(predictions_path, checked, entry: str) -> dict:
    """The fields of the run record that belong to a scoring: the predictions files and
    where they were made (``entry``: the ``task/split`` scored)."""
    from mera_multi_hf.core.provenance import command_line, file_sha256
    from mera_multi_hf.scoring.predictions import prediction_files

    files = [str(f) for f in prediction_files(predictions_path)]
    record = {"model": model_name(files), **made_by(files, entry), "mode": "score"}
    return dict(
        record,
        predictions=files,
        predictions_sha256={f: file_sha256(f) for f in files},
        command=command_line(),
        preflight=checked,
    )


def _environment(judge_url, judge_api_key) -> dict:
    """The values this scoring takes from the environment (named, never shown)."""
    import os

    from mera_multi_hf.judge.judges import API_KEY_ENV

    taken = judge_url and not judge_api_key and os.environ.get(API_KEY_ENV)
    return {"judge_api_key": f"from ${API_KEY_ENV}"} if taken else {}


def made_by(files: list[str], entry: str) -> dict:
    """The provenance the predictions carry: this project's run folder (its manifest:
    model, backend options, generation, sessions), or an lm-evaluation-harness run (the
    config block of its results file, secrets masked)."""
    from mera_multi_hf.generation.manifest import provenance, read_manifest

    for file in map(Path, files):
        for folder in (file.parent, file.parent.parent):  # samples_*.jsonl or logs/samples-rank*
            doc = read_manifest(folder)
            if doc and entry in doc.get("tasks", {}):
                return dict(
                    provenance(doc, [entry]),
                    model=doc["tasks"][entry]["model"],
                    generated_in=str(folder),
                )
    config = harness_config(files)
    return {"harness_config": config} if config is not None else {}


def harness_config(files: list[str]) -> dict | None:
    """The ``config`` block of the lm-evaluation-harness results file beside the logs,
    masked (its ``model_args`` may hold an api_key)."""
    from mera_multi_hf.core.masking import mask_values

    for results in sorted({r for f in files for r in Path(f).parent.glob("results*.json")}):
        try:
            doc = json_read.read_file(results)
        except (OSError, ValueError, UnicodeDecodeError):
            continue
        if isinstance(doc, dict) and isinstance(doc.get("config"), dict):
            return mask_values(doc["config"])
    return None


def model_name(files: list[str]) -> str:
    """The model that made the predictions, as the files record it (this project's sample
    log: "model"; lm-evaluation-harness: "model_name" in the run's results file); a
    predictions file's name is never taken for a model's."""
    for file in files:
        for candidate in (Path(file), *sorted(Path(file).parent.glob("results*.json"))):
            try:
                with open_binary(candidate) as fh:
                    record = json_read.loads(
                        fh.readline() if candidate.suffix == ".jsonl" else fh.read(), str(candidate)
                    )
            except (OSError, ValueError):
                continue
            record = record if isinstance(record, dict) else {}
            run = record.get("run") if isinstance(record.get("run"), dict) else {}
            name = record.get("model") or record.get("model_name") or run.get("model")
            if isinstance(name, str) and name:
                return name
    return "unnamed model"
