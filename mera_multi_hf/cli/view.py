"""`mera-multi view RUN_DIR`: write results.html for a run folder, or for the folder of
a results.json (a run made before the page existed, or to refresh it): every example
with its media, prompt, answer, gold and scores, from the folder's results.json and
sample files and the run's dataset."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mera_multi_hf.core import json_read
from mera_multi_hf.core.arguments import add_command, opt
from mera_multi_hf.core.errors import MeraError


def _load_split(task, source, split, notes: list[str]):
    """The split the run used, for media and breakdowns; None (and a note) when it is
    not at hand (a Hub copy offline, a moved folder)."""
    from mera_multi_hf.data.examples import make_examples
    from mera_multi_hf.data.loaded import raw_prompt_list
    from mera_multi_hf.data.loading import load_split

    try:  # plain Arrow, mapped: the pages of the media read are handed back
        dataset = load_split(task, source=source, split=split)
    except MeraError as err:
        notes.append(f"{task.key}: shown without media or breakdown keys: {err}")
        return None, None
    return dataset, make_examples(task, dataset, raw_prompt_list(task, source))


def _media(task, examples, dataset, records: list[dict]):
    """The media of the examples the page shows, read by the data stage (none without
    the split)."""
    if dataset is None:
        return ()
    from mera_multi_hf.data.examples import media_of

    shown = {record["id"] for record in records}
    return media_of(task, [e for e in examples if e.id in shown], dataset)


def _records(run_dir: Path, run: dict, task, split, examples, result) -> list[dict]:
    """The task's per-example records: the sample file of an evaluate run; a score run's
    predictions scored again against the split."""
    sample_file = run_dir / f"samples_{task.key}_{split}.jsonl"
    if sample_file.is_file():
        return [record for _, record in json_read.iter_jsonl(sample_file)]
    if run.get("mode") == "score" and examples is not None:
        from mera_multi_hf.reporting.samples import prediction_records
        from mera_multi_hf.scoring.predictions import read_predictions
        from mera_multi_hf.scoring.score import score_task

        predictions = {}
        for file in run.get("predictions", []):
            predictions.update(read_predictions(file, task.key, split))
        scored = score_task(task, examples, predictions, split=split)
        return prediction_records(examples, predictions, scored, private=result.private)
    raise MeraError(
        f"{run_dir} has no {sample_file.name}: the examples of {task.key} are not at hand"
    )


def _check_sample_files(run_dir: Path, doc) -> None:
    """Read every sample file through once before the folder is claimed, so a damaged
    line is named by file and line (the claim would only say the file was edited). The
    records are not kept: the page reads them again task by task, so a full-size run's
    are never all held (a second parse costs well under 1% of a view)."""
    split = doc.run.to_dict().get("split", "test")
    for result in doc.tasks.values():
        sample_file = run_dir / f"samples_{result.task}_{result.split or split}.jsonl"
        if sample_file.is_file():
            for _ in json_read.iter_jsonl(sample_file):
                pass


def read_results(run_dir: Path):
    """The run's results.json, read (one line saying what to run when there is none)."""
    from mera_multi_hf.scoring.records import Results

    try:
        return Results.read(run_dir / "results.json")
    except MeraError as err:
        raise MeraError(f"{err}; run `mera-multi evaluate` or `score` first") from None
    except (ValueError, KeyError, TypeError) as err:
        raise MeraError(
            f"{run_dir} holds no readable results.json of a run "
            f"({type(err).__name__}); run `mera-multi evaluate` or `score` first"
        ) from None


