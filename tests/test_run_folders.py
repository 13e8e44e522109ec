"""The record and the folders: a run folder is the tool's by what its marker lists and
what its files hold, wherever it is (renamed, copied, moved); its record is never
replaced or silently changed; the tool's cache is never an output; a rewrite keeps each
file's mode and what results.json says of it; another task extends a run.

Every case aims at folders made here, with HOME set to a temporary folder."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from test_build_hostile import tree_hash

from mera_multi_hf.cli.main import main
from mera_multi_hf.generation.manifest import MANIFEST

EVALUATE = ["evaluate", "--tasks", "ruhhh_image", "--no-progress"]
LOG = Path("logs") / "samples-rank0.jsonl"


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    (home / "thesis.txt").write_text("years of work")
    monkeypatch.setenv("HOME", str(home))
    return home


def _one_line_error(capsys, *words) -> str:
    err = capsys.readouterr().err.rsplit("\r", 1)[-1]
    assert err.startswith("mera-multi: error: ") and err.count("\n") == 1, err
    for word in words:
        assert word in err, err
    return err


def _evaluate(out: Path, *extra: str, data: str = "sample", limit: int = 2) -> int:
    return main(
        EVALUATE + ["--data", data, "--limit", str(limit), "--output-dir", str(out), *extra]
    )


def _last_session(out: Path) -> dict:
    return json.loads((out / MANIFEST).read_text())["sessions"][-1]


def _flip_gold(raw: Path) -> None:
    doc = json.loads((raw / "test.json").read_text(encoding="utf-8"))
    for record in doc["data"]:
        record["outputs"] = "B" if record["outputs"] == "A" else "A"
    (raw / "test.json").write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")


def test_a_resume_on_other_data_is_refused_and_overwrite_starts_afresh(
    raw_sample, tmp_path, capsys
):
    out = tmp_path / "run"
    assert _evaluate(out, data=str(raw_sample)) == 0
    moved = tmp_path / "elsewhere" / "ruHHH-Image"
    shutil.copytree(raw_sample, moved)  # the same data in another place: resumed
    assert _evaluate(out, data=str(moved), limit=3) == 0
    assert _last_session(out)["counts"]["resumed"] == 2
    _flip_gold(moved)  # other data under the same task (the prompts and pictures alike)
    record, log = (out / MANIFEST).read_bytes(), (out / LOG).read_bytes()
    capsys.readouterr()
    assert _evaluate(out, data=str(moved), limit=3) == 2
    _one_line_error(capsys, "other data", "ruhhh_image", "--overwrite")
    assert (out / MANIFEST).read_bytes() == record and (out / LOG).read_bytes() == log
    assert _evaluate(out, "--overwrite", data=str(moved), limit=3) == 0
    assert "answers logged here: they are generated afresh" in capsys.readouterr().err
    assert _last_session(out)["counts"]["generated"] == 3


def _outputs(out: Path) -> dict[str, bytes]:
    """Every file of the folder but the tool's marker and lock (rewritten by a claim)."""
    return {
        str(p.relative_to(out)): p.read_bytes()
        for p in sorted(out.rglob("*"))
        if p.is_file() and not p.name.startswith(".mera-multi")
    }


def test_a_manifest_that_cannot_be_read_is_never_replaced(tmp_path, capsys):
    out = tmp_path / "run"
    assert _evaluate(out) == 0
    for garbled in (b'{"fixed": {"model"', b"[1, 2]", b'"a run"', b"{}"):
        (out / MANIFEST).write_bytes(garbled)
        before = _outputs(out)
        capsys.readouterr()
        for extra in ([], ["--overwrite"]):
            assert _evaluate(out, *extra) == 2
            _one_line_error(capsys, str(out / MANIFEST), "never replaced")
            assert _outputs(out) == before


def test_a_users_file_named_like_a_temporary_is_never_removed(tmp_path, capsys):
    out = tmp_path / "run"
    assert _evaluate(out) == 0
    for name in (".results.json.backup.partial", ".results.md.0a1b2c3d.partial"):
        (out / name).write_text("mine")
        capsys.readouterr()
        for extra in ([], ["--overwrite"]):
            assert _evaluate(out, *extra) == 2
            _one_line_error(capsys, f"{name} (not written by this tool)")
        assert main(["view", str(out)]) == 2
        assert (out / name).read_text() == "mine"
        (out / name).unlink()


@pytest.mark.parametrize("value", ["", "  ", "cache", "./cache", "~no-such-user/cache"])
def test_an_empty_or_relative_cache_variable_is_refused(value, tmp_path, monkeypatch, capsys):
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("MERA_MULTI_CACHE", value)
    assert _evaluate(tmp_path / "run") == 2
    _one_line_error(capsys, "MERA_MULTI_CACHE", "absolute path")
    assert not list(work.iterdir()) and not (tmp_path / "run").exists()


