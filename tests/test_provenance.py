"""results.json tells the truth (issue 28): what was typed or set, against what
results.json says, as one oracle table; the run manifest across resumes; `score` carrying
the provenance of the predictions; the words that must agree with the numbers.

The resume with another number of processes is checked on the runs of
tests/test_runner_processes.py, and `--tasks all` on the run of tests/test_all_tasks.py.
"""

from __future__ import annotations

import json
import shutil
import sys
import threading
from pathlib import Path

import pytest

from mera_multi_hf.cli.main import main
from mera_multi_hf.core.outputs import read_marker
from mera_multi_hf.pipeline.evaluate import run_evaluation
from mera_multi_hf.reporting.compare import compare_runs

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tiny_judge import build_tiny_judge  # noqa: E402

KEY, JUDGE_KEY = "sk-provenance-test-0123", "judge-provenance-key-4567"
LLAVA = "mera-multi-hf/tiny-random-llava"
# what a resume must record as the first session recorded it (compare's protocol fields)
PROTOCOL = (
    "model",
    "revision",
    "backend",
    "dtype",
    "backend_options",
    "generation",
    "prompt_source",
    "seed",
)


def _run(out) -> dict:
    return json.loads((Path(out) / "results.json").read_text())["run"]


def _manifest(out) -> dict:
    return json.loads((Path(out) / "run_manifest.json").read_text())


@pytest.fixture(scope="module")
def hf_runs(tmp_path_factory):
    """The hf tiny model typed as a user types it, then the same command again (a full
    resume: nothing left to generate); the first results are kept in a copy."""
    root = tmp_path_factory.mktemp("prov")
    typed = ["--output-dir", str(root / "hf"), "--no-progress", "--max-new-tokens", "8"]
    assert main(["evaluate", *typed]) == 0
    shutil.copytree(root / "hf", root / "first")
    assert main(["evaluate", *typed]) == 0
    return root, typed


@pytest.fixture(scope="module")
def partial(tmp_path_factory):
    """A Python caller's run of 2 examples, resumed with 4 (2 generated then)."""
    out = tmp_path_factory.mktemp("partial") / "run"
    options = dict(data=["sample"], output_dir=str(out), no_progress=True, max_new_tokens=8)
    run_evaluation(limit=2, **options)
    first = _run(out)
    run_evaluation(limit=4, batch_size=2, **options)
    return out, first


@pytest.fixture(scope="module")
def chat_server():
    """The package's OpenAI-compatible server over the tiny model, with a key."""
    from mera_multi_hf.generation.backends.hf import HFBackend
    from mera_multi_hf.serving.chat_server import make_server

    server = make_server(
        HFBackend(None, batch_size=4), port=0, model_name="tiny-served", api_key=KEY
    )
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/v1"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def openai_run(chat_server, tmp_path_factory):
    """The openai backend, its key taken from $OPENAI_API_KEY (never typed)."""
    out = tmp_path_factory.mktemp("openai") / "run"
    with pytest.MonkeyPatch.context() as env:
        env.setenv("OPENAI_API_KEY", KEY)
        assert (
            main(
                [
                    "evaluate",
                    "--backend",
                    "openai",
                    "--base-url",
                    chat_server,
                    "--model",
                    "tiny-served",
                    "--data",
                    "sample",
                    "--limit",
                    "3",
                    "--output-dir",
                    str(out),
                    "--no-progress",
                ]
            )
            == 0
        )
    return out


