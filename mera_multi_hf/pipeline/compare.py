"""`mera-multi compare RUN_A RUN_B` as one line: read both runs, compare them
(:func:`~mera_multi_hf.reporting.compare.compare_docs`), load run A's split for the
examples' media (the data stage), then render and write compare.md/.json/.png/.html
(reporting, which is handed the media and loads nothing)."""

from __future__ import annotations

from dataclasses import dataclass

from mera_multi_hf.core.arguments import OVERWRITE_HELP, add_command, opt, output_dir_opt
from mera_multi_hf.core.errors import MeraError

# what `compare` does, for its --help (here, not in reporting.compare: --help loads no numpy)
DESCRIPTION = " ".join(
    """Two run folders (written by `evaluate` or `score`) are paired by task and example id from
the per-example tables in their results.json. Per task, metric and breakdown row it
reports the difference A - B, a paired bootstrap interval resampled by the task's
clusters (the same resamples for both runs), an exact McNemar p-value for 0/1 metrics and
the counts of examples only A / only B got right. Runs whose examples differ (prompt,
gold or meta of a paired id) are refused unless --force; every protocol difference found
in the run records is listed. Prints a short table (per task and metric: both runs,
A - B with its interval, the verdict); writes compare.md (everything, breakdowns
included), compare.json, compare.png and compare.html (the score table, then the two
runs' answers side by side with each example's media).
""".split()
)


def run_media(doc, task_key: str, ids, notes: list[str]):
    """The media of these examples of one task, from the run's own split: (id, media)
    pairs, read chunk by chunk (none, and a note, when the split is not at hand: a Hub
    copy offline, a moved folder)."""
    from mera_multi_hf.data.examples import make_examples, media_of
    from mera_multi_hf.data.loading import load_split
    from mera_multi_hf.tasks.table import get_task

    task = get_task(task_key)
    if not task.media_fields:
        return ()
    sources = doc.run.details.get("dataset_source")
    source = sources.get(task_key) if isinstance(sources, dict) else sources
    try:
        # plain Arrow, mapped: the pages of the media read are handed back
        dataset = load_split(task, source=source, split=doc.tasks[task_key].split or doc.run.split)
    except MeraError as err:
        notes.append(f"{task_key}: shown without media: {err}")
        return ()
    wanted = set(ids)
    return media_of(task, [e for e in make_examples(task, dataset) if e.id in wanted], dataset)


def compare_files(result: dict, a, b, stage=None) -> dict:
    """compare.html of two runs (read_run) and their comparison, and its media folder
    (written into ``stage``, a staging folder of the output folder, as made): the rows,
    then run A's media for them, then the page."""
    from mera_multi_hf.reporting.compare_page import compare_page, compare_rows

    rows, notes = compare_rows(a, b, list(result["tasks"])), []
    if result.get("prompt_variants_note"):
        notes.append(result["prompt_variants_note"])
    media = {
        task: run_media(a, task, [r["id"] for r in rows if r["task"] == task], notes)
        for task in result["tasks"]
    }
    return compare_page(result, rows, media, notes, stage)


@dataclass
class CompareOptions:
    """The options of `mera-multi compare`."""

    run_a: str | None = opt(
        None,
        "a run folder (evaluate or score) or its results.json",
        positional=True,
        metavar="RUN_A",
        path=True,
    )
    run_b: str | None = opt(None, "the other run", positional=True, metavar="RUN_B", path=True)
    out: str = output_dir_opt(
        "compare",
        "folder for compare.md/.json/.png/.html (default: compare)",
    )
    force: bool = opt(
        False, "compare even where the same id holds different examples in the two runs"
    )
    overwrite: bool = opt(False, OVERWRITE_HELP)


def cmd_compare(options: CompareOptions) -> int:
    from mera_multi_hf.reporting import compare as comparing
    from mera_multi_hf.reporting.compare_chart import chart_png
    from mera_multi_hf.reporting.compare_markdown import console, markdown

    a, b = comparing.read_run(options.run_a), comparing.read_run(options.run_b)
    result = comparing.compare_docs(a, b, force=options.force)
    comparing.write_report(
        options.out,
        "compare",
        markdown(result),
        chart_png(result),
        result,
        inputs=[options.run_a, options.run_b],
        extra=lambda stage: compare_files(result, a, b, stage),
        shown=console(result, options.out),
    )
    return 0


def add_parser(sub) -> None:
    add_command(
        sub,
        "compare",
        CompareOptions,
        cmd_compare,
        help="is the difference between two runs real? (paired intervals, McNemar, "
        "protocol differences)",
        description=DESCRIPTION,
    )
