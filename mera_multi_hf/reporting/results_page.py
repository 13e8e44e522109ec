"""results.html: every answer of a run on one static page, beside results.md, with its
media in ``results_media/`` beside it.

One row per example: the media (an image thumbnail; an audio player with the clip's
length; a video re-encoded to VP9 in WebM, which Chromium plays, or its frames where it
cannot be; clips kept below a size limit), the prompt as the model saw it (a dialogue's
earlier turns with the model's reduced answers), the raw generation, the filtered
answer, the gold (never for a private test split) and the per-example scores. Filters by
task, category, domain and right/wrong, a search box, and links from the summary table
to the examples behind each number. No network: the CSS and JS are inline; the rows are
JSON in the page, each text that rows share (an instruction's sentences) once
(:mod:`.page_texts`), drawn a page of rows at a time as they are scrolled to; each medium
is one file in the media folder, named by its content (:mod:`.page_media`).
"""

from __future__ import annotations

import functools
import io
from urllib.parse import quote

from mera_multi_hf.core.errors import MediaError
from mera_multi_hf.reporting.page_media import MediaFolder
from mera_multi_hf.reporting.page_texts import coded_page_data
from mera_multi_hf.scoring.records import RunRecord, Summary, TaskResult
from mera_multi_hf.scoring.registry import display_name
from mera_multi_hf.scoring.run_results import LOCAL_ONLY, PAGE_MEDIA, gold_derived
from mera_multi_hf.tasks.table import TASKS

PAGE_NAME = "results.html"
MEDIA_FOLDER = PAGE_MEDIA.rstrip("/")  # the page's media, beside it
THUMBNAIL = (160, 160)
EMBED_LIMIT = 512 * 1024  # audio/video clips up to this size are kept beside the page
FILTERS = ("category", "domain")  # the breakdowns the page filters by


def thumbnail(raw: bytes) -> bytes:
    """A small JPEG of a picture (the media folder stays small whatever the images)."""
    from PIL import Image

    with Image.open(io.BytesIO(raw)) as img:
        return _jpeg(img)


def _jpeg(img) -> bytes:
    img = img.convert("RGB")
    img.thumbnail(THUMBNAIL)
    buffer = io.BytesIO()
    img.save(buffer, format="JPEG", quality=70)
    return buffer.getvalue()


def _frames(item, folder: MediaFolder, count: int = 3) -> list[str]:
    """Thumbnails of ``count`` frames spread over a video (their paths): what the page
    shows of a clip it cannot play."""
    return [folder.add(_jpeg(frame), "image/jpeg") for frame in item.frames(count)]


PREVIEW_SIDE = 320  # the longer side of a video preview, in pixels
# libvpx's realtime mode at its fastest preset, constant quality: a preview costs about
# as long to encode as to decode the clip
VP9_OPTIONS = {"deadline": "realtime", "cpu-used": "8", "crf": "40", "b": "0", "row-mt": "1"}


