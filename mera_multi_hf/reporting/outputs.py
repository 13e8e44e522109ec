"""The write stage of `evaluate` and `score`: every file of a run rendered from its typed
records (the loaded tasks, the scored :class:`~mera_multi_hf.scoring.records.Results`)
and written as one set (:func:`mera_multi_hf.reporting.reports.write_outputs`). What is
private was decided when each split was loaded; this module only asks the records."""

from __future__ import annotations

from mera_multi_hf.reporting.samples import (
    jsonl,
    prediction_records,
    public_logs,
    sample_name,
    sample_records,
)
from mera_multi_hf.scoring.records import Results, TaskResult


def run_files(
    results: Results,
    loaded: list,
    *,
    notes: list[str],
    logs: dict | None = None,
    given_logs: dict | None = None,
    answers: dict | None = None,
    context: int | None = None,
    submission: bool = True,
    stage=None,
) -> dict[str, bytes | str]:
    """Every file of the run but results.json, by name. ``logs``: a run's sample-log
    records per task (example order); ``given_logs``: `score`'s predictions files' lines
    per task; ``answers``: `score`'s predictions per task; ``context``: the dialogue turns
    shown with each question. ``notes`` gets the notes found while rendering. The
    media of results.html are each loaded task's own (``media_of``: the data stage reads
    them, a chunk at a time), each stored once in its media folder (``results_media/``),
    written into ``stage`` (a staging folder of the output folder) as it is made."""
    from concurrent.futures import ThreadPoolExecutor

    from mera_multi_hf.reporting.reports import report_files

    tasks = results.tasks
    # the chart's PNG is encoded without the GIL: made in a thread beside the page
    with ThreadPoolExecutor(1, thread_name_prefix="mera-chart") as pool:
        reports = pool.submit(report_files, results)
        files = _run_files(
            results, loaded, reports, notes, logs, given_logs, answers, context, stage
        )
    if submission and results.run.split == "test":
        files["submission.zip"] = submission_file(
            loaded, tasks, public_logs(loaded, tasks, logs, given_logs)
        )
    return files


def _run_files(results, loaded, reports, notes, logs, given_logs, answers, context, stage) -> dict:
    """:func:`run_files`'s files but the submission; ``reports``: the future of
    :func:`~mera_multi_hf.reporting.reports.report_files`."""
    from mera_multi_hf.reporting.page_media import MediaFolder
    from mera_multi_hf.reporting.results_page import MEDIA_FOLDER, PAGE_NAME, render, task_rows

    tasks = results.tasks
    per_task = {
        d.key: sample_records(d, tasks[d.key], logs[d.key])
        if logs is not None
        else prediction_records(d.examples, answers[d.key], tasks[d.key], d.private)
        for d in loaded
    }
    files = {}
    if logs is not None:
        files = {sample_name(d.key, d.split): jsonl(per_task[d.key]) for d in loaded}
    notes += secrets_in_data(files, answers or {})
    media = MediaFolder(MEDIA_FOLDER, stage)
    rows = [
        row
        for d in loaded
        for row in task_rows(
            d.key, d.split, per_task[d.key], d.examples, d.media_of(), context, d.private, media
        )
    ]
    page = render(list(tasks.values()), results.run, rows, notes, results.summary)
    return {**files, **reports.result(), PAGE_NAME: page, **media.files}


def submission_file(loaded: list, tasks: dict[str, TaskResult], logs: dict) -> bytes:
    """submission.zip: every task's answers (checked against its ids), as the scoring
    filtered them (``ExampleResult.submitted``), and the public copies of the logs."""
    from mera_multi_hf.reporting.submission import packed, submission_zip

    packs = []
    for d in loaded:
        answers = {a.id: a.submitted for a in tasks[d.key].answers}
        packs.append((d.task, *packed(d.task, answers, [e.id for e in d.examples])))
    return submission_zip(packs, logs or None)


def secrets_in_data(files: dict, answers: dict) -> list[str]:
    """One line (printed, and a note of the run) when a secret value the run was given
    is inside its stored prompts or answers: they are data, kept as they are (masking
    them would change the scores and break resuming), so the user checks them."""
    import sys

    from mera_multi_hf.core.masking import holds_secret

    where = [
        name for name, data in files.items() if name.startswith("samples_") and holds_secret(data)
    ]
    if any(holds_secret(str(a)) for task in answers.values() for a in task.values()):
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


def result_notes(results: Results) -> list[str]:
    """The notes on what was scored: no model-index.yaml, tasks that cannot be scored."""
    notes = []
    if not any((results.run.details.get("official_test_split") or {}).values()):
        notes.append(
            "no model-index.yaml: it is written only for tasks run on the whole "
            "official test split from the Hub"
        )
    for result in results.tasks.values():
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
                f"{result.task}/{result.split}: cannot score here: the gold answers "
                f"are hidden;{public} submit submission.zip to the MERA site for scores"
            )
    return notes


def results_table(task_results: list[TaskResult], notes: list[str], files: dict) -> str:
    """The short table both commands print: one row per task and metric, the notes, the
    files written."""
    from mera_multi_hf.core.arguments import text_table
    from mera_multi_hf.reporting.reports import SUMMARY_HEAD, footnotes, summary_rows

    lines = [text_table([SUMMARY_HEAD, *summary_rows(task_results)])]
    lines += [f"note: {note}" for note in footnotes(task_results) + notes]
    folders: dict = {}  # a page's media folder is named once, with its number of files
    for name, path in files.items():
        if "/" in name:
            folders.setdefault(path.parent, []).append(name)
    shown = [str(p) for n, p in files.items() if "/" not in n]
    shown += [f"{folder}/ ({len(names)} files)" for folder, names in folders.items()]
    lines.append("wrote: " + ", ".join(shown))
    return "\n".join(lines)
