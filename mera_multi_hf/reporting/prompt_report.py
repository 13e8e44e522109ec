"""The prompt tables as results.md and the page show them: each task's variants (n,
every metric with its interval, whether the template asks for the answer after the
marker), the permutation test's line, and what the marker variants explain. Rendered
from results.json's ``prompts`` (:mod:`mera_multi_hf.scoring.prompt_table`)."""

from __future__ import annotations

from mera_multi_hf.reporting.table_text import fmt_interval, md_table
from mera_multi_hf.scoring.records import TaskResult
from mera_multi_hf.scoring.registry import display_name
from mera_multi_hf.tasks.declarations import ANSWER_MARKER

INTRO = (
    "Each example is asked in one of its task's prompt variants (the instruction template "
    "it carries). Per variant: n and each metric with its interval; the line under a table "
    "is a permutation test of whether the score depends on the variant (variants shuffled "
    "within the declared strata, clusters kept together) with the spread between the best "
    "and the worst variant."
)
ABSENT = "no prompt table: its results.json was written before prompt variants were recorded"


def _label(row: dict) -> str:
    return f"{row['number']} ({row['variant']})"


def prompt_rows(result: TaskResult) -> tuple[tuple, list[tuple[str, tuple]]]:
    """(head, [(variant id, cells)]) of a task's prompt table (no rows: none, or one
    variant)."""
    table = result.prompts or {}
    rows = table.get("variants") or []
    if len(rows) < 2:
        return (), []
    names = [m for m in rows[0]["metrics"]]
    head = ("prompt", "n", *(display_name(m) for m in names), f"answer after {ANSWER_MARKER}")
    return head, [
        (
            row["variant"],
            (
                _label(row),
                str(row["n_examples"]),
                *(fmt_interval(row["metrics"].get(m), row["uncertainty"].get(m)) for m in names),
                "yes" if row["asks_reasoning_before_marker"] else "",
            ),
        )
        for row in rows
    ]


def prompt_notes(result: TaskResult) -> list[str]:
    """The lines under a task's prompt table (one line alone where it has no table)."""
    table = result.prompts
    if not table:
        return [ABSENT]
    rows, effect = table.get("variants") or [], table.get("effect") or {}
    if len(rows) < 2:
        shown = f" ({rows[0]['variant']})" if rows else ""
        return [f"one prompt variant in this split{shown}: no table, nothing to compare"]
    lines = []
    if effect:
        lines.append(f"{display_name(effect['metric'])}: {effect['sentence']}.")
    if table.get("strata"):
        per = table.get("variants_per_stratum") or {}
        lines.append(
            f"Variants counted within {table['strata']} (its block of the template stands "
            f"as a placeholder): {len(per)} strata, {max(per.values(), default=0)} variants at "
            "most in one."
        )
    lines += _marker_line(table.get("marker"))
    return lines


def _marker_line(marker: dict | None) -> list[str]:
    """What the variants that ask for the answer after the marker explain."""
    if not marker:
        return []
    shown = ", ".join(
        f"{display_name(m)} {fmt_interval(v, marker['uncertainty'].get(m))}"
        for m, v in marker["metrics"].items()
    )
    return [
        f"{len(marker['variants'])} variant(s) ask for reasoning and then the answer after "
        f"{ANSWER_MARKER}, {marker['share']:.0%} of the examples ({marker['n_examples']}); "
        f"over them {shown}. The whole-answer EM scores a reply that follows them near 0; "
        "the extracted EM reads the answer after the marker (docs/prompts.md)."
    ]


def page_entries(task_results: list[TaskResult]) -> list[dict]:
    """The page's prompt tables (as its breakdown tables: title, head, rows linking to the
    variant's examples, notes), then one entry of a line for each other scored task."""
    entries, single = [], []
    for result in (r for r in task_results if r.scorable):
        head, rows = prompt_rows(result)
        if not rows:
            single.append(f"{result.task}: {prompt_notes(result)[0]}")
            continue
        link = f"task={result.task}&prompt={result.task}:"
        entries.append(
            {
                "title": f"{result.task} by prompt variant",
                "head": head,
                "rows": [{"cells": cells, "link": link + variant} for variant, cells in rows],
                "note": prompt_notes(result),
            }
        )
    if single:
        entries.append({"title": "Prompt variants", "head": (), "rows": [], "note": single})
    return entries


def markdown_section(task_results: list[TaskResult]) -> list[str]:
    """results.md's prompt-variant section: the page's tables and lines, as Markdown."""
    entries = page_entries(task_results)
    lines = ["", "## Prompt variants", "", INTRO] if entries else []
    for entry in entries:
        if entry["rows"]:
            table = md_table(entry["head"], [row["cells"] for row in entry["rows"]])
            lines += ["", f"### {entry['title']}", "", *table, "", *entry["note"]]
        else:
            lines += ["", *(f"- {line}" for line in entry["note"])]
    return lines