def webm_preview(raw: bytes) -> bytes:
    """The clip re-encoded for the page: VP9 in WebM, which every Chromium build plays
    (the datasets' MPEG-4 Part 2 plays in no browser, H.264 not in every Chromium), at
    most PREVIEW_SIDE pixels on its longer side, each frame at its own time."""
    import av

    out = io.BytesIO()
    # bitexact: no random segment id, so the same clip gives the same file (its name)
    with (
        av.open(io.BytesIO(raw)) as src,
        av.open(out, "w", format="webm", container_options={"fflags": "+bitexact"}) as dst,
    ):
        stream = src.streams.video[0]
        scale = min(1.0, PREVIEW_SIDE / max(stream.width, stream.height))
        width, height = (
            max(2, int(side * scale) // 2 * 2) for side in (stream.width, stream.height)
        )
        encoder = dst.add_stream("libvpx-vp9", rate=stream.average_rate or 25)
        encoder.width, encoder.height, encoder.pix_fmt = width, height, "yuv420p"
        encoder.time_base, encoder.options = stream.time_base, dict(VP9_OPTIONS)
        for frame in src.decode(stream):
            small = frame.reformat(width, height, "yuv420p")
            small.pts, small.time_base = frame.pts, frame.time_base
            dst.mux(encoder.encode(small))
        dst.mux(encoder.encode())
    return out.getvalue()


def _audio_seconds(raw: bytes) -> float | None:
    """The clip's length from its header, shown beside the player."""
    try:
        import soundfile

        info = soundfile.info(io.BytesIO(raw))
    except Exception:  # noqa: BLE001 - no soundfile, or a format it does not read: not shown
        return None
    return info.frames / info.samplerate if info.samplerate else None


def _video_item(item, raw: bytes, folder: MediaFolder) -> dict:
    """A playable VP9 preview of a clip, or its frames and the reason it has none."""
    if len(raw) > EMBED_LIMIT:
        return {
            "kind": "note",
            "frames": _frames(item, folder),
            "note": f"{len(raw) / 2**20:.1f} MB, not kept beside the page: its frames are shown",
        }
    try:
        preview = webm_preview(raw)
    except Exception as err:  # noqa: BLE001 - any encoder or decoder failure: frames instead
        return {
            "kind": "note",
            "frames": _frames(item, folder),
            "note": f"could not be re-encoded for the browser ({type(err).__name__}): "
            "its frames are shown",
        }
    return {"kind": "video", "src": folder.add(preview, "video/webm")}


def _element(item, folder: MediaFolder) -> dict:
    """One medium as the page shows it, its file stored in ``folder``."""
    raw = item.data
    if raw is None:  # the data stage could not read its bytes
        raise MediaError(f"{item.field}: no bytes")
    if item.kind == "image":
        return {"kind": "image", "src": folder.add(thumbnail(raw), "image/jpeg")}
    if item.kind == "video":
        return _video_item(item, raw, folder)
    if len(raw) > EMBED_LIMIT:
        return {"kind": "note", "note": f"{len(raw) / 2**20:.1f} MB, not kept beside the page"}
    return {"kind": item.kind, "src": folder.add(raw, item.mime), "seconds": _audio_seconds(raw)}


def media_item(item, folder: MediaFolder) -> dict:
    """One media element of a row, from one media record as the data stage read it (its
    ``kind``, ``sha256``, ``field``, ``data``, ``mime`` and ``frames(n)``): the relative
    path of its thumbnail, preview or clip in ``folder``, or a note saying why there is
    none. A medium that several rows share (the same sha256) is converted once."""
    key = (item.kind, item.sha256)
    if not item.sha256 or key not in folder.shown:
        try:
            shown = _element(item, folder)
        except Exception as err:  # a broken item is shown as such; the page still renders
            shown = {"kind": "note", "note": f"not shown ({type(err).__name__})"}
        if not item.sha256:
            return {"field": item.field, **shown}
        folder.shown[key] = shown
    return {"field": item.field, **folder.shown[key]}


def media_rows(media, ids, folder: MediaFolder) -> dict:
    """Example id -> its media elements, for the examples in ``ids``, their files stored
    in ``folder``. ``media``: example id -> its media records, a mapping or (id, records)
    pairs; pairs are taken one at a time, so only one chunk's bytes are held while the
    page is built."""
    pairs = media.items() if isinstance(media, dict) else media
    return {i: [media_item(m, folder) for m in items] for i, items in pairs if i in ids}


def _histories(task, examples, records: dict, context: int | None) -> dict[int, list[dict]]:
    """A dialogue task's earlier turns per example, with the model's reduced answers."""
    if not task.dialogue or not examples:
        return {}
    from mera_multi_hf.tasks.dialogue import dialogues, reduce_answer

    turns = task.dialogue.context_turns if context is None else context
    out = {}
    for items in dialogues(task, examples).values():
        for k, example in enumerate(items):
            out[example.id] = [
                {
                    "text": items[j].prompt,
                    "answer": reduce_answer(
                        task, records.get(items[j].id, {}).get("generation", "")
                    ),
                }
                for j in range(max(0, k - turns), k)
            ]
    return out


def _verdict(task, metrics: dict) -> str:
    main = next((m for m in task.metrics if m in metrics), None)
    if main is None:
        return "unknown"
    return "right" if metrics[main] >= 1.0 else "wrong"


def task_rows(
    task_key: str,
    split: str,
    records: list[dict],
    examples=None,
    media=(),
    context: int | None = None,
    private: bool = False,
    folder: MediaFolder | None = None,
) -> list[dict]:
    """The page rows of one task, each a dict of fields (a field added here is on the
    page's data, searched and shown where the template shows it). ``records``: the
    sample-file lines (prompt, generation, filtered, target, metrics); ``examples``: the
    split's, for the breakdown keys and a dialogue's history (None: shown without them);
    ``media``: the examples' media as the data stage read them, stored in ``folder``
    (:func:`media_rows`; no folder: shown without); ``private``: the split's answers are
    private (its record says so), its gold is not shown."""
    task = TASKS[task_key]
    by_id = {e.id: e for e in examples or []}
    indexed = {r["id"]: r for r in records}
    wanted = {i for i in indexed if i in by_id}
    media = media_rows(media, wanted, folder) if folder is not None else {}
    history = _histories(task, [by_id[i] for i in indexed if i in by_id], indexed, context)
    rows = []
    for record in records:
        example = by_id.get(record["id"])
        breakdown = example.breakdown if example else {}
        metrics = record.get("metrics") or {}
        gold = record.get("target")
        rows.append(
            {
                "task": task.key,
                "id": record["id"],
                "category": breakdown.get("category", ""),
                "domain": breakdown.get(
                    "domain", (example.meta.get("domain") if example else "") or ""
                ),
                **_prompt_variant(task.key, example, record),
                "prompt": record.get("prompt", ""),
                "history": history.get(record["id"], []),
                "generation": record.get("generation", ""),
                "filtered": record.get("filtered", ""),
                "gold": ("" if gold is None else gold)
                if not (private or record.get("gold_private"))
                else "hidden (private split)",
                "metrics": {m: f"{v:g}" for m, v in metrics.items()},  # named once: render
                "verdict": _verdict(task, metrics) if gold is not None or metrics else "unknown",
                "media": media.get(record["id"], []),
            }
        )
    return rows


def _prompt_variant(task_key: str, example, record: dict) -> dict:
    """A row's prompt variant: the split's example's, else its sample line's (none in a
    run made before variants were recorded)."""
    variant = example.prompt_variant if example else record.get("prompt_variant", "")
    number = example.prompt_variant_number if example else record.get("prompt_variant_number")
    return {
        "prompt_variant": f"{task_key}:{variant}" if variant else "",
        "prompt_label": f"{number} ({variant})" if variant else "",
    }


def _prompt_options(rows: list[dict]) -> list[dict]:
    """The prompt filter's choices: each task's variants in order of first appearance."""
    seen = dict.fromkeys((r["task"], r["prompt_variant"], r["prompt_label"]) for r in rows)
    return [
        {"value": variant, "label": f"{task} {label}"} for task, variant, label in seen if variant
    ]


def _summary(task_results: list[TaskResult], summary: Summary | None, run: RunRecord) -> dict:
    """The tables of results.md, from the same rows (reports.py), with links to the
    examples behind each task and breakdown row."""
    from mera_multi_hf.reporting import prompt_report, reports

    leaderboard = any((run.details.get("official_test_split") or {}).values())
    breakdowns = [
        {
            "title": f"{r.task} by {name}",
            "head": head,
            "rows": [
                {
                    "cells": row,
                    "link": f"task={r.task}"
                    + (f"&{name}={quote(row[0])}" if name in FILTERS else ""),
                }
                for row in rows
            ],
        }
        for r in task_results
        for name, head, rows in reports.breakdown_tables(r)
    ] + prompt_report.page_entries(task_results)
    return {
        "head": reports.SUMMARY_HEAD,
        "rows": [
            {"cells": row, "link": f"task={row[0]}"} for row in reports.summary_rows(task_results)
        ],
        "task_scores": [
            line[2:] for line in reports.task_score_lines(task_results) if line.startswith("- ")
        ],
        "interval_note": reports.INTERVAL_NOTE,
        "totals_head": reports.TOTALS_HEAD,
        "totals": reports.totals_rows(summary, leaderboard) if summary else [],
        "task_score_definition": summary.task_score_definition if summary else None,
        "footnotes": reports.footnotes(task_results),
        "breakdowns": breakdowns,
    }


@functools.cache  # loaded once a process (a run loads it while it waits for answers)
def page_template():
    from mera_multi_hf.reporting.page_templates import environment

    env = environment()
    env.get_template("media.html.j2")  # the macros it imports, loaded now, not as it renders
    return env.get_template("results_page.html.j2")


def render(
    task_results: list[TaskResult],
    run: RunRecord,
    rows: list[dict],
    notes: list[str] = (),
    summary: Summary | None = None,
) -> str:
    """The page as HTML text; ``task_results``: TaskResult records (mera_multi_hf.scoring.records);
    ``summary``: the run's totals (scoring.summarize), shown as in results.md. The banner
    says the page holds private answers when a task's record says so (``private``)."""
    from mera_multi_hf.reporting.reports import answered_by

    template = page_template()
    tasks = list(dict.fromkeys(r.task for r in task_results))
    private = any(gold_derived(r) for r in task_results)
    return template.render(
        local_only=LOCAL_ONLY if private else None,
        title=f"MERA Multi results: {answered_by(task_results, run)}",
        run_id=run.run_id or "",
        notes=list(notes),
        summary=_summary(task_results, summary, run),
        tasks=[{"key": t, "name": TASKS[t].class_name} for t in tasks],
        categories=sorted({r["category"] for r in rows if r["category"]}),
        domains=sorted({r["domain"] for r in rows if r["domain"]}),
        prompt_variants=_prompt_options(rows),
        data=coded_page_data(
            rows,
            task_names={t: TASKS[t].class_name for t in tasks},
            metric_names={m: display_name(m) for r in rows for m in r["metrics"]},
        ),
    )
