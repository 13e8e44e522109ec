"""`mera-multi score`: score predictions made elsewhere and package the submission."""
from __future__ import annotations

import json
from pathlib import Path

from .errors import MeraError


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

    task = get_task(task_key)
    checked = preflight_score(task, data, out_dir, judge, judge_url, judge_tokenizer,
                              judge_api_key)
    with OutputFolder(out_dir, inputs=[data]).claim(overwrite) as folder:  # before any work
        return _score_into(folder, task, predictions_path, data=data, split=split,
                           em_mode=em_mode, judge=judge, judge_url=judge_url,
                           judge_tokenizer=judge_tokenizer, judge_api_key=judge_api_key,
                           submission=submission, checked=checked)


def _score_into(folder, task, predictions_path, *, data, split, em_mode, judge, judge_url,
                judge_tokenizer, judge_api_key, submission, checked) -> dict:
    from .examples import make_examples
    from .judge import get_judge
    from .loading import load_task
    from .predictions import read_predictions
    from .reports import report_files, results_doc, write_outputs
    from .results_html import PAGE_NAME, render
    from .scoring import score_task, summarize
    from .submission import packed, submission_answers, submission_bytes

    predictions = read_predictions(predictions_path, task.key, split)  # a bad file: no loading
    dataset = load_task(task, source=data, split=split)
    examples = make_examples(task, dataset)
    if task.dialogue:  # official ruTiE logs name examples by position (meta.id is null)
        from .runner.dialogue import positions
        places = {p: i for i, p in positions(task, examples).items()}
        predictions = read_predictions(predictions_path, task.key, split, places)
    known = {e.id for e in examples}
    extra = sorted(set(predictions) - known)
    if extra:
        raise MeraError(f"{predictions_path}: ids not in {task.key}/{split}: "
                        f"{', '.join(map(str, extra[:20]))}")
    options = {"api_key": judge_api_key} if judge_api_key else {}
    scorer = get_judge(judge, judge_url, judge_tokenizer=judge_tokenizer, **options) \
        if judge or judge_url else None
    result = score_task(task, examples, predictions, em_mode=em_mode, judge=scorer, split=split)
    run_info = _score_record(task, predictions_path, data, split, result, scorer)
    run_info["preflight"] = checked
    summary = summarize([result])
    files = report_files([result], summary, run_info, official={})
    files[PAGE_NAME] = render([result], run_info, score_rows(task, examples, predictions,
                                                             result, split, dataset))
    if submission and split == "test":
        answers, ids = packed(task.key, submission_answers(task.key, predictions), known)
        files["submission.zip"] = submission_bytes({task.key: answers},
                                                   expected_ids={task.key: ids})
    result["written"] = sorted(write_outputs(folder, files, results_doc([result], summary,
                                                                        run_info)))
    return result


def _score_record(task, predictions_path, data, split, result, judge) -> dict:
    import uuid

    from .predictions import prediction_files
    from .provenance import command_line, file_sha256, package_versions
    from .uncertainty import settings as bootstrap_settings
    from .submission import hides_answers

    files = [str(f) for f in prediction_files(predictions_path)]
    return {
        "run_id": uuid.uuid4().hex[:12], "mode": "score",
        "model": model_name(files), "predictions": files,
        "official_test_split": {task.key: split == "test" and str(data or task.hub_id)
                                == task.hub_id},
        "predictions_sha256": {f: file_sha256(f) for f in files},
        "dataset_source": str(data or task.hub_id), "split": split,
        "metric_modes": result["metric_modes"],
        "judge": judge.describe() if judge is not None else None,
        "bootstrap": bootstrap_settings(),
        "versions": package_versions(), "command": command_line(),
        "gold_private": ({"files": ["results.json"], "note": "scores derived from a private "
                          "split's gold answers, for local use only: never upload this file"}
                         if hides_answers(task, split) and result.get("scorable") else None),
    }


