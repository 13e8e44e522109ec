"""`mera-multi compare` per prompt variant: a change that helps one wording and hurts
another shows in compare.json, compare.md, the console and compare.html; a run folder
written before variants were recorded is still compared, with one note."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from test_compare import _examples as compare_examples
from test_compare import _run

from mera_multi_hf.cli.main import main

VARIANTS = ("i0", "i1", "i2", "i3")


def _examples(task_key: str, n: int, group_size: int = 1):
    """Examples whose variant turns every example (so a group spans variants)."""
    task, examples = compare_examples(task_key, n, group_size, lambda i: f"{VARIANTS[i % 4]}: q{i}")
    return task, [
        replace(e, prompt_variant=VARIANTS[i % 4], prompt_variant_number=i % 4 + 1)
        for i, e in enumerate(examples)
    ]


def _helps_one_hurts_another(n: int):
    """Run A right on 90% of variant i0 and 40% of i1, B the other way round; both 70%
    elsewhere (the same answers)."""
    rng = np.random.default_rng(11)
    base = rng.random(n)
    variant = np.arange(n) % 4
    a = np.where(variant == 0, base < 0.9, np.where(variant == 1, base < 0.4, base < 0.7))
    b = np.where(variant == 0, base < 0.4, np.where(variant == 1, base < 0.9, base < 0.7))
    return a, b, variant


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    folder = tmp_path_factory.mktemp("variants")
    task, examples = _examples("weird", 800)
    right_a, right_b, variant = _helps_one_hurts_another(800)
    a = _run(folder / "a", task, examples, right_a, "a")
    b = _run(folder / "b", task, examples, right_b, "b")
    return folder, a, b, right_a, right_b, variant


def test_a_change_that_helps_one_wording_and_hurts_another_is_shown(compared, capsys):
    folder, a, b, right_a, right_b, variant = compared
    out = folder / "cmp"
    assert main(["compare", str(a), str(b), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    doc = json.loads((out / "compare.json").read_text(encoding="utf-8"))
    pv = doc["tasks"]["weird"]["prompt_variants"]
    assert doc["prompt_variants_note"] is None
    assert pv["metric"] == "exact_match" and list(pv["variants"]) == list(VARIANTS)
    assert (pv["helps"], pv["hurts"]) == (["i0"], ["i1"])
    for k, name in enumerate(VARIANTS):
        row = pv["variants"][name]
        em = row["metrics"]["exact_match"]
        mine = variant == k
        assert row["number"] == k + 1 and row["n"] == 200
        assert em["difference"] == pytest.approx(right_a[mine].mean() - right_b[mine].mean())
        assert em["low"] <= em["difference"] <= em["high"] and em["n_clusters"] == 200
        assert set(row["metrics"]) == {"exact_match", "exact_match_extracted"}
    for k in (2, 3):  # the same answers there
        assert pv["variants"][VARIANTS[k]]["metrics"]["exact_match"]["verdict"] == "no difference"
    line = next(x for x in printed.splitlines() if x.startswith("weird: A − B in Exact match"))
    assert "A better on #1 i0; B better on #2 i1" in line and "hurts another" in line
    md = (out / "compare.md").read_text(encoding="utf-8")
    assert "By prompt variant" in md and "| #2 i1 (200): Exact match |" in md
    page = (out / "compare.html").read_text(encoding="utf-8")
    assert "Exact match, prompt #1 i0" in page and "Exact match, prompt #4 i3" in page


def test_a_run_from_before_variants_is_compared_with_one_note(compared, capsys):
    folder, a, b, *_ = compared
    old = folder / "old"
    old.mkdir()
    doc = json.loads((b / "results.json").read_text(encoding="utf-8"))
    doc.pop("prompts")  # the prompt tables, beside the tasks
    for entry in doc["tasks"].values():
        entry["examples"].pop("prompt_variant")
        entry["examples"].pop("prompt_stratum")
    (old / "results.json").write_text(json.dumps(doc), encoding="utf-8")
    out = folder / "cmp-old"
    assert main(["compare", str(a), str(old), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    result = json.loads((out / "compare.json").read_text(encoding="utf-8"))
    assert result["tasks"]["weird"]["prompt_variants"] is None
    assert result["tasks"]["weird"]["metrics"]["exact_match"]["verdict"]  # compared still
    note = result["prompt_variants_note"]
    assert note.startswith("not compared per prompt variant: run B (") and str(old) in note
    assert printed.count(note) == 1
    assert (out / "compare.md").read_text(encoding="utf-8").count(note) == 1
    assert note in (out / "compare.html").read_text(encoding="utf-8")


def test_group_metrics_are_left_out_per_variant(tmp_path):
    """ruHHH-Image's pairs of one group carry different variants here: a group metric
    has no value per variant; the per-example EM does."""
    from mera_multi_hf.reporting.compare import compare_runs

    task, examples = _examples("ruhhh_image", 320, group_size=2)
    right = np.random.default_rng(3).random(320) < 0.7
    a = _run(tmp_path / "a", task, examples, right, "a")
    b = _run(tmp_path / "b", task, examples, ~right, "b")
    pv = compare_runs(a, b)["tasks"]["ruhhh_image"]["prompt_variants"]
    assert pv["metric"] == "exact_match"
    for row in pv["variants"].values():
        assert "group_exact_match" not in row["metrics"] and "exact_match" in row["metrics"]


def test_the_chart_shows_each_variants_difference_under_its_task(compared):
    from mera_multi_hf.reporting.compare import compare_runs
    from mera_multi_hf.reporting.compare_chart import chart_figure

    _, a, b, right_a, right_b, variant = compared
    result = compare_runs(a, b)
    fig = chart_figure(result)
    fig.canvas.draw()
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()][::-1]  # top to bottom
    verdicts = [t.get_text() for t in fig.axes[1].get_yticklabels()][::-1]
    rows = [f"weird: Exact match, prompt #{k + 1} {v}" for k, v in enumerate(VARIANTS)]
    assert labels[-4:] == rows and not any("prompt #" in x for x in labels[:-4])
    assert verdicts[-4:][:2] == ["A better", "B better"]
    # each variant's point is its paired difference (plotted bottom up)
    points = [bars.lines[0].get_xdata()[0] for bars in fig.axes[0].containers]
    for k in range(4):
        mine = variant == k
        assert points[3 - k] == pytest.approx(right_a[mine].mean() - right_b[mine].mean())
    assert "orange: per prompt variant" in fig.axes[0].get_xlabel()