@pytest.fixture(scope="module")
def lm_eval_logs(hf_runs):
    """An lm-evaluation-harness output folder: its samples log (the hf run's answers) and
    its results file, whose config block holds an api_key in model_args."""
    root, _ = hf_runs
    logs = root / "lm_eval"
    logs.mkdir()
    logged = [
        json.loads(line)
        for line in (root / "hf" / "samples_ruhhh_image_test.jsonl").read_text().splitlines()
    ]
    rows = [
        {
            "doc_id": n,
            "doc": {"meta": {"id": r["id"]}},
            "target": r["target"],
            "resps": [[r["generation"]]],
            "filtered_resps": [r["generation"]],
        }
        for n, r in enumerate(logged)
    ]
    (logs / "samples_ruhhh_image_2026-01-01T00-00-00.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    )
    config = {
        "model": "local-chat-completions",
        "batch_size": 1,
        "random_seed": 0,
        "model_args": f"model=served-vlm,base_url=http://127.0.0.1:9/v1,api_key={KEY}",
    }
    (logs / "results_2026-01-01T00-00-00.json").write_text(
        json.dumps({"config": config, "model_name": "served-vlm", "results": {}})
    )
    return logs


def _score(predictions, out, *extra) -> dict:
    assert (
        main(
            [
                "score",
                "--task",
                "ruhhh_image",
                "--data",
                "sample",
                "--predictions",
                str(predictions),
                "--out",
                str(out),
                *extra,
            ]
        )
        == 0
    )
    return _run(out)


def _oracle(case, hf_runs, partial, openai_run, chat_server, lm_eval_logs):
    """(what was typed or set, what results.json says) for one row of the table."""
    root, typed = hf_runs
    hf = {
        "command": "mera-multi evaluate " + " ".join(typed),
        "backend": "hf",
        "model": LLAVA,
        "dtype": "float32",
        "model_class": "LlavaForConditionalGeneration",
        "max_new_tokens": 8,
        "user_choices": {"max_new_tokens": 8},
        "environment": {},
        "sessions": 1,
        "generated": [26],
    }
    if case == "hf":
        return hf, _run(root / "first")
    if case == "full resume":  # nothing new: results.json as the first session wrote it
        return hf, _run(root / "hf")  # (the manifest lists both sessions)
    if case == "partial resume":
        out, _ = partial
        command = (
            f"run_evaluation(data=['sample'], limit=4, output_dir={str(out)!r}, "
            "batch_size=2, max_new_tokens=8, no_progress=True)"
        )  # RunConfig's order
        return dict(hf, command=command, sessions=2, generated=[2, 2]), _run(out)
    if case == "openai, key from the environment":
        command = (
            f"mera-multi evaluate --backend openai --base-url {chat_server} --model "
            f"tiny-served --data sample --limit 3 --output-dir {openai_run} --no-progress"
        )
        return {
            "command": command,
            "backend": "openai",
            "model": "tiny-served",
            "dtype": None,
            "model_class": None,
            "max_new_tokens": 256,
            "user_choices": {},
            "environment": {"api_key": "from $OPENAI_API_KEY"},
            "sessions": 1,
            "generated": [3],
        }, _run(openai_run)
    if case == "score of this project's log":
        run = _score(root / "hf" / "samples_ruhhh_image_test.jsonl", root / "scored")
        return dict(hf, command=None, sessions=2, generated=[26, 0]), run
    if case == "score of an lm-eval log":
        return {
            "command": None,
            "backend": None,
            "model": "served-vlm",
            "dtype": None,
            "model_class": None,
            "max_new_tokens": None,
            "user_choices": None,
            "environment": {},
            "sessions": 0,
            "generated": [],
        }, _score(lm_eval_logs, root / "scored-lm-eval")
    raise AssertionError(case)


def _said(run: dict) -> dict:
    """What results.json says, in the oracle's terms."""
    options = run.get("backend_options") or {}
    generation = run.get("generation") or {}
    return {
        "command": run["command"] if run["mode"] == "evaluate" else None,
        "backend": run.get("backend"),
        "model": run["model"],
        "dtype": run.get("dtype"),
        "model_class": options.get("model_class"),
        "max_new_tokens": (generation.get("max_new_tokens") or {}).get("ruhhh_image"),
        "user_choices": generation.get("user_choices"),
        "environment": run.get("environment"),
        "sessions": len(run.get("sessions", [])),
        "generated": [s["counts"]["generated_here"] for s in run.get("sessions", [])],
    }


ROWS = [
    "hf",
    "full resume",
    "partial resume",
    "openai, key from the environment",
    "score of this project's log",
    "score of an lm-eval log",
]


@pytest.mark.parametrize("case", ROWS)
def test_oracle_table(case, hf_runs, partial, openai_run, chat_server, lm_eval_logs):
    expected, run = _oracle(case, hf_runs, partial, openai_run, chat_server, lm_eval_logs)
    assert _said(run) == expected
    assert KEY not in json.dumps(run)


def test_a_full_resume_records_the_first_run_and_compare_finds_no_difference(hf_runs, capsys):
    root, _ = hf_runs
    first, again = _run(root / "first"), _run(root / "hf")
    assert {k: again[k] for k in PROTOCOL} == {k: first[k] for k in PROTOCOL}
    assert again["backend_options"]["context_length"] and again["backend_options"]["device"]
    capsys.readouterr()
    result = compare_runs(root / "first", root / "hf")
    assert result["protocol_differences"] == []
    # the manifest: listed in the folder's marker (never removed by the run's own outputs)
    assert "run_manifest.json" in read_marker(root / "hf")["files"]
    manifest = _manifest(root / "hf")
    assert [s["counts"]["generated_here"] for s in manifest["sessions"]] == [26, 0]
    assert manifest["tasks"]["ruhhh_image/test"]["model"] == LLAVA
    assert all(
        s["versions"]["mera-multi-hf"] and s["started_at"] <= s["finished_at"]
        for s in manifest["sessions"]
    )


def test_a_partial_resume_keeps_the_first_options_and_says_what_reports_cover(partial):
    out, first = partial
    now = _run(out)
    assert {k: now[k] for k in PROTOCOL} == {k: first[k] for k in PROTOCOL}
    assert [s["batch_size"] for s in now["sessions"]] == [8, 2]
    assert now["coverage_change"]["note"] == (
        "results now cover 4 of 4 logged examples of "
        "ruhhh_image (the reports replaced covered 2 of "
        "ruhhh_image)"
    )


def test_fewer_examples_after_more_are_said_in_one_line(hf_runs, tmp_path, capsys):
    root, _ = hf_runs
    out = tmp_path / "fewer"
    shutil.copytree(root / "hf", out)
    marker = json.loads((out / ".mera-multi-outputs.json").read_text())
    marker["folder"] = str(out.resolve())  # this copy's own (a copied marker grants nothing)
    (out / ".mera-multi-outputs.json").write_text(json.dumps(marker))
    capsys.readouterr()
    assert (
        main(
            [
                "evaluate",
                "--output-dir",
                str(out),
                "--no-progress",
                "--limit",
                "2",
                "--max-new-tokens",
                "8",
            ]
        )
        == 0
    )
    note = "results now cover 2 of 26 logged examples of ruhhh_image"
    assert f"note: {note}" in capsys.readouterr().out
    assert _run(out)["coverage_change"]["note"].startswith(note)
    assert _run(out)["coverage_change"]["before"] == {"ruhhh_image": {"split": "test", "n": 26}}


def test_a_resume_under_other_fixed_settings_is_refused_in_one_line(hf_runs, tmp_path, capsys):
    root, _ = hf_runs
    out = tmp_path / "seed"
    shutil.copytree(root / "hf", out)
    marker = json.loads((out / ".mera-multi-outputs.json").read_text())
    marker["folder"] = str(out.resolve())
    (out / ".mera-multi-outputs.json").write_text(json.dumps(marker))
    before = (out / "run_manifest.json").read_bytes()
    assert (
        main(
            [
                "evaluate",
                "--output-dir",
                str(out),
                "--no-progress",
                "--max-new-tokens",
                "8",
                "--seed",
                "7",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err.strip()
    assert err.startswith("mera-multi: error: ") and "\n" not in err
    assert "seed: 1234 there, 7 now" in err and "run_manifest.json" in err
    assert (out / "run_manifest.json").read_bytes() == before  # nothing already done is lost


def test_the_openai_key_from_the_environment_is_never_recorded_as_typed(openai_run):
    manifest = _manifest(openai_run)
    assert manifest["sessions"][0]["environment"] == {"api_key": "from $OPENAI_API_KEY"}
    assert "--api-key" not in manifest["sessions"][0]["command"]
    for path in openai_run.rglob("*"):
        if path.is_file() and path.suffix in (".json", ".jsonl", ".md", ".html"):
            assert KEY not in path.read_text(encoding="utf-8"), path


def test_a_wrong_openai_key_gets_a_readable_hint(chat_server, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "wrong")
    assert (
        main(
            [
                "evaluate",
                "--backend",
                "openai",
                "--base-url",
                chat_server,
                "--model",
                "tiny-served",
                "--data",
                "sample",
                "--limit",
                "1",
                "--output-dir",
                str(tmp_path / "o"),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "set the right key in $OPENAI_API_KEY or give it with --api-key" in err
    assert "***" not in err


def test_score_of_this_projects_log_carries_the_runs_provenance(hf_runs):
    root, _ = hf_runs
    scored, made = (
        _score(root / "hf" / "samples_ruhhh_image_test.jsonl", root / "scored2"),
        _run(root / "hf"),
    )
    assert scored["mode"] == "score" and scored["generated_in"] == str(root / "hf")
    assert {k: scored[k] for k in PROTOCOL} == {k: made[k] for k in PROTOCOL}
    assert scored["sessions"] == _manifest(root / "hf")["sessions"]  # the resume's too
    assert made["sessions"] == scored["sessions"][:1]  # the session that wrote the results


def test_score_of_an_lm_eval_log_records_its_config_block_masked(lm_eval_logs, tmp_path):
    run = _score(lm_eval_logs, tmp_path / "scored")
    config = run["harness_config"]
    assert config["model"] == "local-chat-completions" and config["batch_size"] == 1
    assert config["model_args"] == ("model=served-vlm,base_url=http://127.0.0.1:9/v1,api_key=***")
    assert run["model"] == "served-vlm" and "generation" not in run
    assert KEY not in (tmp_path / "scored" / "results.json").read_text()


@pytest.fixture(scope="module")
def keyed_judge(tmp_path_factory):
    from mera_multi_hf.serving import judge_server

    path = build_tiny_judge(tmp_path_factory.mktemp("keyed-judge"))
    server = judge_server.serve(
        str(path), "127.0.0.1", 0, device="cpu", batch_size=8, api_key=JUDGE_KEY
    )
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_every_judge_client_reads_the_key_from_the_environment(
    keyed_judge, hf_runs, tmp_path, monkeypatch, capsys
):
    root, _ = hf_runs
    labelled = tmp_path / "labelled.jsonl"
    rows = [
        {"prompt": "Вопрос?", "gold": "да", "prediction": p, "label": int(p == "да")}
        for p in ("да", "нет", "да", "может быть")
    ]
    labelled.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    agreement = ["judge", "agreement", "--data", str(labelled), "--url", keyed_judge + "/classify"]
    # without a key: refused, and the hint names this command's own flag
    assert main(agreement) == 2
    err = capsys.readouterr().err
    assert "--tokenizer PATH_OR_ID" in err and "--judge-tokenizer" not in err
    monkeypatch.setenv("MERA_JUDGE_API_KEY", JUDGE_KEY)
    assert main(agreement) == 0
    assert "kappa" in capsys.readouterr().out.lower()
    run = _score(
        root / "hf" / "samples_ruhhh_image_test.jsonl",
        tmp_path / "judged",
        "--judge-url",
        keyed_judge + "/classify",
    )
    judged = json.loads((tmp_path / "judged" / "results.json").read_text())["tasks"]
    assert set(judged["ruhhh_image"]["judge"]) == {"judge_score", "group_judge_score"}
    assert run["environment"] == {"judge_api_key": "from $MERA_JUDGE_API_KEY"}
    assert JUDGE_KEY not in json.dumps(run)
    # a URL with a password together with a key from the environment: refused, one line
    with_password = keyed_judge.replace("http://", "http://user:pw@") + "/classify"
    assert (
        main(
            [
                "score",
                "--task",
                "ruhhh_image",
                "--data",
                "sample",
                "--predictions",
                str(root / "hf" / "samples_ruhhh_image_test.jsonl"),
                "--out",
                str(tmp_path / "pw"),
                "--judge-url",
                with_password,
            ]
        )
        == 2
    )
    err = capsys.readouterr().err.strip()
    assert "$MERA_JUDGE_API_KEY or --judge-api-key" in err and "\n" not in err


def test_the_compare_chart_shows_the_verdict(hf_runs):
    from mera_multi_hf.reporting.compare_chart import chart_figure

    root, _ = hf_runs
    result = compare_runs(root / "first", root / "hf")
    assert result["tasks"]["ruhhh_image"]["task_score"]["verdict"].startswith("too few clusters")
    texts = [
        t.get_text()
        for ax in chart_figure(result).axes
        for t in [*ax.texts, *ax.get_yticklabels()]  # the verdicts label the right axis
        if t.get_gid() == "verdict"
    ]
    assert texts and all(t.startswith("too few clusters to tell") for t in texts)


def test_the_judge_label_says_how_the_task_score_uses_it():
    from mera_multi_hf.reporting.reports import JUDGE_LABEL

    assert "reported apart" not in JUDGE_LABEL and "task score" in JUDGE_LABEL


def test_extending_a_run_to_more_tasks_adds_to_its_manifest(tmp_path):
    from mera_multi_hf.demo.builtin_models import TINY_AUDIO_MODEL_ID

    out = tmp_path / "grow"
    options = dict(
        data=["sample"], output_dir=str(out), no_progress=True, limit=2, max_new_tokens=4
    )
    run_evaluation(tasks="ruhhh_image", **options)
    first = _manifest(out)
    assert "audio_model" not in first["fixed"]["resolved"]  # the audio model was not loaded
    run_evaluation(tasks="ruhhh_image,ruenvaqa", **options)
    grown = _manifest(out)
    assert set(grown["tasks"]) == {"ruhhh_image/test", "ruenvaqa/test"}
    assert grown["tasks"]["ruenvaqa/test"]["model"] == TINY_AUDIO_MODEL_ID
    # the first session's options kept; the audio model's, loaded only now, added
    resolved = dict(grown["fixed"]["resolved"])
    assert resolved.pop("audio_model")["model_class"] == "Qwen2AudioForConditionalGeneration"
    assert resolved == first["fixed"]["resolved"]
    assert [s["tasks"] for s in grown["sessions"]] == [["ruhhh_image"], ["ruhhh_image", "ruenvaqa"]]
    run = _run(out)
    assert run["coverage_change"]["note"].startswith(
        "results now cover 2 of 2 logged examples of ruenvaqa"
    )


def _library_version(name):
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def test_recorded_versions_are_importlib_metadatas_for_every_installed_distribution(
    tmp_path, monkeypatch
):
    """installed_version reads the metadata header itself (no importlib.metadata at
    start-up): the same value as importlib.metadata.version for every distribution of the
    environment, and for the odd layouts an older installer leaves (a folded field, an
    empty METADATA, an egg-info file, two copies, an unnormalized name)."""
    from importlib import metadata

    from mera_multi_hf.core.provenance import PACKAGES, installed_version

    names = {*PACKAGES, *(d.metadata["Name"] for d in metadata.distributions())}
    assert {n: installed_version(n) for n in names} == {n: _library_version(n) for n in names}

    site = tmp_path / "site"
    layouts = {
        "Folded_Pkg-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: Folded_Pkg\n"
        "Version: 1.0\n  rc1\nSummary: x\n\nVersion: 9\n",
        "empty_meta-2.0.dist-info/METADATA": "",
        "empty_meta-2.0.dist-info/PKG-INFO": "Name: empty-meta\nversion:  2.0 \n",
        "old_egg-3.1-py3.11.egg-info": "Metadata-Version: 1.0\nName: old-egg\nVersion: 3.1\n",
        "twice-4.0.dist-info/METADATA": "Name: twice\nVersion: 4.0\n",
        "twice-5.0.dist-info/METADATA": "Name: twice\nVersion: 5.0\n",
        "zope.thing-6.0.dist-info/METADATA": "Name: zope.thing\nVersion: 6.0\n",
        "headless-7.0.dist-info/METADATA": "Name: headless\nSummary: x\n\nVersion: 7.0\n",
    }
    for rel, text in layouts.items():
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_text(text, encoding="utf-8")
    monkeypatch.syspath_prepend(str(site))
    odd = ["Folded.Pkg", "empty-meta", "Old_Egg", "twice", "Zope-Thing", "headless"]
    assert [installed_version(n) for n in odd] == [_library_version(n) for n in odd]
