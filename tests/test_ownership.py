"""The one ownership rule (mera_multi_hf.core.outputs) for every folder the tool writes: it
deletes or replaces only files its own marker in that folder lists; --overwrite replaces
same-named files and nothing else; some folders are refused whatever the options.

Every "does it delete X" case aims at decoy folders made here, with HOME set to a
temporary folder: never a real home."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_build_hostile import tree_hash

from mera_multi_hf.cli.main import main
from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.core.outputs import MARKER, OutputFolder
from mera_multi_hf.data.publish import export_raw
from mera_multi_hf.tasks.table import get_task

TASK = get_task("ruhhh_image")


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """A temporary HOME with a user's files in it."""
    home = tmp_path / "home"
    (home / ".config" / "git").mkdir(parents=True)
    (home / ".config" / "git" / "config").write_text("[user]\n\tname = me\n")
    (home / "thesis.txt").write_text("years of work")
    monkeypatch.setenv("HOME", str(home))
    assert Path.home() == home
    return home


def _decoy(root: Path) -> Path:
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "notes.md").write_text("mine")
    (root / "README.md").write_text("my project")
    (root / "data").mkdir()
    (root / "data" / "keep.csv").write_text("a,b\n")
    return root


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert err.startswith("mera-multi: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    return err


def test_build_out_inside_or_holding_the_raw_folder_is_always_refused(raw_sample, home, capsys):
    before = tree_hash(raw_sample)
    for out in (
        raw_sample / "samples" / "new",
        raw_sample / "samples",
        raw_sample,
        raw_sample.parent,
    ):
        assert (
            main(
                ["build", "ruhhh_image", "--raw", str(raw_sample), "--out", str(out), "--overwrite"]
            )
            == 2
        )
        assert "never writes there" in _one_line_error(capsys)
    assert tree_hash(raw_sample) == before


def test_home_cwd_package_caches_and_root_are_always_refused(
    raw_sample, home, tmp_path, monkeypatch
):
    import datasets.config
    from huggingface_hub import constants

    import mera_multi_hf
    from mera_multi_hf.core.paths import cache_root

    work = tmp_path / "work" / "sub"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    before = tree_hash(home)
    refused = [
        home,
        home.parent,
        work,
        work.parent,
        Path("/"),
        Path(".."),
        Path(mera_multi_hf.__file__).parent,
        Path(mera_multi_hf.__file__).parent / "x",
        cache_root(),
        Path(datasets.config.HF_DATASETS_CACHE),
        Path(datasets.config.HF_DATASETS_CACHE) / "x",
        Path(constants.HF_HUB_CACHE) / "y",
    ]
    for out in refused:
        with pytest.raises(MeraError, match="never writes there"):
            OutputFolder(out, kind="export").check()
    with pytest.raises(MeraError, match="never writes there"):
        export_raw(TASK, raw_sample, home)
    assert tree_hash(home) == before
    OutputFolder(home / "runs" / "a", kind="run").check()  # below them: a choice to make
    OutputFolder(work / "out", kind="score").check()


def test_a_folder_with_a_file_it_did_not_write_is_refused_even_with_overwrite(
    raw_sample, home, tmp_path, capsys
):
    decoy = _decoy(tmp_path / "project")
    before = tree_hash(decoy)
    args = ["build", "ruhhh_image", "--raw", str(raw_sample), "--out", str(decoy)]
    for extra in ([], ["--overwrite"]):  # the user's README.md is never replaced
        assert main(args + extra) == 2
        err = _one_line_error(capsys)
        assert "not written by this tool" in err and "README.md" in err, err
        assert "nothing was touched" in err and "choose a new folder" in err
        assert tree_hash(decoy) == before


def test_a_copied_or_forged_marker_grants_nothing(raw_sample, home, tmp_path, capsys):
    export = tmp_path / "export"
    export_raw(TASK, raw_sample, export)
    export_raw(TASK, raw_sample, export)  # its own marker: rebuilt without --overwrite
    decoy = _decoy(tmp_path / "decoy")
    shutil.copy(export / MARKER, decoy / MARKER)  # a stray marker, naming another folder
    before = tree_hash(decoy)
    with pytest.raises(MeraError, match="not written by this tool"):
        export_raw(TASK, raw_sample, decoy)
    assert tree_hash(decoy) == before
    copy = tmp_path / "copy"
    shutil.copytree(export, copy)  # a copied export is the tool's: it holds what was written
    export_raw(TASK, raw_sample, copy)
    forged = json.loads((export / MARKER).read_text())  # a marker naming another folder ...
    forged["folder"], forged["identity"] = str(tmp_path / "elsewhere"), "0:0"
    (export / MARKER).write_text(json.dumps(forged))
    (export / "README.md").write_text("my own card")  # ... grants no file changed since
    with pytest.raises(MeraError, match="README.md .not written by this tool"):
        export_raw(TASK, raw_sample, export)
    assert (export / "README.md").read_text() == "my own card"
    (decoy / MARKER).write_text(
        json.dumps(
            {"folder": os.path.realpath(decoy), "files": ["../home/thesis.txt", "/etc/passwd"]}
        )
    )
    assert OutputFolder(decoy, kind="export").owned() == set()  # no way out of the folder


def test_rebuild_removes_only_its_own_stale_files(raw_sample, home, tmp_path):
    out = tmp_path / "out"
    export_raw(TASK, raw_sample, out)
    marker = json.loads((out / MARKER).read_text())  # as if an earlier build had made more
    marker["files"]["data/test-00001-of-00002.parquet"] = "export"
    (out / MARKER).write_text(json.dumps(marker))
    (out / "data" / "test-00001-of-00002.parquet").write_bytes(b"stale")
    (out / "data" / "mine.txt").write_text("mine")
    with pytest.raises(MeraError, match="mine.txt"):
        export_raw(TASK, raw_sample, out)
    assert (out / "data" / "test-00001-of-00002.parquet").read_bytes() == b"stale"
    (out / "data" / "mine.txt").unlink()
    export_raw(TASK, raw_sample, out)
    assert sorted(p.name for p in (out / "data").iterdir()) == [
        "shots-00000-of-00001.parquet",
        "test-00000-of-00001.parquet",
    ]


def test_evaluate_never_touches_a_users_file_named_like_a_rank_log(home, tmp_path, capsys):
    out = tmp_path / "run"
    args = [
        "evaluate",
        "--data",
        "sample",
        "--limit",
        "2",
        "--output-dir",
        str(out),
        "--no-progress",
    ]
    (out / "logs").mkdir(parents=True)
    mine = b'{"task": "ruhhh_image", "split": "test", "id": 1, "request_hash": "x", "gene'
    (out / "logs" / "samples-rank0.jsonl").write_bytes(mine)
    for extra in ([], ["--overwrite"]):  # a log is never taken over
        assert main(args + extra) == 2
        assert "logs/samples-rank0.jsonl (not written by this tool)" in _one_line_error(capsys)
    assert (out / "logs" / "samples-rank0.jsonl").read_bytes() == mine
    assert sorted(os.listdir(out)) == ["logs"]
    shutil.rmtree(out)
    assert main(args) == 0
    (out / "logs" / "samples-rank1.jsonl").write_bytes(mine)  # beside our own log
    capsys.readouterr()
    for extra in ([], ["--overwrite"]):  # someone else's file in the folder: refused
        assert main(args + extra) == 2
        assert "samples-rank1.jsonl" in _one_line_error(capsys)
    assert (out / "logs" / "samples-rank1.jsonl").read_bytes() == mine
    (out / "logs" / "samples-rank1.jsonl").unlink()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.rmtree(out / "logs")
    (out / "logs").symlink_to(elsewhere)  # a link out of the folder is never written through
    capsys.readouterr()
    assert main(args + ["--overwrite"]) == 2
    assert "symbolic link" in _one_line_error(capsys) and not list(elsewhere.iterdir())


def test_score_and_metrics_export_follow_the_same_rule(home, tmp_path, capsys):
    predictions = tmp_path / "p.jsonl"
    predictions.write_text(
        "".join(json.dumps({"id": i, "prediction": "A"}) + "\n" for i in range(1, 27))
    )
    for args in (
        ["score", "--task", "ruhhh_image", "--predictions", str(predictions), "--data", "sample"],
        ["metrics", "export", "--metric", "exact_match"],
    ):
        decoy = _decoy(tmp_path / f"decoy-{args[0]}")
        before = tree_hash(decoy)
        for extra in ([], ["--overwrite"]):
            assert main(args + ["--out", str(decoy)] + extra) == 2
            assert "not written by this tool" in _one_line_error(capsys)
            assert tree_hash(decoy) == before
        assert main(args + ["--out", str(home)]) == 2
        assert "never writes there" in _one_line_error(capsys)


def test_metrics_export_keeps_the_other_metrics_and_the_users_files(home, tmp_path):
    out = tmp_path / "spaces"
    assert main(["metrics", "export", "--out", str(out)]) == 0
    names = sorted(p.name for p in out.iterdir() if not p.name.startswith("."))
    assert len(names) == 4
    (out / "exact_match" / "exact_match.py").write_text("edited")
    assert main(["metrics", "export", "--out", str(out), "--metric", "exact_match"]) == 0
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == names
    assert (out / "exact_match" / "exact_match.py").read_text() != "edited"


def test_a_second_run_on_the_same_folder_is_refused_at_once(home, tmp_path, capsys):
    out = tmp_path / "busy"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from mera_multi_hf.core.outputs import "
            "OutputFolder; f = OutputFolder(sys.argv[1], kind='run').claim(); "
            "print('held', flush=True); "
            "time.sleep(60)",
            str(out),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)),
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        assert (
            main(
                [
                    "evaluate",
                    "--data",
                    "sample",
                    "--limit",
                    "2",
                    "--output-dir",
                    str(out),
                    "--no-progress",
                ]
            )
            == 2
        )
        assert "in use by another mera-multi run" in _one_line_error(capsys)
        assert (
            main(
                [
                    "score",
                    "--task",
                    "ruhhh_image",
                    "--predictions",
                    str(out / "x"),
                    "--data",
                    "sample",
                    "--out",
                    str(out),
                ]
            )
            == 2
        )
        assert "in use" in _one_line_error(capsys)
    finally:
        holder.kill()
        holder.wait()
    assert sorted(os.listdir(out)) == [".mera-multi.lock"]
