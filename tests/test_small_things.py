"""Small things a person meets: `view` takes a results.json as `compare` and
`leaderboard` do, and a run over several tasks shows one progress line per task rather
than datasets' bars (two or more per split)."""

from __future__ import annotations

import sys
from pathlib import Path

import datasets
import pytest

from mera_multi_hf.cli.main import main

sys.path.insert(0, str(Path(__file__).resolve().parent))  # tests/tiny_judge.py


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
    from test_results_page import page_rows

    rows = page_rows((out / "results.html").read_text(encoding="utf-8"))
    assert {row["task"] for row in rows} == set(tasks)  # its rows, of every task
    assert main(["view", str(out / "results.md")]) == 2  # a file, but not a results.json
    assert "neither a run folder nor its results.json" in capsys.readouterr().err


def test_the_chat_server_answers_an_unknown_model_with_404():
    """OpenAI and vLLM answer a model they do not serve with 404 (openai's client raises
    NotFoundError); a model the server serves still answers."""
    import openai

    from mera_multi_hf.generation.backends.hf import HFBackend
    from mera_multi_hf.serving.chat_server import make_server

    backend = HFBackend(None, batch_size=1)
    backend.load()
    server = make_server(backend, port=0, model_name="tiny-served", max_tokens_limit=4).start()
    try:
        client = openai.OpenAI(
            base_url=f"http://127.0.0.1:{server.server_port}/v1", api_key="none", max_retries=0
        )
        messages = [{"role": "user", "content": "Привет"}]
        with pytest.raises(openai.NotFoundError) as caught:
            client.chat.completions.create(model="gpt-4o", messages=messages, max_tokens=2)
        error = caught.value.body
        assert caught.value.status_code == 404
        assert (
            error["code"] == 404 and error["param"] == "model" and error["type"] == "NotFoundError"
        )
        assert "gpt-4o" in error["message"] and "tiny-served" in error["message"]
        answer = client.chat.completions.create(
            model="tiny-served", messages=messages, max_tokens=2
        )
        assert isinstance(answer.choices[0].message.content, str)
    finally:
        server.shutdown()
        server.server_close()


def test_score_names_the_model_and_the_tiny_judge_says_it_has_random_weights(tmp_path, capsys):
    """`score --model-name` names a plain JSONL's model in the run record and the title;
    the tiny judge's own note (its describe()) comes with its scores, and a judge row's
    label says "judge" once."""
    import json

    from tiny_judge import build_tiny_judge

    from mera_multi_hf.data.examples import make_examples
    from mera_multi_hf.data.loading import load_split
    from mera_multi_hf.demo.tiny_models.judge import NOTE
    from mera_multi_hf.tasks.table import get_task

    task = get_task("ruclevr")
    examples = make_examples(task, load_split(task, source="sample", split="test"))
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text(
        "".join(json.dumps({"id": e.id, "prediction": "3"}) + "\n" for e in examples),
        encoding="utf-8",
    )
    judge, out = build_tiny_judge(tmp_path / "judge"), tmp_path / "scored"
    argv = ["score", "--task", "ruclevr", "--predictions", str(predictions), "--data", "sample"]
    assert main([*argv, "--out", str(out), "--judge", str(judge), "--model-name", "my-vlm"]) == 0
    printed = capsys.readouterr().out
    doc = json.loads((out / "results.json").read_text(encoding="utf-8"))
    md = (out / "results.md").read_text(encoding="utf-8")
    assert doc["run"]["model"] == "my-vlm" and md.startswith("# MERA Multi results: my-vlm\n")
    assert "MERA Multi results: my-vlm" in (out / "results.html").read_text(encoding="utf-8")
    assert doc["tasks"]["ruclevr"]["metric_modes"]["judge"]["note"] == NOTE
    for text in (md, printed):
        assert f"{NOTE}." in text and "random weights" in text
        judge_rows = [line for line in text.splitlines() if "Judge score" in line and "±" in line]
        assert judge_rows and all(line.lower().count("judge") == 1 for line in judge_rows)
    assert main([*argv, "--out", str(tmp_path / "unnamed")]) == 0
    unnamed = json.loads((tmp_path / "unnamed/results.json").read_text(encoding="utf-8"))
    assert unnamed["run"]["model"] == "unnamed model"


def test_build_says_one_line_and_a_run_of_the_sample_no_note_on_its_own_gold(
    tmp_path, capsys, monkeypatch
):
    """`build` shows no datasets bars (its one line is "wrote ..."); a run on the bundled sample converts
    ruTiE without the note on its Cyrillic golds (the official data's, copied on purpose),
    which `build` of the same folder still gives."""
    from mera_multi_hf.data import loading

    monkeypatch.setenv("MERA_MULTI_CACHE", str(tmp_path / "fresh-cache"))  # conversions happen
    monkeypatch.setattr(loading, "_QUIET", [])
    shown = datasets.is_progress_bar_enabled()
    datasets.enable_progress_bars()
    try:
        assert main(["build", "rutie_image", "--raw", "sample", "--out", str(tmp_path / "b")]) == 0
        captured = capsys.readouterr()
        built = captured.err.replace("\r", "\n")
        argv = ["evaluate", "--tasks", "rutie_image", "--data", "sample", "--limit", "1"]
        assert main([*argv, "--output-dir", str(tmp_path / "run"), "--max-new-tokens", "2"]) == 0
        ran = capsys.readouterr().err
    finally:
        (datasets.enable_progress_bars if shown else datasets.disable_progress_bars)()
    assert "Generating" not in built and "examples/s" not in built, built
    # the notes on its own gold, and nothing else
    assert all(x.startswith("mera-multi: note: ") for x in built.splitlines()), built
    assert captured.out.splitlines() == [f"wrote rutie_image in the Hub layout to {tmp_path / 'b'}"]
    assert "outside the options" in built  # build names them
    assert "outside the options" not in ran and "preparing rutie_image" in ran


def test_results_md_shows_every_interval_says_why_one_is_missing_and_counts_right():
    """Every breakdown cell with an interval shows ±, a cell of a single group says it
    has none and why; one task is "1 task"."""
    from mera_multi_hf.data.examples import Example
    from mera_multi_hf.reporting.reports import markdown
    from mera_multi_hf.scoring.records import RunRecord
    from mera_multi_hf.scoring.score import score_task, summarize
    from mera_multi_hf.tasks.table import get_task

    task = get_task("ruhhh_image")
    # groups of 4; category "one" holds a single group, "many" the other nine
    examples = [
        Example(
            task=task.key,
            id=i,
            index=i,
            prompt=f"q{i}",
            media_fields=(),
            gold="AB"[i % 2],
            group=i // 4,
            breakdown={name: "one" if i < 4 else "many" for name, _ in task.breakdowns},
            meta={"id": i},
            options=("x", "y"),
        )
        for i in range(40)
    ]
    result = score_task(task, examples, {e.id: "A" if e.id % 3 else "B" for e in examples})
    md = markdown([result], summarize([result]), RunRecord.from_dict({"model": "m", "run_id": "r"}))
    rows = {line.split(" | ")[0][2:]: line for line in md.splitlines() if line.startswith("| ")}
    assert rows["many"].count(" ± ") == 2
    assert rows["one"].count("(1 group, no ±)") == 2 and " ± 0" not in rows["one"]
    assert "a score of a single cluster" in md
    assert "| 1 task |" in md and "1 tasks" not in md
