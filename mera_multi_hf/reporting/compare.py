"""`mera-multi compare RUN_A RUN_B`: is the difference between two runs real?

What it reports and writes: ``DESCRIPTION`` in :mod:`mera_multi_hf.pipeline.compare`
(the command's --help)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.reporting.compare_protocol import protocol_differences
from mera_multi_hf.reporting.compare_stats import compare_task, variants_note, verdict
from mera_multi_hf.scoring.records import Results
from mera_multi_hf.scoring.uncertainty import mean_over_tasks, settings


def read_run(path: str | Path) -> Results:
    """A run's results.json (the folder or the file itself), with its folder."""
    return Results.read(path)


def _scored(doc: Results) -> dict:
    """Task -> results.json's entry, of the tasks scored with a per-example table."""
    return {k: r.to_dict() for k, r in doc.tasks.items() if r.scorable and r.examples}


def compare_runs(path_a, path_b, *, force: bool = False) -> dict:
    """The comparison of two runs as data (what compare.json holds)."""
    return compare_docs(read_run(path_a), read_run(path_b), force=force)


def compare_docs(a: Results, b: Results, *, force: bool = False) -> dict:
    """The comparison of two runs' results (as read_run reads them)."""
    ta, tb = _scored(a), _scored(b)
    common = [k for k in ta if k in tb]
    if not common:
        raise MeraError(
            f"{a.folder} and {b.folder} share no task scored with per-example "
            "results (runs scored before this version have none: score them again)"
        )
    tasks, totals = {}, []
    for key in common:
        tasks[key], part = compare_task(key, ta[key], tb[key])
        if part:
            totals.append(part)
    differ = {k: t["differing_ids"] for k, t in tasks.items() if t["examples_differ"]}
    if differ and not force:
        shown = "; ".join(f"{k}: ids {', '.join(map(str, ids[:5]))}" for k, ids in differ.items())
        raise MeraError(
            f"the runs were made on different data ({shown}): the same id holds "
            "another example (prompt, gold or meta); pass --force to compare anyway"
        )
    overall = mean_over_tasks(totals)
    if overall:
        for field in ("a", "b", "difference"):
            overall[field] = float(np.mean([s[field] for _, s in totals]))
        overall["verdict"] = verdict(overall)
        overall["n_tasks"] = len(totals)
    about_a, about_b = _about(a), _about(b)
    if about_a["model"] == about_b["model"]:  # one model twice: name the runs by folder
        about_a["label"], about_b["label"] = about_a["folder"], about_b["folder"]
    return {
        "a": about_a,
        "b": about_b,
        "gold_private": gold_private(a, b, common),
        "bootstrap": settings(),
        "forced": bool(differ),
        "protocol_differences": protocol_differences(a, b, common),
        "not_compared": {
            "only_in_a": sorted(set(ta) - set(tb)),
            "only_in_b": sorted(set(tb) - set(ta)),
            "not_scored": sorted((set(a.tasks) | set(b.tasks)) - set(ta) - set(tb)),
        },
        "tasks": tasks,
        "overall": overall,
        "prompt_variants_note": variants_note(common, (("A", a.folder, ta), ("B", b.folder, tb))),
    }


def gold_private(a: Results, b: Results, tasks) -> dict | None:
    """compare.json's and compare.html's mark: per-example outcomes of a private split
    (who got which example right) give its gold answers back, so the files are local only."""
    from mera_multi_hf.reporting.compare_page import MEDIA_FOLDER
    from mera_multi_hf.scoring.run_results import LOCAL_ONLY, gold_derived

    private = sorted({k for doc in (a, b) for k in tasks if gold_derived(doc.tasks[k])})
    if not private:
        return None
    return {
        "local_only": LOCAL_ONLY,
        "tasks": private,
        "files": ["compare.json", "compare.html", f"{MEDIA_FOLDER}/"],
        "note": "the per-example outcomes of these tasks derive from a private split's gold "
        "answers: never upload or publish these files",
    }


def _about(doc: Results) -> dict:
    run = doc.run
    return {
        "folder": doc.folder,
        "run_id": run.run_id,
        "model": run.model,
        "mode": run.mode,
        "label": str(run.model),
    }


def write_report(
    out,
    stem: str,
    text: str,
    png: bytes,
    doc: dict,
    *,
    inputs=(),
    extra: dict | None = None,
    shown: str | None = None,
) -> None:
    """Write ``<stem>.md/.png/.json`` (and ``extra``) into ``out``, a folder of reports
    (outputs.add_files: a folder holding anything else is refused; ``inputs``: the run
    folders read; ``extra``: more files, or a function of the staging folder they are
    written into, see add_files), and print ``shown`` (default: the text). The files that ``doc``'s
    ``gold_private`` lists are closed (0600; a listed folder 0700); the page's media
    folder (``<stem>_media/``) is replaced whole."""
    from mera_multi_hf.core.outputs import add_files

    files = {
        f"{stem}.md": text,
        f"{stem}.png": png,
        f"{stem}.json": json.dumps(doc, ensure_ascii=False, indent=2) + "\n",
    }
    written = add_files(
        out,
        (lambda stage: {**files, **extra(stage)})
        if callable(extra)
        else {**files, **(extra or {})},
        kind="report",
        inputs=inputs,
        private=(doc.get("gold_private") or {}).get("files", ()),
        replaces=[f"{stem}_media/"],
    )
    print(text if shown is None else shown)
    folders = sorted({n.split("/")[0] for n in written if "/" in n})  # a media folder: once
    shown_names = [n for n in written if "/" not in n] + [f"{f}/" for f in folders]
    print(f"wrote {', '.join(shown_names)} to {out}")