def test_the_tools_cache_is_never_an_output_folder_under_any_spelling(raw_sample, tmp_path, capsys):
    from mera_multi_hf.core.paths import cache_root
    from mera_multi_hf.data.load_cache import raw_export_dir
    from mera_multi_hf.demo.sample_data import bundled_sample
    from mera_multi_hf.tasks.table import get_task

    assert _evaluate(tmp_path / "run", limit=1) == 0  # the bundled sample, converted once
    entry = raw_export_dir(get_task("ruhhh_image"), bundled_sample("ruhhh_image"))
    assert (entry / "README.md").is_file()  # what `--data sample` reads
    link = tmp_path / "link"
    link.symlink_to(cache_root())
    before = tree_hash(cache_root())
    spellings = [
        entry,
        Path(f"{entry}/"),
        entry / ".." / entry.name,
        link / "raw" / entry.name,
        entry / "data",
        cache_root() / "runs",
    ]
    build = ["build", "ruhhh_image", "--raw", str(raw_sample), "--overwrite", "--out"]
    for out in spellings:
        assert main(build + [str(out)]) == 2
        _one_line_error(capsys, "this tool's cache", "never writes there")
        assert main(EVALUATE + ["--data", "sample", "--output-dir", str(out)]) == 2
        _one_line_error(capsys, "never writes there")
    assert tree_hash(cache_root()) == before


def _sha256s_hold(out: Path) -> bool:
    files = json.loads((out / "results.json").read_text())["run"]["files"]
    return all(hashlib.sha256((out / n).read_bytes()).hexdigest() == h for n, h in files.items())


def test_a_renamed_copied_or_moved_run_folder_keeps_working(tmp_path, capsys):
    first = tmp_path / "run"
    assert _evaluate(first) == 0
    renamed = tmp_path / "renamed"
    first.rename(renamed)
    assert main(["view", str(renamed)]) == 0
    assert _evaluate(renamed, limit=3) == 0
    assert _last_session(renamed)["counts"] == {
        "requested": 3,
        "resumed": 2,
        "generated": 1,
        "generated_here": 1,
    }
    copied = tmp_path / "cluster" / "copied"
    copied.parent.mkdir()
    subprocess.run(["cp", "-a", str(renamed), str(copied)], check=True)
    subprocess.run(["tar", "cf", str(tmp_path / "run.tar"), "-C", str(tmp_path), "renamed"])
    (tmp_path / "unpacked").mkdir()
    subprocess.run(["tar", "xf", str(tmp_path / "run.tar"), "-C", str(tmp_path / "unpacked")])
    for folder in (copied, tmp_path / "unpacked" / "renamed"):
        assert main(["view", str(folder)]) == 0 and _sha256s_hold(folder)
        assert _evaluate(folder, limit=3) == 0
        assert _last_session(folder)["counts"]["generated"] == 0
    assert len(json.loads((copied / MANIFEST).read_text())["sessions"]) == 3
    # elsewhere, a file changed since the tool wrote it is not the tool's: never replaced
    other = tmp_path / "other"
    shutil.copytree(renamed, other)
    (other / "results.md").write_text("my own notes")
    capsys.readouterr()
    assert _evaluate(other, limit=3) == 2
    _one_line_error(capsys, "results.md (not written by this tool)")
    assert main(["view", str(other)]) == 2
    assert (other / "results.md").read_text() == "my own notes"


def test_view_keeps_each_files_mode_and_the_recorded_sha256(tmp_path):
    out = tmp_path / "run"
    assert _evaluate(out) == 0
    for name in ("results.html", "results.json"):  # as a private run's are
        os.chmod(out / name, 0o600)
    (out / "results.html").write_text("an older page")
    assert main(["view", str(out)]) == 0
    for name in ("results.html", "results.json"):
        assert stat.S_IMODE(os.stat(out / name).st_mode) == 0o600, name
    assert (out / "results.html").read_text() != "an older page"
    assert _sha256s_hold(out)


def test_another_task_into_a_run_folder_extends_the_run(tmp_path, capsys):
    out = tmp_path / "run"
    assert _evaluate(out) == 0
    samples = out / "samples_ruhhh_image_test.jsonl"
    generations = [json.loads(x)["generation"] for x in samples.read_text().splitlines()]
    capsys.readouterr()
    args = ["evaluate", "--tasks", "rucommonvqa", "--data", "sample", "--limit", "2"]
    assert main(args + ["--no-progress", "--output-dir", str(out)]) == 0
    assert "holds answers to ruhhh_image too: the run is extended" in capsys.readouterr().err
    assert [json.loads(x)["generation"] for x in samples.read_text().splitlines()] == generations
    assert (out / "samples_rucommonvqa_test.jsonl").is_file()
    doc = json.loads((out / "results.json").read_text())
    assert sorted(doc["tasks"]) == ["rucommonvqa", "ruhhh_image"]
    assert _last_session(out)["counts"]["resumed"] == 2
    assert _last_session(out)["counts"]["generated"] == 2
    assert _sha256s_hold(out)
