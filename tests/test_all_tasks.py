"""The whole benchmark in one run: `mera-multi evaluate --tasks all` on the bundled
samples with the built-in tiny models gives one ZIP with the 18 class-named files, each
holding exactly its sample's test ids, and one result per task."""
from __future__ import annotations

import json
import zipfile

from mera_multi_hf.cli import main
from mera_multi_hf.sample_data import SAMPLES, bundled_sample
from mera_multi_hf.tasks import TASKS, MODALITIES


def _test_ids(task_key: str) -> list[int]:
    from mera_multi_hf import load_task

    return sorted(m["id"] for m in load_task(task_key, source="sample", split="test")["meta"])


def test_evaluate_all_tasks_writes_one_zip_with_18_files(tmp_path, capsys):
    assert set(SAMPLES) == set(TASKS) and all(bundled_sample(k).is_dir() for k in TASKS)
    out = tmp_path / "all"
    assert main(["evaluate", "--tasks", "all", "--output-dir", str(out), "--no-progress",
                 "--max-new-tokens", "4"]) == 0
    printed = capsys.readouterr().out
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

    from mera_multi_hf.tiny_model import TINY_AUDIO_MODEL_ID, TINY_MODEL_ID

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
