"""compare.html: the two runs' answers side by side, written by `mera-multi compare`; its
outcome filter (only A right, only B right, ...) checked in a real headless Chromium."""

from __future__ import annotations

import contextlib
import html
import io
import json
import re
import sys
from pathlib import Path

import pytest

from mera_multi_hf.cli.main import main

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_results_page import (  # noqa: E402
    _chromium,
    _visible,
    media_paths,
    needs_chromium,
    page_json,
    page_rows,
)

FLIPPED = 5  # the first ids whose answer run B turns to the other letter


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    """An evaluate run (A) and a score run (B) of lm-eval logs holding A's answers with the
    first FLIPPED flipped; the expected outcome of every id, from A's own sample lines."""
    from mera_multi_hf.pipeline.evaluate import run_evaluation

    root = tmp_path_factory.mktemp("cmp")
    run_evaluation(tasks="ruhhh_image", data="sample", output_dir=root / "a", no_progress=True)
    lines = [
        json.loads(x)
        for x in (root / "a/samples_ruhhh_image_test.jsonl")
        .read_text(encoding="utf-8")
        .splitlines()
    ]
    flip = {"A": "B", "B": "A"}
    logs, expected = root / "lm_eval", {}
    logs.mkdir()
    rows = []
    for n, line in enumerate(sorted(lines, key=lambda r: r["id"])):
        flipped = n < FLIPPED
        answer = flip[line["filtered"]] if flipped else line["generation"]
        rows.append(
            {
                "doc_id": n,
                "doc": {"meta": {"id": line["id"]}},
                "resps": [[answer]],
                "filtered_resps": [answer],
            }
        )
        a_right = line["metrics"]["exact_match"] == 1.0
        expected[line["id"]] = (
            ("only-a" if a_right else "only-b")
            if flipped
            else ("both-right" if a_right else "both-wrong")
        )
    (logs / "samples_ruhhh_image_2026-01-01T00-00-00.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
    )
    assert (
        main(
            [
                "score",
                "--task",
                "ruhhh_image",
                "--predictions",
                str(logs),
                "--data",
                "sample",
                "--out",
                str(root / "b"),
            ]
        )
        == 0
    )
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(["compare", str(root / "a"), str(root / "b"), "--out", str(root / "c")]) == 0
    (root / "printed.txt").write_text(printed.getvalue(), encoding="utf-8")
    return root / "c" / "compare.html", expected


def test_the_page_pairs_every_answer_with_its_outcome(compared):
    page, expected = compared
    text = page.read_text(encoding="utf-8")
    rows = page_rows(text)
    found = {r["id"]: r["outcome"] for r in rows if r["task"] == "ruhhh_image"}
    assert found == expected and len(rows) == len(expected)
    assert sum(o in ("only-a", "only-b") for o in found.values()) == FLIPPED
    assert "http://" not in text and "https://" not in text  # nothing from the network
    # ruHHH-Image's test split is private: no gold answer on the page
    assert [r["gold"] for r in rows] == ["(private split: not shown)"] * len(expected)
    # a text the rows share is in the page once (page_texts), every row resolves to it
    assert text.count("(private split") == 1
    texts = page_json(text)["texts"]
    assert len(set(texts)) == len(texts) and any("Лучший ответ" in t for t in texts)


@needs_chromium
def test_the_outcome_filter_shows_only_those_rows_in_chromium(compared):
    page, expected = compared
    for outcome in ("only-a", "only-b", "both-right"):
        dom = _chromium("--dump-dom", url=f"{page.as_uri()}#outcome={outcome}").stdout
        assert len(_visible(dom)) == sum(o == outcome for o in expected.values()), outcome
    assert len(_visible(_chromium("--dump-dom", url=page.as_uri()).stdout)) == len(expected)


def test_the_page_lists_ids_by_number_with_their_media(compared):
    page, expected = compared
    rows = page_rows(page.read_text(encoding="utf-8"))
    ids = [r["id"] for r in rows]
    assert ids == sorted(expected) and max(ids) >= 10  # 1, 2, ..., 10, not 1, 10, 11, 2
    # each row holds the example's picture, as results.html shows it, in compare_media/
    assert all([m["kind"] for m in r["media"]] == ["image"] for r in rows)
    paths = media_paths(rows)
    stored = sorted(f"compare_media/{p.name}" for p in (page.parent / "compare_media").iterdir())
    assert stored == sorted(set(paths)) and len(stored) < len(paths)  # shared pictures once


@needs_chromium
def test_each_row_shows_its_picture_from_the_folder_in_chromium(compared):
    page, _ = compared
    rows = page_rows(page.read_text(encoding="utf-8"))
    dom = _chromium("--dump-dom", url=page.as_uri()).stdout
    cells = re.findall(r'<td class="media">(.*?)</td>', dom, re.S)
    assert len(cells) == len(rows)
    assert all(
        re.fullmatch(r'<img src="compare_media/[0-9a-f]{16}\.jpg" alt="image">', c) for c in cells
    )


def _score_table(text: str) -> list[list[str]]:
    table = re.search(r'<table class="scores" id="scores">(.*?)</table>', text, re.S).group(1)
    return [
        [html.unescape(c) for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row)]
        for row in re.findall(r"<tr[^>]*>(.*?)</tr>", table, re.S)
    ]


def test_the_page_has_the_score_table_of_both_runs_and_the_difference(compared):
    page, _ = compared
    doc = json.loads((page.parent / "compare.json").read_text(encoding="utf-8"))
    table = _score_table(page.read_text(encoding="utf-8"))
    assert table[0] == ["task", "metric", "A", "B", "A − B", "95% interval", "verdict"]
    rows = {(r[0], r[1]): r[2:] for r in table[1:]}
    em = doc["tasks"]["ruhhh_image"]["metrics"]["exact_match"]
    a, b, diff, interval, verdict = rows[("ruhhh_image", "Exact match")]
    assert (float(a), float(b)) == (round(em["a"], 4), round(em["b"], 4))
    assert float(diff) == pytest.approx(em["a"] - em["b"], abs=1e-4) and verdict == em["verdict"]
    assert interval == f"[{em['low']:+.4f}, {em['high']:+.4f}]"
    score = doc["tasks"]["ruhhh_image"]["task_score"]
    assert float(rows[("ruhhh_image", "task score")][0]) == pytest.approx(score["a"], abs=1e-4)
    assert ("all shared tasks", "mean task score of 1") in rows


def test_compare_prints_a_short_table_not_the_whole_markdown(compared):
    page, _ = compared
    printed = (page.parent.parent / "printed.txt").read_text(encoding="utf-8")
    markdown = (page.parent / "compare.md").read_text(encoding="utf-8")
    assert len(printed.splitlines()) <= 12 < len(markdown.splitlines())
    assert "By category" not in printed and "| metric |" not in printed
    head = next(line for line in printed.splitlines() if line.startswith("task "))
    assert head.split() == ["task", "metric", "A", "B", "A", "−", "B", "95%", "interval", "verdict"]
    assert re.search(r"^ruhhh_image +Exact match +0\.\d{4} +0\.\d{4} +[+-]0\.\d{4}", printed, re.M)
    assert "compare.html" in printed and "compare.md" in printed
