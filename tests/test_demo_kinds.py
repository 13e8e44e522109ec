"""The demo at the edge: the bundled samples and the built-in tiny models plug into the
stages through the registries any user's data or model would (a source kind, a model
kind); no module below demo/ names them; the names the results show lead somewhere."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from mera_multi_hf.cli.main import main
from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.data import sources
from mera_multi_hf.demo.builtin_models import TINY_AUDIO_MODEL_ID, TINY_MODEL_ID
from mera_multi_hf.demo.tiny_models import FAMILIES
from mera_multi_hf.generation.backends import make_backend, model_kinds
from mera_multi_hf.generation.checks import check_model

PACKAGE = Path(__file__).resolve().parent.parent / "mera_multi_hf"
# What names the demo's models and samples: only demo/ may hold these.
DEMO_WORDS = {"sample", "tiny"}
DEMO_NAMES = {"TINY_MODEL_ID", "TINY_AUDIO_MODEL_ID", "is_tiny_model", "builtin_models"}


def _demo_mentions(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if node.value in DEMO_WORDS or "tiny-random" in node.value:
                found.append(f"{node.lineno}: {node.value!r}")
        elif isinstance(node, ast.Name) and node.id in DEMO_NAMES:
            found.append(f"{node.lineno}: {node.id}")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
            "mera_multi_hf.demo"
        ):
            found.append(f"{node.lineno}: from {node.module}")
    return found


def test_no_module_below_demo_names_its_models_or_its_samples():
    """The stages know the demo only through their registries; the commands (cli/) may
    register its `models` command."""
    named = {
        str(p.relative_to(PACKAGE)): found
        for p in sorted(PACKAGE.rglob("*.py"))
        if not {"demo", "cli", "_bundled"} & set(p.relative_to(PACKAGE).parts)
        and (found := _demo_mentions(p))
    }
    assert not named, named


def test_the_bundled_samples_are_a_registered_source_kind():
    from mera_multi_hf.tasks.table import get_task

    task = get_task("ruhhh_image")
    located = sources.resolve_source(task, "sample")
    assert (Path(located) / "test.json").is_file()
    assert "sample" in sources.SOURCE_KINDS and sources.named_source("sample") is not None
    assert sources.named_source("./sample") is None  # a path stays a path
    with pytest.raises(MeraError, match=r"nor `sample`, nor a Hub id"):
        sources.source_kind("./no/such/folder")
    assert sources.data_alternative() == (
        "use --data sample (the bundled sample) or a local folder (a raw MERA folder with "
        "test.json, or one written by `mera-multi build`)"
    )


def test_a_users_source_kind_is_read_as_the_samples_are(tmp_path, raw_sample):
    from mera_multi_hf import load_task

    sources.register_source_kind("mine", lambda task: raw_sample)
    try:
        mine = load_task("ruhhh_image", source="mine", split="test")
        shipped = load_task("ruhhh_image", source="sample", split="test")
        assert mine["meta"] == shipped["meta"] and len(mine) == len(shipped) > 0
    finally:
        del sources.SOURCE_KINDS["mine"]


def test_the_model_kinds_carry_what_the_stages_used_to_ask_the_demo():
    default, tiny = model_kinds.model_kind(None), model_kinds.model_kind("tiny")
    assert (default.model_id, default.audio, default.data) == (
        TINY_MODEL_ID,
        TINY_AUDIO_MODEL_ID,
        "sample",
    )
    assert (tiny.model_id, tiny.audio, tiny.data) == (TINY_MODEL_ID, TINY_AUDIO_MODEL_ID, None)
    for name in (TINY_MODEL_ID, TINY_AUDIO_MODEL_ID):
        kind = model_kinds.model_kind(name)
        assert kind.model_id == name and kind.audio is None and "random weights" in kind.note
    assert model_kinds.model_kind("Qwen/Qwen2-VL-2B-Instruct") is None


def test_the_built_in_models_are_reachable_by_the_names_the_results_show():
    """Offline, `--model mera-multi-hf/tiny-random-llava` (and the audio one) pass the
    model check instead of being "out of reach"; the backend loads that very model."""
    for name in (TINY_MODEL_ID, TINY_AUDIO_MODEL_ID):
        assert "built-in" in check_model("hf", name)
        engine = make_backend("hf", name)
        assert engine.model_id == name and Path(engine.path, "config.json").is_file()
    pair = make_backend("hf", None)
    assert (pair.main.model_id, pair.audio.model_id) == (TINY_MODEL_ID, TINY_AUDIO_MODEL_ID)


@pytest.mark.parametrize("family", ["llava", "qwen2.5-vl", "qwen2-audio"])
def test_a_family_name_as_model_points_at_the_command_that_builds_one(family, tmp_path, capsys):
    assert family in FAMILIES
    with pytest.raises(MeraError, match=rf"`mera-multi models --path {family}`") as refused:
        check_model("hf", family)
    assert "out of reach" not in str(refused.value)
    argv = ["evaluate", "--model", family, "--data", "sample", "--tasks", "ruhhh_image"]
    assert main([*argv, "--output-dir", str(tmp_path / "run"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"mera-multi models --path {family}" in err, err
    assert not list(tmp_path.rglob("samples*.jsonl"))


def test_a_folder_named_as_a_family_is_a_folder(tmp_path, monkeypatch):
    """Only a name that is no path here gets the pointer."""
    (tmp_path / "llava").mkdir()
    monkeypatch.chdir(tmp_path)
    assert check_model("hf", "llava").startswith("local folder")


def test_a_run_of_a_built_in_model_by_its_id_says_its_answers_are_noise(tmp_path, capsys):
    out = tmp_path / "run"
    argv = ["evaluate", "--model", TINY_MODEL_ID, "--data", "sample", "--tasks", "ruhhh_image"]
    assert main([*argv, "--limit", "3", "--output-dir", str(out), "--no-progress"]) == 0
    record = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert record["run"]["model"] == TINY_MODEL_ID
    assert "has random weights: its answers are noise" in capsys.readouterr().out


def test_a_users_model_kind_is_made_as_the_built_in_one_is():
    from dataclasses import replace

    mine = replace(model_kinds.model_kind(TINY_MODEL_ID), model_id="me/small", note="")
    model_kinds.register_model_kind(mine, names=("small",))
    try:
        engine = make_backend("hf", "small")
        assert engine.model_id == "me/small" and engine.revision
        assert check_model("hf", "small") == mine.title
    finally:
        del model_kinds.KINDS["small"]