def page_of(run_dir: Path, doc, stage: Path | None = None) -> dict:
    """results.html of the run (``doc``: its results.json) and its media files (name ->
    content; written into ``stage``, a staging folder of the run's, as they are made)."""
    from mera_multi_hf.reporting.page_media import MediaFolder
    from mera_multi_hf.reporting.results_page import MEDIA_FOLDER, PAGE_NAME, render, task_rows
    from mera_multi_hf.tasks.table import get_task

    run, results = doc.run.to_dict(), list(doc.tasks.values())
    summary = doc.summary if doc.summary.overall else None  # a file without one
    sources, notes, rows = run.get("dataset_source"), [], []
    folder = MediaFolder(MEDIA_FOLDER, stage)
    for result in results:
        task, split = get_task(result.task), result.split or run.get("split", "test")
        source = sources.get(task.key) if isinstance(sources, dict) else sources
        dataset, examples = _load_split(task, source, split, notes)
        records = _records(run_dir, run, task, split, examples, result)
        context = (run.get("generation") or {}).get("dialogue_context", {}).get(task.key)
        media = _media(task, examples, dataset, records)
        rows += task_rows(
            task.key, split, records, examples, media, context, result.private, folder
        )
    page = render(results, doc.run, rows, notes, summary)
    return {PAGE_NAME: page, **folder.files}


def results_vouching_for(run_dir: Path, files: dict) -> str | None:
    """The folder's results.json with the sha256 it records of each of ``files`` made
    that of the new text (None: a results file that records no sha256s, an older one)."""
    import json

    from mera_multi_hf.core.hashing import sha256_of
    from mera_multi_hf.core.outputs import as_written

    doc = json_read.read_file(run_dir / "results.json")
    recorded = doc.get("run", {}).get("files") if isinstance(doc.get("run"), dict) else None
    if not isinstance(recorded, dict):
        return None
    for name, data in files.items():  # a medium already written is hashed from its file
        recorded[name] = sha256_of(data if isinstance(data, Path) else as_written(data))
    return json.dumps(doc, ensure_ascii=False, indent=2) + "\n"


@dataclass
class ViewOptions:
    """The options of `mera-multi view`."""

    run_dir: str | None = opt(
        None,
        "a folder written by `mera-multi evaluate` or `score`, or "
        "its results.json (as `compare` and `leaderboard` take it)",
        positional=True,
        path=True,
    )
    overwrite: bool = opt(
        False,
        "accepted for a uniform command line; view always replaces the results.html "
        "and results_media/ that this tool wrote there, and never another file",
    )


def cmd_view(options: ViewOptions) -> int:
    from mera_multi_hf.core.outputs import add_files, folder_kind
    from mera_multi_hf.reporting.results_page import MEDIA_FOLDER, PAGE_NAME
    from mera_multi_hf.scoring.run_results import gold_derived

    run_dir = Path(options.run_dir)
    if run_dir.is_file() and run_dir.name == "results.json":  # the page goes beside it
        run_dir = run_dir.parent
    if not run_dir.is_dir():
        raise MeraError(
            f"{run_dir} is neither a run folder nor its results.json: give a "
            "folder written by `mera-multi evaluate` or `score`"
        )
    doc = read_results(run_dir)
    kind = folder_kind(run_dir)
    if kind not in ("run", "score"):
        raise MeraError(
            f"view {run_dir}: not a folder that `evaluate` or `score` wrote (its "
            "marker says so); view writes results.html only into one of those"
        )

    _check_sample_files(run_dir, doc)

    def made(stage: Path) -> dict:
        files = page_of(run_dir, doc, stage)
        results = results_vouching_for(run_dir, files)
        if results is not None:  # renamed after the page: it never vouches for an old one
            files["results.json"] = results
        return files

    media = f"{MEDIA_FOLDER}/"
    private = any(map(gold_derived, doc.tasks.values()))
    closed = [PAGE_NAME, media] if private else []  # as evaluate writes a private run's
    add_files(run_dir, made, kind=kind, flag="view", private=closed, replaces=[media])
    print(f"wrote {run_dir / PAGE_NAME} (open it in a browser; it needs no network)")
    return 0


def add_parser(sub) -> None:
    add_command(
        sub,
        "view",
        ViewOptions,
        cmd_view,
        help="write results.html for a run folder: every example with its media, "
        "prompt, answer, gold and scores",
        description="Write results.html for a run made by `evaluate` or `score` (its "
        "folder, or its results.json): every example with its media, "
        "prompt, answer, gold and scores, from the run's results.json, "
        "sample files and dataset. Writes only results.html and its media "
        "folder results_media/, into the run's folder.",
    )
