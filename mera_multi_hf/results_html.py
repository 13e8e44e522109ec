"""results.html: every answer of a run on one self-contained static page, beside
results.md.

One row per example: the media (an image thumbnail; audio and video players, embedded
below a size limit), the prompt as the model saw it (a dialogue's earlier turns with the
model's reduced answers), the raw generation, the filtered answer, the gold (never for a
private test split) and the per-example scores. Filters by task, category, domain and
right/wrong, a search box, and links from the summary table to the examples behind each
number. No network: the CSS and JS are inline, the media are data URIs.
"""
from __future__ import annotations

import base64
import io
from pathlib import Path
from urllib.parse import quote

from .media import _av_mime, media_bytes
from .metric_registry import display_name
from .tasks import TASKS

PAGE_NAME = "results.html"
THUMBNAIL = (160, 160)
EMBED_LIMIT = 512 * 1024  # audio/video clips up to this size are embedded in the page
FILTERS = ("category", "domain")  # the breakdowns the page filters by
PAGE_MEDIA_BUDGET = 64 * 2**20  # past this many bytes of media the page shows notes instead


def thumbnail(raw: bytes) -> str:
    """A small JPEG data URI of a picture (the page stays small whatever the images)."""
    from PIL import Image

    with Image.open(io.BytesIO(raw)) as img:
        return _jpeg_uri(img)


