"""`mera-multi score`: score predictions made elsewhere and package the submission."""
from __future__ import annotations

from pathlib import Path

from .errors import MeraError


def score_predictions(task_key: str, predictions_path: str | Path, out_dir: str | Path, *,
                      data=None, split: str = "test", em_mode: str | None = None,
                      judge=None, judge_url: str | None = None,
                      submission: bool = True) -> dict:
    """Score one task's predictions file; write results.json/.md, model-index.yaml and
    (for the test split) submission.zip into ``out_dir``. Returns the task result."""
    from .loading import load_task, reference_rows
    from .predictions import read_predictions
    from .provenance import command_line, file_sha256, package_versions
    from .scoring import score_task, write_reports
    from .submission import write_submission
    from .tasks import get_task

    task = get_task(task_key)
    predictions = read_predictions(predictions_path, task.key, split)
    ds = load_task(task, source=data, split=split)
    references = reference_rows(task, ds)
    known = {r["id"] for r in references}
    extra = sorted(set(predictions) - known)
    if extra:
        raise MeraError(f"{predictions_path}: ids not in {task.key}/{split}: "
                        f"{', '.join(map(str, extra[:20]))}")
    result = score_task(task, references, predictions, em_mode=em_mode, judge=judge,
                        judge_url=judge_url, split=split)
    files = [str(f) for f in Path(predictions_path).glob("*.jsonl")] \
        if Path(predictions_path).is_dir() else [str(predictions_path)]
    run_info = {
        "mode": "score", "model": Path(predictions_path).stem,
        "predictions": files,
        "predictions_sha256": {f: file_sha256(f) for f in files},
        "dataset_source": str(data or task.hub_id), "split": split,
        "dataset_fingerprint": ds._fingerprint,
        "metric_modes": result["metric_modes"],
        "judge": judge_url or (str(judge) if judge else None),
        "versions": package_versions(), "command": command_line(),
    }
    out = Path(out_dir)
    write_reports(out, [result], run_info)
    if submission and split == "test":
        write_submission(out / "submission.zip", {task.key: predictions},
                         expected_ids={task.key: sorted(known)})
    return result


def cmd_score(args) -> int:
    out = Path(args.out)
    result = score_predictions(args.task, args.predictions, out, data=args.data, split=args.split,
                               em_mode=args.em_mode, judge=args.judge, judge_url=args.judge_url,
                               submission=not args.no_submission)
    print((out / "results.md").read_text(encoding="utf-8"))
    if not result["scorable"]:
        print(f"{args.task}/{args.split}: {result['note']}")
    written = ["results.json", "results.md", "model-index.yaml"]
    if (out / "submission.zip").is_file() and not args.no_submission and args.split == "test":
        written.append("submission.zip")
    print(f"wrote {', '.join(written)} to {out}")
    return 0


def add_scoring_options(parser) -> None:
    """The scoring options that `score` and `evaluate` share."""
    from .metric_fns import EM_MODES

    parser.add_argument("--em-mode", choices=EM_MODES,
                        help="exact-match normalisation (default: each task's official mode)")
    parser.add_argument("--judge", help="judge model id or folder: also compute judge scores")
    parser.add_argument("--judge-url", help="vLLM-style /classify endpoint of a served judge")


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
    p.set_defaults(func=cmd_score)