def prediction_records(task, examples, predictions: dict, result: dict) -> list[dict]:
    """Sample-file-like records of scored predictions (what results.html shows)."""
    from .scoring import filtered

    per_example = result.get("per_example") or {}
    return [{"id": e.id, "prompt": e.prompt, "generation": predictions[e.id],
             "filtered": filtered(task, [predictions[e.id]])[0], "target": e.gold,
             "metrics": {m: s[e.id] for m, s in per_example.items() if e.id in s}}
            for e in examples if e.id in predictions]


def score_rows(task, examples, predictions, result, split, dataset=None) -> list[dict]:
    from .results_html import task_rows

    return task_rows(task.key, split, prediction_records(task, examples, predictions, result),
                     examples, dataset)


def model_name(files: list[str]) -> str:
    """The model that made the predictions, as the files record it (this project's sample
    log: "model"; lm-evaluation-harness: "model_name" in the run's results file); a
    predictions file's name is never taken for a model's."""
    for file in files:
        for candidate in (Path(file), *sorted(Path(file).parent.glob("results*.json"))):
            try:
                with open(candidate, encoding="utf-8") as fh:
                    record = json.loads(fh.readline() if candidate.suffix == ".jsonl" else fh.read())
            except (OSError, ValueError):
                continue
            record = record if isinstance(record, dict) else {}
            run = record.get("run") if isinstance(record.get("run"), dict) else {}
            name = record.get("model") or record.get("model_name") or run.get("model")
            if isinstance(name, str) and name:
                return name
    return "unnamed model"


def cmd_score(args) -> int:
    out = Path(args.out)
    result = score_predictions(args.task, args.predictions, out, data=args.data, split=args.split,
                               em_mode=args.em_mode, judge=args.judge, judge_url=args.judge_url,
                               judge_tokenizer=args.judge_tokenizer,
                               judge_api_key=args.judge_api_key, overwrite=args.overwrite,
                               submission=not args.no_submission)
    print((out / "results.md").read_text(encoding="utf-8"))
    if not result["scorable"]:
        print(f"{args.task}/{args.split}: {result['note']}")
    print(f"wrote {', '.join(result['written'])} to {out}")
    return 0


def add_scoring_options(parser) -> None:
    """The scoring options that `score` and `evaluate` share."""
    from .metric_fns import EM_MODES

    parser.add_argument("--em-mode", choices=EM_MODES,
                        help="exact-match normalisation (default: each task's official mode)")
    parser.add_argument("--judge", help="judge model id or folder: also compute judge scores")
    parser.add_argument("--judge-url", help="vLLM-style /classify endpoint of a served judge")
    parser.add_argument("--judge-tokenizer", help="tokenizer (id or folder) of a served judge, "
                                                  "when the server does not report its separator")
    parser.add_argument("--judge-api-key", help="API key of a served judge; never recorded")


def add_parser(sub) -> None:
    p = sub.add_parser("score", help="score a predictions file and write results + submission",
                       description="Score predictions made elsewhere: this project's sample "
                                   "log, a JSONL of {id, prediction}, or lm-evaluation-harness "
                                   "samples_<task>_*.jsonl logs (a file or their folder).")
    p.add_argument("--task", required=True, help="task key, e.g. ruhhh_image")
    p.add_argument("--predictions", required=True, help="JSONL file or folder of them")
    p.add_argument("--data", help="dataset source: raw folder, exported folder, Hub id or "
                                  "`sample` (default: the official Hub id)")
    p.add_argument("--split", default="test", help="split to score (default test)")
    p.add_argument("--out", required=True, help="output folder for the reports")
    add_scoring_options(p)
    p.add_argument("--no-submission", action="store_true", help="do not write submission.zip")
    p.add_argument("--overwrite", action="store_true",
                   help="replace files of this tool's output names in --out (results.*, "
                        "model-index.yaml, submission.zip) that it did not write; other files "
                        "and the folder itself stay")
    p.set_defaults(func=cmd_score)
