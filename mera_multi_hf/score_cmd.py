"""`mera-multi score`: score predictions made elsewhere and package the submission."""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from . import json_read
from .errors import MeraError
from .finalize import TaskPart, finalize
from .options import ScoringOptions, opt


@dataclass
class ScoreConfig(ScoringOptions):
    """The options of `mera-multi score`; its scoring options are evaluate's."""
    task: str | None = opt(None, "task key, e.g. ruhhh_image", required=True)
    predictions: str | None = opt(None, "JSONL file or folder of them", required=True)
    data: str | None = opt(None, "dataset source: raw folder, exported folder, Hub id or "
                           "`sample` (default: the official Hub id)")
    split: str = opt("test", "split to score (default test)")
    out: str | None = opt(None, "output folder for the reports", required=True)
    overwrite: bool = opt(False, "replace files of this tool's output names in --out "
                          "(results.*, model-index.yaml, submission.zip) that it did not "
                          "write; other files and the folder itself stay")


def score_predictions(task_key: str, predictions_path: str | Path, out_dir: str | Path, *,
                      data=None, split: str = "test", em_mode: str | None = None,
                      judge=None, judge_url: str | None = None, judge_tokenizer: str | None = None,
                      judge_api_key: str | None = None, submission: bool = True,
                      overwrite: bool = False) -> dict:
    """Score one task's predictions file; write results.json/.md, model-index.yaml and
    (for the test split) submission.zip into ``out_dir``. Returns the task result."""
    from .outputs import OutputFolder
    from .preflight import preflight_score
    from .tasks import get_task

    started = time.time()
    task = get_task(task_key)
    checked = preflight_score(task, data, out_dir, judge, judge_url, judge_tokenizer,
                              judge_api_key)
    options = ScoringOptions(em_mode, judge, judge_url, judge_tokenizer, judge_api_key,
                             no_submission=not submission)
    with OutputFolder(out_dir, inputs=[data]).claim(overwrite) as folder:  # before any work
        part = _task_part(task, predictions_path, data, split)
        record = _score_record(predictions_path, checked)
        # answers whose lone surrogates were replaced by U+FFFD as they were read
        record["unencodable_replaced"] = {task.key: len(part.predictions.replaced)}
        out = finalize(folder, [part], options, split=split, started=started, run_info=record)
    result = out["tasks"][0]
    result["written"] = sorted(out["files"])
    return result


def _task_part(task, predictions_path, data, split) -> TaskPart:
    """The task's examples and the predictions file read against them."""
    from .examples import make_examples
    from .loading import load_split
    from .predictions import read_predictions

    predictions = read_predictions(predictions_path, task.key, split)  # a bad file: no loading
    dataset = load_split(task, source=data, split=split)
    examples = make_examples(task, dataset)
    if task.dialogue:  # official ruTiE logs name examples by position (meta.id is null)
        from .runner.dialogue import positions
        places = {p: i for i, p in positions(task, examples).items()}
        predictions = read_predictions(predictions_path, task.key, split, places)
    extra = sorted(set(predictions) - {e.id for e in examples})
    if extra:
        raise MeraError(f"{predictions_path}: ids not in {task.key}/{split}: "
                        f"{', '.join(map(str, extra[:20]))}")
    source = str(data or task.hub_id)
    return TaskPart(task, examples, predictions, source, split == "test" and source == task.hub_id,
                    dataset, getattr(dataset, "_fingerprint", None))


def _score_record(predictions_path, checked) -> dict:
    """The fields of the run record that belong to a scoring: the predictions files."""
    from .predictions import prediction_files
    from .provenance import command_line, file_sha256

    files = [str(f) for f in prediction_files(predictions_path)]
    return {"mode": "score", "model": model_name(files), "predictions": files,
            "predictions_sha256": {f: file_sha256(f) for f in files},
            "command": command_line(), "preflight": checked}


def model_name(files: list[str]) -> str:
    """The model that made the predictions, as the files record it (this project's sample
    log: "model"; lm-evaluation-harness: "model_name" in the run's results file); a
    predictions file's name is never taken for a model's."""
    for file in files:
        for candidate in (Path(file), *sorted(Path(file).parent.glob("results*.json"))):
            try:
                with open(candidate, "rb") as fh:
                    record = json_read.loads(fh.readline() if candidate.suffix == ".jsonl"
                                             else fh.read(), str(candidate))
            except (OSError, ValueError):
                continue
            record = record if isinstance(record, dict) else {}
            run = record.get("run") if isinstance(record.get("run"), dict) else {}
            name = record.get("model") or record.get("model_name") or run.get("model")
            if isinstance(name, str) and name:
                return name
    return "unnamed model"


def cmd_score(config: ScoreConfig) -> int:
    out = Path(config.out)
    result = score_predictions(config.task, config.predictions, out, data=config.data,
                               split=config.split, em_mode=config.em_mode, judge=config.judge,
                               judge_url=config.judge_url, judge_tokenizer=config.judge_tokenizer,
                               judge_api_key=config.judge_api_key, overwrite=config.overwrite,
                               submission=not config.no_submission)
    print((out / "results.md").read_text(encoding="utf-8"))
    if not result["scorable"]:
        print(f"{config.task}/{config.split}: {result['note']}")
    print(f"wrote {', '.join(result['written'])} to {out}")
    return 0


def add_parser(sub) -> None:
    from .parsing import add_command

    add_command(sub, "score", ScoreConfig, cmd_score,
                help="score a predictions file and write results + submission",
                description="Score predictions made elsewhere: this project's sample log, a "
                            "JSONL of {id, prediction}, or lm-evaluation-harness "
                            "samples_<task>_*.jsonl logs (a file or their folder).")
