"""Small things a person meets: `view` takes a results.json as `compare` and
`leaderboard` do, and a run over several tasks shows one progress line per task rather
than datasets' bars (two or more per split)."""

from __future__ import annotations

import datasets

from mera_multi_hf.cli.main import main


def test_several_tasks_show_one_line_each_and_view_takes_results_json(
    tmp_path, capsys, monkeypatch
):
    from mera_multi_hf.data import loading

    monkeypatch.setenv("MERA_MULTI_CACHE", str(tmp_path / "fresh-cache"))  # conversions happen
    monkeypatch.setattr(loading, "_QUIET", [])  # an earlier --no-progress run in this process
    tasks = ["ruclevr", "weird", "realvqa"]
    out = tmp_path / "run"
    shown = datasets.is_progress_bar_enabled()
    datasets.enable_progress_bars()
    try:
        assert (
            main(["evaluate", "--tasks", ",".join(tasks), "--limit", "1", "--output-dir", str(out)])
            == 0
        )
    finally:
        (datasets.enable_progress_bars if shown else datasets.disable_progress_bars)()
    err = capsys.readouterr().err.replace("\r", "\n")
    assert "Generating" not in err and "examples/s" not in err, err
    for task in tasks:
        lines = [x for x in err.splitlines() if f" {task} " in x]
        assert len(lines) == 1 and lines[0].startswith(f"mera-multi: preparing {task} from "), err

    (out / "results.html").unlink()
    assert main(["view", str(out / "results.json")]) == 0
    assert 'data-task="weird"' in (out / "results.html").read_text(encoding="utf-8")
    assert main(["view", str(out / "results.md")]) == 2  # a file, but not a results.json
    assert "neither a run folder nor its results.json" in capsys.readouterr().err
