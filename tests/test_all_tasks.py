"""The whole benchmark in one run: `mera-multi evaluate --tasks all` on the bundled
samples with the built-in tiny models gives one ZIP with the 18 class-named files, each
holding exactly its sample's test ids, and one result per task."""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path

from mera_multi_hf.demo.sample_data import SAMPLES, bundled_sample
from mera_multi_hf.tasks.table import MODALITIES, TASKS


def _test_ids(task_key: str) -> list[int]:
    from mera_multi_hf import load_task

    return sorted(m["id"] for m in load_task(task_key, source="sample", split="test")["meta"])


def test_evaluate_all_tasks_writes_one_zip_with_18_files(bundled_run):
    assert set(SAMPLES) == set(TASKS) and all(bundled_sample(k).is_dir() for k in TASKS)
    out, done = bundled_run  # conftest: run once, shared with the golden and schema tests
    assert done.returncode == 0, done.stderr[-2000:]
    printed = done.stdout
    with zipfile.ZipFile(out / "submission.zip") as zf:
        names = sorted(n for n in zf.namelist() if n.endswith(".json"))
        assert names == sorted(f"{t.class_name}.json" for t in TASKS.values())
        for task in TASKS.values():
            rows = json.loads(zf.read(f"{task.class_name}.json"))["data"]["test"]
            ids = _test_ids(task.key)
            if task.dialogue:  # the official packer's ruTiE ids: (id - smallest id) + 11
                ids = [i - ids[0] + 11 for i in ids]
            assert sorted(r["meta"]["id"] for r in rows) == ids, task.key
    doc = json.loads((out / "results.json").read_text())
    assert set(doc["tasks"]) == set(TASKS)
    assert set(doc["summary"]["modality"]) == set(MODALITIES)
    assert doc["summary"]["overall"]["n_tasks"] == len(TASKS)
    _every_task_names_its_model(out, doc, printed)


def _every_task_names_its_model(out, doc, printed) -> None:
    """The audio tasks are answered by the built-in audio model: the console, results.json,
    the manifest and every sample line (those in logs_public.zip too) say so."""
    import io

    from mera_multi_hf.demo.builtin_models import TINY_AUDIO_MODEL_ID, TINY_MODEL_ID

    manifest = json.loads((out / "run_manifest.json").read_text())
    for task in TASKS.values():
        model = TINY_AUDIO_MODEL_ID if task.modality == "audio" else TINY_MODEL_ID
        assert doc["tasks"][task.key]["model"] == model, task.key
        assert manifest["tasks"][f"{task.key}/test"]["model"] == model, task.key
        assert (f"model of {task.key}: {model}" in printed) == (model != TINY_MODEL_ID)
        lines = (out / f"samples_{task.key}_test.jsonl").read_text().splitlines()
        assert {json.loads(line)["model"] for line in lines} == {model}, task.key
        with zipfile.ZipFile(out / "submission.zip") as zf:
            with zipfile.ZipFile(io.BytesIO(zf.read("logs_public.zip"))) as logs:
                public = logs.read(f"samples_{task.key}_test.jsonl").decode().splitlines()
        assert {json.loads(line)["model"] for line in public} == {model}, task.key
    assert "audio_model" in doc["run"]["backend_options"]  # both models' options recorded


# The golden record of the bundled run: every number of results.json's "tasks" and
# "summary" (by its path) and every submission answer (by task file and id). A change
# of layout or of code that is meant to keep behaviour must keep it; a change that means
# to alter a number rewrites it on purpose: MERA_WRITE_GOLDEN=1 python -m pytest -k golden.
GOLDEN = Path(__file__).parent / "golden" / "all_tasks.json"


def _numbers(node, path=""):
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _numbers(value, f"{path}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _numbers(value, f"{path}[{index}]")
    elif isinstance(node, (int, float)) and not isinstance(node, bool):
        yield path, node


def _golden_record(out) -> dict:
    doc = json.loads((out / "results.json").read_text())
    numbers = dict(_numbers({"tasks": doc["tasks"], "summary": doc["summary"]}))
    answers = {}
    with zipfile.ZipFile(out / "submission.zip") as zf:
        for name in sorted(n for n in zf.namelist() if n.endswith(".json")):
            rows = json.loads(zf.read(name))["data"]["test"]
            answers[name] = {str(r["meta"]["id"]): r["outputs"] for r in rows}
    return {"numbers": numbers, "answers": answers}


def test_golden_numbers_and_answers_of_the_bundled_run(bundled_run):
    """`--tasks all` on the bundled samples gives exactly the recorded numbers and answers.
    Run as a separate process through `python -m mera_multi_hf`, the one entry that no
    move of the package's modules changes (conftest's bundled_run, once a session)."""
    out, done = bundled_run
    assert done.returncode == 0, done.stderr[-2000:]
    record = _golden_record(out)
    if os.environ.get("MERA_WRITE_GOLDEN") == "1":
        GOLDEN.write_text(
            json.dumps(record, ensure_ascii=False, indent=1, sort_keys=True) + "\n",
            encoding="utf-8",
        )
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert record["answers"] == golden["answers"]
    changed = {
        p: (golden["numbers"].get(p), v)
        for p, v in record["numbers"].items()
        if golden["numbers"].get(p) != v
    }
    missing = sorted(set(golden["numbers"]) - set(record["numbers"]))
    assert not changed and not missing, (dict(list(changed.items())[:10]), missing[:10])
