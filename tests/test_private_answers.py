"""Private answers stay in: for a private split (the test split of a task declared
private) no file made for upload carries a gold answer or a per-example score derived
from it. Run on the bundled private sample, whose raw folder holds the answers."""

from __future__ import annotations

import io
import json
import os
import stat
import zipfile

import datasets

from mera_multi_hf.cli.main import main
from mera_multi_hf.scoring.run_results import LOCAL_ONLY


def _lines(data: bytes) -> list[dict]:
    return [json.loads(x) for x in data.decode("utf-8").splitlines()]


def _unzipped(source) -> bytes:
    """Every member of a ZIP (a path or bytes), ZIPs inside it opened too, one after another."""
    with zipfile.ZipFile(io.BytesIO(source) if isinstance(source, bytes) else source) as zf:
        return b"".join(
            _unzipped(zf.read(n)) if n.endswith(".zip") else zf.read(n) for n in zf.namelist()
        )


def test_submission_and_its_public_logs_carry_no_private_gold(tmp_path, capsys):
    out = tmp_path / "run"
    assert (
        main(
            [
                "evaluate",
                "--data",
                "sample",
                "--limit",
                "4",
                "--output-dir",
                str(out),
                "--no-progress",
            ]
        )
        == 0
    )
    with zipfile.ZipFile(out / "submission.zip") as zf:
        inner = zipfile.ZipFile(io.BytesIO(zf.read("logs_public.zip")))
        public = _lines(inner.read("samples_ruhhh_image_test.jsonl"))
    assert len(public) == 4
    for record in public:
        assert "target" not in record and "metrics" not in record
        assert record["generation"] and record["filtered"] is not None
    local = _lines((out / "samples_ruhhh_image_test.jsonl").read_bytes())
    assert all(r["target"] in ("A", "B") and r["gold_private"] is True for r in local)
    run = json.loads((out / "results.json").read_text())["run"]
    # every file with a per-example verdict is listed, and says so itself
    assert run["gold_private"]["files"] == [
        "samples_ruhhh_image_test.jsonl",
        "results.json",
        "results.html",
        "results_media/",
    ]
    assert run["gold_private"]["local_only"] == LOCAL_ONLY
    assert f'class="local-only" role="alert"><strong>{LOCAL_ONLY}' in (
        out / "results.html"
    ).read_text(encoding="utf-8")
    assert LOCAL_ONLY.encode() not in _unzipped(out / "submission.zip")  # no upload file
    # a public split (shots) is not marked, its logs keep the gold
    assert (
        main(
            [
                "evaluate",
                "--data",
                "sample",
                "--limit",
                "2",
                "--split",
                "shots",
                "--output-dir",
                str(tmp_path / "shots"),
                "--no-progress",
            ]
        )
        == 0
    )
    shots = _lines((tmp_path / "shots" / "samples_ruhhh_image_shots.jsonl").read_bytes())
    assert all("gold_private" not in r and "target" in r for r in shots)
    assert LOCAL_ONLY not in (tmp_path / "shots" / "results.html").read_text(encoding="utf-8")


def test_export_without_internal_flag_carries_no_private_gold(raw_sample, tmp_path):
    # the card's data example is a test record, with its answer
    meta = json.loads((raw_sample / "raw_dataset_meta.json").read_text(encoding="utf-8"))
    record = json.loads((raw_sample / "test.json").read_text(encoding="utf-8"))["data"][0]
    assert record["outputs"] == "A"
    meta["data_example"] = record
    (raw_sample / "raw_dataset_meta.json").write_text(
        json.dumps(meta, ensure_ascii=False), encoding="utf-8"
    )
    out = tmp_path / "export"
    assert main(["build", "ruhhh_image", "--raw", str(raw_sample), "--out", str(out)]) == 0
    test = datasets.load_dataset(str(out), split="test")
    assert set(test["outputs"]) == {""}
    assert set(datasets.load_dataset(str(out), split="shots")["outputs"]) <= {"A", "B"}
    card = (out / "README.md").read_text(encoding="utf-8")
    assert '"outputs": ""' in card and '"outputs": "A"' not in card
    internal = tmp_path / "internal"  # the internal export keeps it, marked so
    assert (
        main(
            [
                "build",
                "ruhhh_image",
                "--raw",
                str(raw_sample),
                "--out",
                str(internal),
                "--internal-with-answers",
            ]
        )
        == 0
    )
    assert '"outputs": "A"' in (internal / "README.md").read_text(encoding="utf-8")