def _jpeg_uri(img) -> str:
    img = img.convert("RGB")
    img.thumbnail(THUMBNAIL)
    buffer = io.BytesIO()
    img.save(buffer, format="JPEG", quality=70)
    return "data:image/jpeg;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _frame(raw: bytes) -> str | None:
    """A video's middle frame as a thumbnail: seen even where the browser lacks the
    video's codec (MPEG-4 Part 2 plays nowhere, H.264 not in every Chromium build)."""
    from .media import sample_frames

    frames = sample_frames(io.BytesIO(raw), 3)
    return _jpeg_uri(frames[len(frames) // 2]) if frames else None


def media_item(kind: str, field: str, value) -> dict:
    """One media element of a row: a data URI, or a note saying why there is none."""
    try:
        raw = media_bytes(value)
        if kind == "image":
            return {"kind": "image", "field": field, "src": thumbnail(raw)}
        frame = _frame(raw) if kind == "video" else None
        if len(raw) > EMBED_LIMIT:
            return {"kind": "note", "field": field, "frame": frame,
                    "note": f"{len(raw) / 2**20:.1f} MB, not embedded"}
        src = f"data:{_av_mime(kind, raw)};base64," + base64.b64encode(raw).decode("ascii")
        return {"kind": kind, "field": field, "src": src, "frame": frame}
    except Exception as err:  # a broken item is shown as such; the page still renders
        return {"kind": "note", "field": field, "note": f"not shown ({type(err).__name__})"}


def _media_rows(task, examples, dataset) -> dict[int, list[dict]]:
    """Example id -> its media elements (empty when the dataset is not at hand)."""
    if dataset is None or not task.media_fields:
        return {}
    from .runner.request import arrow_view

    view = arrow_view(dataset)
    out = {}
    for start in range(0, len(examples), 64):
        part = examples[start:start + 64]
        inputs = view[[e.index for e in part]].column("inputs").to_pylist()
        for example, row in zip(part, inputs):
            out[example.id] = [media_item(task.modality, name, row[name])
                               for name in example.media_fields]
    return out


def _histories(task, examples, records: dict, context: int | None) -> dict[int, list[dict]]:
    """A dialogue task's earlier turns per example, with the model's reduced answers."""
    if not task.dialogue or not examples:
        return {}
    from .runner.dialogue import dialogues, reduce_answer

    turns = task.dialogue.context_turns if context is None else context
    out = {}
    for items in dialogues(task, examples).values():
        for k, example in enumerate(items):
            out[example.id] = [
                {"text": items[j].prompt,
                 "answer": reduce_answer(task, records.get(items[j].id, {}).get("generation", ""))}
                for j in range(max(0, k - turns), k)]
    return out


def _verdict(task, metrics: dict) -> str:
    main = next((m for m in task.metrics if m in metrics), None)
    if main is None:
        return "unknown"
    return "right" if metrics[main] >= 1.0 else "wrong"


def task_rows(task_key: str, split: str, records: list[dict], examples=None, dataset=None,
              context: int | None = None) -> list[dict]:
    """The page rows of one task. ``records``: the sample-file lines (prompt, generation,
    filtered, target, metrics); ``examples``/``dataset``: the split, for the media, the
    breakdown keys and a dialogue's history (None: shown without them)."""
    task = TASKS[task_key]
    by_id = {e.id: e for e in examples or []}
    indexed = {r["id"]: r for r in records}
    media = _media_rows(task, [by_id[i] for i in indexed if i in by_id], dataset)
    history = _histories(task, [by_id[i] for i in indexed if i in by_id], indexed, context)
    show_gold = task.public or split != "test"
    rows = []
    for record in records:
        example = by_id.get(record["id"])
        breakdown = example.breakdown if example else {}
        metrics = record.get("metrics") or {}
        gold = record.get("target")
        rows.append({
            "task": task.key, "task_name": task.class_name, "id": record["id"],
            "anchor": f"{task.key}-{record['id']}",
            "category": breakdown.get("category", ""),
            "domain": breakdown.get("domain", (example.meta.get("domain") if example else "")
                                    or ""),
            "prompt": record.get("prompt", ""), "history": history.get(record["id"], []),
            "generation": record.get("generation", ""), "filtered": record.get("filtered", ""),
            "gold": ("" if gold is None else gold) if show_gold else "hidden (private split)",
            "metrics": [(display_name(m), f"{v:g}") for m, v in metrics.items()],
            "verdict": _verdict(task, metrics) if gold is not None or metrics else "unknown",
            "media": media.get(record["id"], []),
        })
    return rows


def _summary(task_results: list[dict], summary: dict | None, run_info: dict) -> dict:
    """The tables of results.md, from the same rows (reports.py), with links to the
    examples behind each task and breakdown row."""
    from . import reports

    leaderboard = any((run_info.get("official_test_split") or {}).values())
    breakdowns = [{"title": f"{r['task']} by {name}", "head": head, "rows": [
        {"cells": row, "link": f"task={r['task']}" + (f"&{name}={quote(row[0])}"
                                                      if name in FILTERS else "")}
        for row in rows]} for r in task_results for name, head, rows in reports.breakdown_tables(r)]
    return {
        "head": reports.SUMMARY_HEAD,
        "rows": [{"cells": row, "link": f"task={row[0]}"}
                 for row in reports.summary_rows(task_results)],
        "task_scores": [line[2:] for line in reports.task_score_lines(task_results)
                        if line.startswith("- ")],
        "interval_note": reports.INTERVAL_NOTE,
        "totals_head": reports.TOTALS_HEAD,
        "totals": reports.totals_rows(summary, leaderboard) if summary else [],
        "task_score_definition": (summary or {}).get("task_score_definition"),
        "footnotes": reports.footnotes(task_results), "breakdowns": breakdowns}


def _within_budget(rows: list[dict], budget: int = PAGE_MEDIA_BUDGET) -> None:
    """Keep a big run's page openable: media past the budget become notes."""
    used = 0
    for row in rows:
        for i, item in enumerate(row["media"]):
            size = len(item.get("src") or "") + len(item.get("frame") or "")
            used += size
            if size and used > budget:
                row["media"][i] = {"kind": "note", "field": item["field"],
                                   "note": "not embedded (the page's media limit is reached)"}


def render(task_results: list[dict], run_info: dict, rows: list[dict],
           notes: list[str] = (), summary: dict | None = None) -> str:
    """The page as HTML text; ``summary``: the run's totals (scoring.summarize), shown
    as in results.md."""
    import jinja2

    _within_budget(rows)
    template = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(Path(__file__).parent)),
        autoescape=True, trim_blocks=True, lstrip_blocks=True,
    ).get_template("results_page.html.j2")
    tasks = list(dict.fromkeys(r["task"] for r in task_results))
    return template.render(
        title=f"MERA Multi results: {run_info.get('model', 'unnamed model')}",
        run_id=run_info.get("run_id", ""), notes=list(notes),
        summary=_summary(task_results, summary, run_info),
        tasks=[{"key": t, "name": TASKS[t].class_name} for t in tasks],
        categories=sorted({r["category"] for r in rows if r["category"]}),
        domains=sorted({r["domain"] for r in rows if r["domain"]}), rows=rows)
