"""The output boundary (mera_multi_hf/core/outputs/) at work, command by command: one
command never empties another's folder, the inputs of a command are never touched, no
link planted under an output folder is ever written through, and ``--overwrite`` never
reaches a foreign entry. Every case runs with and without ``--overwrite`` and checks
that every foreign byte and every input is unchanged.

Every target is a decoy made here, with HOME set to a temporary folder."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest
from test_build_hostile import tree_hash

from mera_multi_hf.cli.main import main
from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.core.outputs import MARKER, LinkRefused, OutputFolder, cache_folder

EVALUATE = ["evaluate", "--data", "sample", "--no-progress"]


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bashrc").write_text("export PATH=/usr/bin\n")
    monkeypatch.setenv("HOME", str(home))
    return home


@pytest.fixture(scope="module")
def run_template(tmp_path_factory) -> Path:
    """A finished evaluate run (the 26-example demo), copied by each test that needs one."""
    out = tmp_path_factory.mktemp("template") / "run"
    assert main(EVALUATE + ["--output-dir", str(out)]) == 0
    return out


@pytest.fixture
def run(run_template, tmp_path) -> Path:
    """A run folder of this test's own: the template's files, its marker naming this
    folder (as if evaluate had run here)."""
    out = tmp_path / "runs" / "X"
    shutil.copytree(run_template, out)
    marker = json.loads((out / MARKER).read_text())
    marker["folder"] = os.path.realpath(out)
    (out / MARKER).write_text(json.dumps(marker))
    return out


def _refused(capsys, *words) -> str:
    err = capsys.readouterr().err.rsplit("\r", 1)[-1]  # after a progress bar, if any
    assert err.startswith("mera-multi: error: ") and err.count("\n") == 1, err
    for word in words:
        assert word in err, err
    return err


def _both(capsys, args, *words) -> None:
    """Refused in one line with and without --overwrite."""
    for extra in ([], ["--overwrite"]):
        assert main(args + extra) == 2
        _refused(capsys, *words)


def _score_args(run: Path, out: Path) -> list[str]:
    return [
        "score",
        "--task",
        "ruhhh_image",
        "--data",
        "sample",
        "--predictions",
        str(run / "samples_ruhhh_image_test.jsonl"),
        "--out",
        str(out),
    ]


def test_score_into_its_own_run_folder_is_refused_and_keeps_the_generations(run, home, capsys):
    before, log = tree_hash(run), (run / "logs" / "samples-rank0.jsonl").read_bytes()
    _both(capsys, _score_args(run, run), "never writes there", f"{run / 'scored'}")
    assert tree_hash(run) == before  # the sample log and logs/ are still there
    assert main(_score_args(run, run / "scored")) == 0  # the folder it suggested
    assert main(EVALUATE + ["--output-dir", str(run)]) == 0  # the run still resumes
    assert (run / "logs" / "samples-rank0.jsonl").read_bytes() == log  # nothing generated
    assert (run / "scored" / "results.json").is_file()


def test_no_command_writes_into_another_commands_folder(run, raw_sample, home, tmp_path, capsys):
    before = tree_hash(run)
    _both(
        capsys,
        ["build", "ruhhh_image", "--raw", str(raw_sample), "--out", str(run)],
        "written by evaluate",
        "nothing was touched",
    )
    _both(capsys, ["metrics", "export", "--out", str(run)], "written by evaluate")
    _both(capsys, ["compare", str(run), str(run), "--out", str(run)], "never writes there")
    assert tree_hash(run) == before
    export = tmp_path / "export"
    assert main(["build", "ruhhh_image", "--raw", str(raw_sample), "--out", str(export)]) == 0
    exported = tree_hash(export)
    _both(capsys, EVALUATE + ["--output-dir", str(export)], "written by build")
    _both(capsys, _score_args(run, export), "written by build")
    assert tree_hash(export) == exported and tree_hash(run) == before


def test_reports_share_a_folder_and_leave_the_runs_alone(run, home, tmp_path, capsys):
    reports = tmp_path / "reports"
    assert main(["compare", str(run), str(run), "--out", str(reports)]) == 0
    assert main(["leaderboard", str(run), "--out", str(reports)]) == 0
    before_board = (reports / "leaderboard.md").read_bytes()
    names = sorted(p.name for p in reports.iterdir() if not p.name.startswith("."))
    assert names == [
        "compare.html",
        "compare.json",
        "compare.md",
        "compare.png",
        "compare_media",
        "leaderboard.json",
        "leaderboard.md",
        "leaderboard.png",
    ]
    before = tree_hash(reports)
    assert main(EVALUATE + ["--output-dir", str(run)]) == 0  # a rerun leaves the reports be
    assert tree_hash(reports) == before
    assert main(["compare", str(run), str(run), "--out", str(reports)]) == 0  # and rewrites
    assert sorted(p.name for p in reports.iterdir() if not p.name.startswith(".")) == names
    assert (reports / "leaderboard.md").read_bytes() == before_board  # only its own


def test_a_link_planted_at_the_sample_log_is_never_written_through(run, home, tmp_path, capsys):
    decoy = tmp_path / "decoy.jsonl"
    decoy.write_text("precious\n")
    log = run / "logs" / "samples-rank0.jsonl"
    log.unlink()
    log.symlink_to(decoy)
    _both(capsys, EVALUATE + ["--output-dir", str(run)], "samples-rank0.jsonl (a symbolic link)")
    assert decoy.read_text() == "precious\n" and log.is_symlink()
    folder = OutputFolder(run, kind="run")  # the primitive itself, past the check (a race)
    with pytest.raises(LinkRefused, match="symbolic link"):
        folder.open_append("logs/samples-rank0.jsonl")
    with pytest.raises(LinkRefused, match="symbolic link"):
        folder.cut_torn_tail("logs/samples-rank0.jsonl")
    folder.remove("logs/samples-rank0.jsonl")  # a link is not a file of ours: left alone
    folder.close()
    assert decoy.read_text() == "precious\n" and log.is_symlink()


def test_a_hard_link_at_an_output_name_is_refused(run, home, tmp_path, capsys):
    decoy = tmp_path / "decoy.md"
    decoy.write_text("mine\n")
    (run / "results.md").unlink()
    os.link(decoy, run / "results.md")
    _both(capsys, EVALUATE + ["--output-dir", str(run)], "results.md (not a plain file)")
    assert decoy.read_text() == "mine\n"


def test_a_linked_subfolder_is_never_cleared(run, home, tmp_path, capsys):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "samples-rank0.jsonl").write_text("someone's\n")
    (run / "logs" / "samples-rank0.jsonl").unlink()
    (run / "logs").rmdir()
    (run / "logs").symlink_to(elsewhere)
    _both(capsys, EVALUATE + ["--output-dir", str(run)], "logs (a symbolic link)")
    assert (elsewhere / "samples-rank0.jsonl").read_text() == "someone's\n"


def test_a_hand_written_marker_cannot_reach_through_a_link(run, home, tmp_path, capsys):
    scored = tmp_path / "scored"
    assert main(_score_args(run, scored)) == 0
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "important.txt").write_text("keep")
    (scored / "sub").symlink_to(outside)
    marker = json.loads((scored / MARKER).read_text())
    marker["files"]["sub/important.txt"] = "score"
    (scored / MARKER).write_text(json.dumps(marker))
    _both(capsys, _score_args(run, scored), "sub (a symbolic link)")
    folder = OutputFolder(scored, kind="score")
    folder.remove("sub/important.txt")
    folder.close()
    assert (outside / "important.txt").read_text() == "keep"


def test_an_older_marker_keeps_its_folder_resumable(run, home, capsys):
    marker = json.loads((run / MARKER).read_text())
    (run / MARKER).write_text(
        json.dumps(
            {
                "created_by": "mera-multi-hf",
                "folder": marker["folder"],
                "files": sorted(marker["files"]),
                "info": {},
            }
        )
    )
    log = (run / "logs" / "samples-rank0.jsonl").read_bytes()
    assert main(EVALUATE + ["--output-dir", str(run)]) == 0
    assert (run / "logs" / "samples-rank0.jsonl").read_bytes() == log  # resumed whole
    assert set(json.loads((run / MARKER).read_text())["files"].values()) == {"run"}


def test_judge_agreement_out_creates_a_file_and_replaces_only_its_own(home, tmp_path, capsys):
    from tiny_judge import build_tiny_judge

    judge = build_tiny_judge(tmp_path / "judge")
    capsys.readouterr()  # its progress bars
    data = tmp_path / "labelled.jsonl"
    data.write_text(
        "".join(
            json.dumps(
                {
                    "prompt": f"Вопрос {i}?",
                    "gold": "да",
                    "prediction": "да" if i % 2 else "нет",
                    "label": i % 2,
                }
            )
            + "\n"
            for i in range(4)
        )
    )
    args = ["judge", "agreement", "--data", str(data), "--model", str(judge), "--out"]
    bashrc = (home / ".bashrc").read_bytes()
    mine = tmp_path / "mine.json"
    mine.write_text('{"my": "notes"}')
    _both(capsys, args + [str(mine)], "mine.json")
    link = tmp_path / "link.json"
    link.symlink_to(home / ".bashrc")
    _both(capsys, args + [str(link)], "link")
    _both(capsys, args + [str(tmp_path)], "a folder")
    assert mine.read_text() == '{"my": "notes"}' and (home / ".bashrc").read_bytes() == bashrc
    report = tmp_path / "report.json"
    assert main(args + [str(report)]) == 0
    capsys.readouterr()
    assert main(args + [str(report)]) == 2
    _refused(capsys, "exists")
    assert main(args + [str(report), "--overwrite"]) == 0  # its own report
    assert json.loads(report.read_text())["kind"] == "mera-multi-hf agreement report"


def test_files_honour_the_umask_and_gold_answers_stay_private(home, tmp_path, capsys):
    old = os.umask(0o027)
    try:
        out = tmp_path / "run"
        assert main(EVALUATE + ["--output-dir", str(out)]) == 0
    finally:
        os.umask(old)
    mode = {p.name: stat.S_IMODE(p.stat().st_mode) for p in out.iterdir() if p.is_file()}
    doc = json.loads((out / "results.json").read_text())
    private = set(doc["run"]["gold_private"]["files"])
    assert private == {
        "results.json",
        "results.html",
        "results_media/",
        "samples_ruhhh_image_test.jsonl",
    }
    for name, bits in mode.items():
        assert bits == (0o600 if name in private else 0o640), (name, oct(bits))
    media = out / "results_media"  # the page's media folder: as closed as the page
    assert stat.S_IMODE(media.stat().st_mode) == 0o700 and list(media.iterdir())
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in media.iterdir())


def test_the_cache_follows_the_same_no_link_rule(tmp_path, monkeypatch):
    cache, decoy = tmp_path / "cache", tmp_path / "decoy"
    cache.mkdir()
    decoy.mkdir()
    monkeypatch.setenv("MERA_MULTI_CACHE", str(cache))
    (cache / "models").symlink_to(decoy)
    with pytest.raises(LinkRefused):
        with cache_folder(cache / "models" / "x") as stage:
            (stage / "f").write_text("x")
    assert not list(decoy.iterdir())
    with cache_folder(cache / "other" / "x") as stage:
        (stage / "f").write_text("x")
    assert (cache / "other" / "x" / "f").read_text() == "x"
    assert [p.name for p in (cache / "other").iterdir()] == ["x"]


def test_a_folder_typed_through_a_link_still_works(home, tmp_path):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    (tmp_path / "runs").symlink_to(scratch)  # runs -> /scratch/runs
    assert main(EVALUATE + ["--output-dir", str(tmp_path / "runs" / "a")]) == 0
    assert (scratch / "a" / "results.json").is_file()
    with pytest.raises(MeraError, match="symbolic link"):
        OutputFolder(tmp_path / "runs", kind="run").check()


# ---- the matrix: every command against every kind of target ----


def _commands(run: Path, raw: Path) -> dict[str, tuple[list[str], list[str]]]:
    """command -> (its arguments less the output, the names it writes)."""
    return {
        "build": (
            ["build", "ruhhh_image", "--raw", str(raw), "--out"],
            ["README.md", "data/test-00000-of-00001.parquet"],
        ),
        "score": (
            _score_args(run, Path("x"))[:-1],
            [
                "results.json",
                "results.md",
                "results.html",
                "submission.zip",
                "samples_ruhhh_image_test.jsonl",
            ],
        ),
        "metrics": (
            ["metrics", "export", "--metric", "exact_match", "--out"],
            ["exact_match/exact_match.py", "exact_match/README.md"],
        ),
        "compare": (
            ["compare", str(run), str(run), "--out"],
            ["compare.md", "compare.json", "compare.html"],
        ),
        "leaderboard": (["leaderboard", str(run), "--out"], ["leaderboard.md"]),
    }


def _targets(tmp_path: Path, run: Path, names: list[str], source: Path | None):
    """(label, output folder, what must stay unchanged) for each kind of target."""
    decoy = tmp_path / "decoy"
    decoy.mkdir(parents=True)
    (decoy / "secret.txt").write_text("outside")
    yield "another kind's folder", run, run
    if source is not None:
        yield "the folder an input lives in", source.parent, source.parent
        if source.is_dir():
            yield "a folder inside an input", source / "new", source
    for name in names:
        for how in ("a foreign file", "a planted link"):
            out = tmp_path / f"{how}-{name.replace('/', '-')}"
            (out / name).parent.mkdir(parents=True)
            if how == "a foreign file":
                (out / name).write_text("mine")
            else:
                (out / name).symlink_to(decoy / "secret.txt")
            yield f"{how} at {name}", out, out
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / names[0].split("/")[0] if "/" in names[0] else linked / "sub").symlink_to(decoy)
    yield "a linked subfolder", linked, linked


@pytest.mark.parametrize("command", ["build", "score", "metrics", "compare", "leaderboard"])
def test_every_command_leaves_every_foreign_byte_and_input(
    command, run, raw_sample, home, tmp_path, capsys
):
    args, names = _commands(run, raw_sample)[command]
    source = {
        "build": raw_sample,
        "metrics": None,
        "score": run / "samples_ruhhh_image_test.jsonl",
    }.get(command, run)
    inputs = {"run": tree_hash(run), "raw": tree_hash(raw_sample)}
    for label, out, kept in _targets(tmp_path / "targets", run, names, source):
        before = tree_hash(kept)
        for extra in ([], ["--overwrite"]):
            assert main(args + [str(out)] + extra) == 2, (label, extra)
            _refused(capsys)
            assert tree_hash(kept) == before, (label, extra)
    assert (tmp_path / "targets" / "decoy" / "secret.txt").read_text() == "outside"
    assert {"run": tree_hash(run), "raw": tree_hash(raw_sample)} == inputs


def test_an_output_name_that_is_not_utf8_is_refused_before_anything_is_made(
    run, raw_sample, home, tmp_path, capsys
):
    out = os.fsdecode(os.fsencode(str(tmp_path)) + b"/bad\xff")
    for args in (
        EVALUATE + ["--output-dir"],
        _score_args(run, Path("x"))[:-1],
        ["build", "ruhhh_image", "--raw", str(raw_sample), "--out"],
        ["metrics", "export", "--out"],
    ):
        assert main(args + [out]) == 2
        assert "UTF-8" in _refused(capsys, "bad\\xff")  # at the command line already
        assert not os.path.lexists(out)