def test_scores_of_a_private_split_are_marked_local(tmp_path):
    predictions = tmp_path / "p.jsonl"
    predictions.write_text(
        "".join(json.dumps({"id": i, "prediction": "A"}) + "\n" for i in range(1, 27))
    )
    out = tmp_path / "scores"
    assert (
        main(
            [
                "score",
                "--task",
                "ruhhh_image",
                "--predictions",
                str(predictions),
                "--data",
                "sample",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert json.loads((out / "results.json").read_text())["run"]["gold_private"]["files"] == [
        "results.json",
        "results.html",
        "results_media/",
    ]
    with zipfile.ZipFile(out / "submission.zip") as zf:  # the layout of evaluate's ZIP
        assert zf.namelist() == ["ruHHH_Image.json", "logs_public.zip"]
        inner = zipfile.ZipFile(io.BytesIO(zf.read("logs_public.zip")))
    assert inner.namelist() == ["p.jsonl"]  # the predictions as given, gold-free
    assert _lines(inner.read("p.jsonl")) == [{"id": i, "prediction": "A"} for i in range(1, 27)]


def test_a_comparison_of_private_runs_is_marked_local_only(tmp_path):
    """Who got which example right gives an A/B task's gold back: compare.json and
    compare.html of a private split say that they are local only; of a public one, not."""

    def run(name, *extra):
        assert (
            main(
                [
                    "evaluate",
                    "--data",
                    "sample",
                    "--limit",
                    "6",
                    "--output-dir",
                    str(tmp_path / name),
                    "--no-progress",
                    *extra,
                ]
            )
            == 0
        )
        return str(tmp_path / name)

    for split, marked in (("test", True), ("shots", False)):
        a, b = (
            run(f"{split}-a", "--split", split),
            run(f"{split}-b", "--split", split, "--seed", "7"),
        )
        out = tmp_path / f"compare-{split}"
        assert main(["compare", a, b, "--out", str(out)]) == 0
        doc = json.loads((out / "compare.json").read_text(encoding="utf-8"))
        page = (out / "compare.html").read_text(encoding="utf-8")
        assert (doc["gold_private"] is not None) is marked and (LOCAL_ONLY in page) is marked
        media = out / "compare_media"  # the page's media follow its privacy
        closed = {stat.S_IMODE(os.stat(p).st_mode) for p in [media, *media.iterdir()]}
        assert list(media.iterdir()) and (closed <= {0o700, 0o600}) is marked
        if marked:
            assert doc["gold_private"]["tasks"] == ["ruhhh_image"]
            assert doc["gold_private"]["local_only"] == LOCAL_ONLY
            assert "compare_media/" in doc["gold_private"]["files"]
            assert stat.S_IMODE(os.stat(out / "compare.html").st_mode) == 0o600
        assert LOCAL_ONLY not in (out / "compare.md").read_text(encoding="utf-8")


def test_a_split_made_private_by_its_data_gets_the_banner_and_a_closed_page(tmp_path):
    """A public-by-default task (ruCommonVQA) whose raw data says its test split is
    private (test.json "access"): decided once, when the split is loaded, and every
    writer asks that record: the page carries the banner and is written 0600, the
    sample lines are marked, the submission's logs carry no gold, results.json says so."""
    import os
    import shutil
    import stat

    from mera_multi_hf.demo.sample_data import bundled_sample
    from mera_multi_hf.tasks.table import get_task

    assert get_task("rucommonvqa").public
    raw = tmp_path / "ruCommonVQA"
    shutil.copytree(bundled_sample("rucommonvqa"), raw)
    doc = json.loads((raw / "test.json").read_text(encoding="utf-8"))
    (raw / "test.json").write_text(
        json.dumps(dict(doc, access="private"), ensure_ascii=False), encoding="utf-8"
    )
    out = tmp_path / "run"
    argv = ["evaluate", "--tasks", "rucommonvqa", "--data", str(raw), "--limit", "3"]
    assert main([*argv, "--output-dir", str(out), "--no-progress"]) == 0
    page = out / "results.html"
    assert f'class="local-only" role="alert"><strong>{LOCAL_ONLY}' in page.read_text(
        encoding="utf-8"
    )
    assert stat.S_IMODE(os.stat(page).st_mode) == 0o600
    # the page's media folder follows the page: closed, and listed with it
    media = out / "results_media"
    assert stat.S_IMODE(os.stat(media).st_mode) == 0o700 and list(media.iterdir())
    assert all(stat.S_IMODE(os.stat(p).st_mode) == 0o600 for p in media.iterdir())
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert results["tasks"]["rucommonvqa"]["private"] is True
    assert {"results.html", "results_media/"} <= set(results["run"]["gold_private"]["files"])
    local = _lines((out / "samples_rucommonvqa_test.jsonl").read_bytes())
    assert len(local) == 3 and all(r["gold_private"] is True for r in local)
    with zipfile.ZipFile(out / "submission.zip") as zf:
        inner = zipfile.ZipFile(io.BytesIO(zf.read("logs_public.zip")))
        public = _lines(inner.read("samples_rucommonvqa_test.jsonl"))
    assert all("target" not in r and "metrics" not in r for r in public)
