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
            "gold": ("" if gold is None else gold) if show_gold and not record.get("gold_private")
            else "hidden (private split)",
            "metrics": [(display_name(m), f"{v:g}") for m, v in metrics.items()],
            "verdict": _verdict(task, metrics) if gold is not None or metrics else "unknown",
            "media": media.get(record["id"], []),
        })
    return rows


def _summary(task_results: list[dict]) -> tuple[list[dict], list[str]]:
    keys = list(dict.fromkeys(m for r in task_results
                              for m in list(r.get("metrics", {})) + list(r.get("judge", {}))))
    out = []
    for r in task_results:
        scores = {m: f"{v:.4f}" for m, v in {**r.get("metrics", {}), **r.get("judge", {})}.items()
                  if v is not None}
        out.append({"label": TASKS[r["task"]].class_name, "split": r["split"],
                    "n": r["n_examples"], "scores": scores, "link": f"task={r['task']}"})
        for name, table in (r.get("breakdown") or {}).items():
            for key, agg in table.items():
                out.append({"label": f"  {TASKS[r['task']].class_name} · {name} {key}",
                            "split": r["split"], "n": agg.get("n_examples"),
                            "scores": {m: f"{agg[m]:.4f}" for m in keys
                                       if agg.get(m) is not None},
                            "link": f"task={r['task']}" + (f"&{name}={quote(key)}" if name
                                                           in FILTERS else "")})
    return out, keys


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
           notes: list[str] = ()) -> str:
    """The page as HTML text."""
    import jinja2

    summary, keys = _summary(task_results)
    _within_budget(rows)
    template = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(Path(__file__).parent)),
        autoescape=True, trim_blocks=True, lstrip_blocks=True,
    ).get_template("results_page.html.j2")
    tasks = list(dict.fromkeys(r["task"] for r in task_results))
    return template.render(
        title=f"MERA Multi results: {run_info.get('model', 'unnamed model')}",
        run_id=run_info.get("run_id", ""), notes=list(notes), summary=summary,
        metric_keys=keys, metric_names=[display_name(m) for m in keys],
        tasks=[{"key": t, "name": TASKS[t].class_name} for t in tasks],
        categories=sorted({r["category"] for r in rows if r["category"]}),
        domains=sorted({r["domain"] for r in rows if r["domain"]}), rows=rows)
