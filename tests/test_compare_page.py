"""compare.html: the two runs' answers side by side, written by `mera-multi compare`; its
outcome filter (only A right, only B right, ...) checked in a real headless Chromium."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from mera_multi_hf.cli.main import main

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_results_page import _chromium, _visible, needs_chromium  # noqa: E402

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
    assert main(["compare", str(root / "a"), str(root / "b"), "--out", str(root / "c")]) == 0
    return root / "c" / "compare.html", expected


def test_the_page_pairs_every_answer_with_its_outcome(compared):
    page, expected = compared
    text = page.read_text(encoding="utf-8")
    found = dict(
        (int(i), o)
        for o, i in re.findall(
            r'<tr class="ex ([a-z-]+)"[^>]*>\s*<td>ruhhh_image<br>id (\d+)', text
        )
    )
    assert found == expected
    assert sum(o in ("only-a", "only-b") for o in found.values()) == FLIPPED
    assert "http://" not in text and "https://" not in text  # nothing from the network
    # ruHHH-Image's test split is private: no gold answer on the page
    assert text.count("(private split: not shown)") == len(expected)


@needs_chromium
def test_the_outcome_filter_shows_only_those_rows_in_chromium(compared):
    page, expected = compared
    for outcome in ("only-a", "only-b", "both-right"):
        dom = _chromium("--dump-dom", url=f"{page.as_uri()}#outcome={outcome}").stdout
        assert len(_visible(dom)) == sum(o == outcome for o in expected.values()), outcome
    assert len(_visible(_chromium("--dump-dom", url=page.as_uri()).stdout)) == len(expected)
