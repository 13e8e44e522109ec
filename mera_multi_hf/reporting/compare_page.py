"""compare.html: two runs' answers side by side, example by example, written by
``mera-multi compare`` beside compare.md. On top, the score table (both runs, A − B with
its interval, the verdict); then one row per example with its media (as results.html
shows them, from run A's dataset when it is at hand), the prompt, both answers, the gold
and the outcome, in task and id order. Filters: task, outcome (only A right, only B
right, both right, both wrong) and a search box; no network: the rows are JSON in the
page, each shared text once (as results.html's, :mod:`.page_texts`), drawn a page at a
time, and the media are files in ``compare_media/`` beside it, each once (as
results.html's, :mod:`.page_media`). A gold answer is shown only where the
run's own sample line may show it (never a private split's)."""

from __future__ import annotations

from pathlib import Path

from mera_multi_hf.core import json_read
from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.scoring.run_results import LOCAL_ONLY
from mera_multi_hf.tasks.table import get_task

PAGE_NAME = "compare.html"
MEDIA_FOLDER = "compare_media"  # the page's media, beside it


def _sample_lines(folder: Path, task: str) -> dict[int, dict]:
    """The run's sample lines of one task, by example id (none when it kept no log)."""
    lines = {}
    for file in sorted(folder.glob(f"samples_{task}_*.jsonl")):
        for _, record in json_read.iter_jsonl(file):
            if not isinstance(record, dict):
                raise MeraError(f"{file}: a line that is not a JSON object")
            lines[record.get("id")] = record
    return lines


def _answers(doc, task: str, lines: dict) -> dict:
    """id -> the run's answer: its sample log, else (a `score` run) its predictions."""
    if lines:
        return {i: r.get("generation", "") for i, r in lines.items()}
    from mera_multi_hf.scoring.predictions import read_predictions

    answers = {}
    for file in doc.run.details.get("predictions") or []:
        if Path(file).exists():
            answers.update(read_predictions(file, task, doc.run.split))
    return answers


def _right(task: str, result) -> dict:
    """id -> whether the task's first official per-example metric scored 1."""
    table = result.examples or {}
    main = next((m for m in get_task(task).metrics if m in table.get("scores", {})), None)
    if main is None:
        return {}
    return {i: s >= 1.0 for i, s in zip(table["id"], table["scores"][main])}


OUTCOMES = {
    (True, False): "only-a",
    (False, True): "only-b",
    (True, True): "both-right",
    (False, False): "both-wrong",
}


def id_order(example_id) -> tuple:
    """Sort key of example ids: numbers by value (1, 2, 10), then other ids as text."""
    text = str(example_id)
    return (0, int(text), "") if text.lstrip("-").isdigit() else (1, 0, text)


def _task_rows(task: str, doc_a, doc_b) -> list[dict]:
    la = _sample_lines(Path(doc_a.folder), task)
    lb = _sample_lines(Path(doc_b.folder), task)
    ans_a, ans_b = _answers(doc_a, task, la), _answers(doc_b, task, lb)
    right_a, right_b = _right(task, doc_a.tasks[task]), _right(task, doc_b.tasks[task])
    ids = sorted(set(right_a) & set(right_b), key=id_order)
    rows = []
    for example_id in ids:
        line = la.get(example_id) or lb.get(example_id) or {}
        private = line.get("gold_private") or not line
        rows.append(
            {
                "task": task,
                "id": example_id,
                "prompt": line.get("prompt", ""),
                "a": ans_a.get(example_id, ""),
                "b": ans_b.get(example_id, ""),
                "gold": "(private split: not shown)" if private else line.get("target"),
                "outcome": OUTCOMES[(right_a[example_id], right_b[example_id])],
                "media": [],
            }
        )
    return rows


def compare_rows(doc_a, doc_b, tasks) -> list[dict]:
    """One row per example both runs scored, in task and id order (``doc_*``: the runs'
    results.json as compare reads them), without their media (:func:`compare_page` adds
    them)."""
    return [row for task in tasks for row in _task_rows(task, doc_a, doc_b)]


def render(result: dict, rows: list[dict], notes: list[str] = ()) -> str:
    """The page as HTML text."""
    from mera_multi_hf.reporting.compare_markdown import SCORE_HEAD, overall_line, score_rows
    from mera_multi_hf.reporting.page_templates import environment
    from mera_multi_hf.reporting.page_texts import coded_page_data

    env = environment()
    counts = {k: sum(r["outcome"] == k for r in rows) for k in OUTCOMES.values()}
    return env.get_template("compare_page.html.j2").render(
        local_only=LOCAL_ONLY if result.get("gold_private") else None,
        a=result["a"]["label"],
        b=result["b"]["label"],
        data=coded_page_data(rows),
        counts=counts,
        tasks=sorted({r["task"] for r in rows}),
        score_head=SCORE_HEAD,
        score_rows=score_rows(result, variants=True),
        overall=overall_line(result["overall"]) if result["overall"] else None,
        notes=list(notes),
    )


def compare_page(
    result: dict, rows: list[dict], media: dict, notes: list[str] = (), stage=None
) -> dict:
    """compare.html of a comparison (compare_runs' result) and its rows (:func:`compare_rows`),
    and its media files (``compare_media/...``): name -> content. ``media``: task -> its
    examples' media as the data stage read them from run A's split (results_page.media_rows
    takes them); ``notes``: a line per task shown without."""
    from mera_multi_hf.reporting.page_media import MediaFolder
    from mera_multi_hf.reporting.results_page import media_rows

    folder = MediaFolder(MEDIA_FOLDER, stage)  # written into ``stage`` as made, if given
    for task, items in media.items():
        shown = [row for row in rows if row["task"] == task]
        elements = media_rows(items, {row["id"] for row in shown}, folder)
        for row in shown:
            row["media"] = elements.get(row["id"], [])
    return {PAGE_NAME: render(result, rows, notes), **folder.files}
