"""The metric library (mera_multi_hf.metric_* by family) and the evaluate modules in metrics/."""

from __future__ import annotations

import doctest
import inspect
import json
import os
import random
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.scoring import (
    metric_exact_match,
    metric_extraction,
    metric_groups,
    metric_ruslun,
)
from mera_multi_hf.scoring.metric_exact_match import (
    exact_match_scores,
    normalize,
    warn_if_squad_on_letters,
)
from mera_multi_hf.scoring.metric_extraction import extract_answer
from mera_multi_hf.scoring.metric_groups import group_mean, group_scores
from mera_multi_hf.scoring.metric_ruslun import slot_f1_scores

REPO = Path(__file__).resolve().parent.parent
METRICS = ("exact_match", "group_exact_match", "slot_f1", "judge_score")


# ---------------------------------------------------------------------------------
# Exact match against lm-eval's implementation (an independent reference).


def _random_pairs(n: int, seed: int = 13) -> tuple[list[str], list[str]]:
    """Answer-like pairs: letters, Cyrillic and Latin words, punctuation, spaces, empties.

    About half the references are the prediction with case, punctuation or spacing
    changed, so both outcomes are well represented.
    """
    rng = random.Random(seed)
    words = [
        "A",
        "b",
        "C",
        "d",
        "Б",
        "в",
        "да",
        "Нет",
        "кошка",
        "Синий",
        "The",
        "an",
        "red",
        "ёлка",
        "ЁЖ",
        "42",
        "3.14",
        "x-y",
        "",
    ]
    punct = list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~") + ["«", "»", "—", "…"]
    spaces = [" ", "  ", "\t", "\n", ""]

    def phrase() -> str:
        parts = []
        for _ in range(rng.randint(0, 4)):
            parts.append(rng.choice(words))
            if rng.random() < 0.4:
                parts.append(rng.choice(punct))
            parts.append(rng.choice(spaces))
        return "".join(parts)

    def perturb(s: str) -> str:
        kind = rng.randrange(5)
        if kind == 0:
            return s.upper()
        if kind == 1:
            return s.swapcase()
        if kind == 2:
            i = rng.randint(0, len(s))
            return s[:i] + rng.choice(punct) + s[i:]
        if kind == 3:
            return s + rng.choice(spaces)
        return s

    preds, refs = [], []
    for _ in range(n):
        p = phrase()
        preds.append(p)
        refs.append(perturb(p) if rng.random() < 0.5 else phrase())
    return preds, refs


def test_mera_mode_matches_lm_eval_exact_match_per_example():
    from lm_eval.api.metrics import exact_match_hf_evaluate

    params = inspect.signature(exact_match_hf_evaluate).parameters
    assert {"predictions", "references", "ignore_case", "ignore_punctuation"} <= set(params)
    # lm-eval works on numpy fixed-width strings, which silently drop trailing NUL
    # characters and truncate characters whose lowercase is longer (e.g. 'İ'); the pairs
    # avoid both, so any difference left is a real disagreement.
    preds, refs = _random_pairs(1500)
    ours = exact_match_scores(preds, refs, mode="mera")
    theirs = np.array(
        [
            exact_match_hf_evaluate([p], [r], ignore_case=True, ignore_punctuation=True)[
                "exact_match"
            ]
            for p, r in zip(preds, refs)
        ]
    )
    mismatches = [(p, r) for p, r, a, b in zip(preds, refs, ours, theirs) if a != b]
    assert not mismatches, mismatches[:5]
    assert 0.2 < ours.mean() < 0.8  # both outcomes well represented
    whole = exact_match_hf_evaluate(preds, refs, ignore_case=True, ignore_punctuation=True)
    assert whole["exact_match"] == pytest.approx(ours.mean())


def test_strict_mode_matches_lm_eval_without_options():
    from lm_eval.api.metrics import exact_match_hf_evaluate

    preds, refs = _random_pairs(1000, seed=5)
    ours = exact_match_scores(preds, refs, mode="strict")
    theirs = [exact_match_hf_evaluate([p], [r])["exact_match"] for p, r in zip(preds, refs)]
    assert ours.tolist() == [int(t) for t in theirs]


def test_normalisation_modes():
    assert normalize("Ответ: B.", "mera") == "ответ b"
    assert normalize(" A ", "mera") == " a "  # no whitespace strip
    assert normalize("«Да»—нет", "mera") == "«да»—нет"  # only ASCII punctuation goes
    assert normalize("Ответ: B.", "strict") == "Ответ: B."
    assert normalize("The  cat, an apple!", "squad") == "cat apple"
    assert normalize("theatre", "squad") == "theatre"  # whole words only
    assert normalize("A", "squad") == ""
    with pytest.raises(MeraError, match="unknown exact-match mode 'loose'"):
        normalize("x", "loose")


def test_exact_match_scores_cases():
    assert exact_match_scores(["A", " A", "a.", ""], ["A", "A", "A", ""]).tolist() == [1, 0, 1, 1]
    assert exact_match_scores(["A", "a"], ["A", "A"], mode="strict").tolist() == [1, 0]
    # A list of acceptable answers matches any of them.
    assert exact_match_scores(
        ["Кошка", "пёс", "кот"], [["кот", "кошка"], ["кот"], "Кот"]
    ).tolist() == [1, 0, 1]
    with pytest.raises(MeraError, match="2 predictions but 1 references"):
        exact_match_scores(["a", "b"], ["a"])
    with pytest.raises(MeraError, match=r"predictions\[1\] is NoneType"):
        exact_match_scores(["a", None], ["a", "b"])


def test_squad_warns_on_letter_tasks_only():
    with pytest.warns(UserWarning, match="gold 'A' becomes ''"):
        warn_if_squad_on_letters("squad", "letter")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_if_squad_on_letters("squad", "free")
        warn_if_squad_on_letters("mera", "letter")
    # The trap the warning is about is real:
    assert exact_match_scores([""], ["A"], mode="squad").tolist() == [1]


def test_extract_answer_is_separate_from_official_em():
    assert extract_answer("Ответ: B.") == "B"
    assert extract_answer("ответ: b") == "B"
    assert extract_answer("Сначала ответ A, но окончательный ОТВЕТ: **C**") == "C"
    assert extract_answer("Ответ: (А)") == "A"  # Cyrillic look-alike
    assert extract_answer("ОТВЕТ: В", choices=["А", "Б", "В", "Г"]) == "В"  # Cyrillic choices
    assert extract_answer("ответ: B", choices=["А", "Б", "В", "Г"]) == "В"
    assert extract_answer("Б") == "Б"
    assert extract_answer("Ответ: синий цвет.") == "синий цвет."
    assert extract_answer("  просто текст ") == "просто текст"
    assert extract_answer("ответ:") == ""
    # Official EM does not extract:
    assert exact_match_scores(["Ответ: B."], ["B"]).tolist() == [0]


def test_group_mean_hand_cases():
    # groups: 1 -> all right, 2 -> one wrong, 3 -> single right, 4 -> single wrong
    scores = [1, 1, 1, 0, 1, 1, 0]
    groups = [1, 1, 2, 2, 2, 3, 4]
    assert group_scores(scores, groups).tolist() == [1, 0, 1, 0]
    assert group_mean(scores, groups) == 0.5
    assert group_mean([1, 1], ["x", "x"]) == 1.0  # any sortable ids work
    assert group_mean([1, 0, 1], [5, 5, 5]) == 0.0  # one wrong answer sinks the group
    with pytest.raises(MeraError, match="3 scores but 2 group ids"):
        group_mean([1, 1, 1], [1, 2])
    with pytest.raises(MeraError, match="no examples"):
        group_mean([], [])


def test_group_mean_agrees_with_a_plain_loop():
    rng = np.random.default_rng(3)
    ids = rng.integers(0, 500, size=3000)
    scores = (rng.random(3000) < 0.9).astype(int)
    by_group: dict = {}
    for s, g in zip(scores, ids):
        by_group.setdefault(g, []).append(s)
    expected = sum(all(v == 1 for v in vals) for vals in by_group.values()) / len(by_group)
    assert group_mean(scores, ids) == pytest.approx(expected)


# ---------------------------------------------------------------------------------
# ruSLUn: input -> output pairs worked out by hand from the official process_results
# (multimodal_tasks/ruslun/utils.py): the prediction is lowercased and cleaned (fences,
# backticks, a leading "json:"/"JSON<newline>", one level of quotes), read with
# json.loads; the gold with json.loads after ' -> "; intent EM compares the intents,
# slot F1 the multisets of (str(key), str(value)) pairs (1 when both are empty).

GOLD = "{'intent': 'alarm_set', 'slots': [{'time': 'Семь утра'}, {'date': 'завтра'}]}"
CAMEL = "{'intent': 'SetAlarm', 'slots': [{'date': 'завтра'}]}"
OFFICIAL_CRASHES = "official raises"

# (prediction, gold, intent EM, slot F1, the official code's outcome), values by hand.
RUSLUN_TABLE = [
    # gold is not lowercased: "Семь утра" never matches the lowercased "семь утра"
    (
        '{"intent": "alarm_set", "slots": [{"time": "семь утра"}, {"date": "завтра"}]}',
        GOLD,
        1,
        0.5,
        None,
    ),
    # CamelCase gold intent: never matches (official); the slot still does
    ('{"intent": "SetAlarm", "slots": [{"date": "завтра"}]}', CAMEL, 0, 1.0, None),
    # a single-quoted dict is not JSON: json.loads only
    ("{'intent': 'alarm_set', 'slots': [{'date': 'завтра'}]}", GOLD, 0, 0.0, None),
    # "json" followed by a space stays, so the text does not parse
    ('json {"intent": "alarm_set", "slots": [{"date": "завтра"}]}', GOLD, 0, 0.0, None),
    ('`json {"intent": "alarm_set", "slots": [{"date": "завтра"}]}`', GOLD, 0, 0.0, None),
    # "json:" + line break, and "JSON" + line break: removed; C=1, P=1, R=1/2
    ('json:\n{"intent": "alarm_set", "slots": [{"date": "завтра"}]}', GOLD, 1, 2 / 3, None),
    ('JSON\n{"intent": "alarm_set", "slots": [{"date": "завтра"}]}', GOLD, 1, 2 / 3, None),
    # a quoted JSON string is unwrapped by a literal parse; no slots vs two -> 0
    ('"{\\"intent\\": \\"alarm_set\\", \\"slots\\": []}"', GOLD, 1, 0.0, None),
    ('\'{"intent": "alarm_set", "slots": [{"date": "завтра"}]}\'', GOLD, 1, 2 / 3, None),
    # fences, with and without a language word; upper case is lowered first
    ('```json\n{"intent": "ALARM_SET", "slots": [{"date": "Завтра"}]}\n```', GOLD, 1, 2 / 3, None),
    ('  ```{"intent": "alarm_set", "slots": []}```  ', GOLD, 1, 0.0, None),
    ('`{"intent": "x", "slots": [{"date": "завтра"}, {"time": "Семь утра"}]}`', GOLD, 0, 0.5, None),
    ("это не json", GOLD, 0, 0.0, None),
    ('{"intent": "alarm_set", "slots": [', GOLD, 0, 0.0, None),
    ("null", GOLD, 0, 0.0, None),
    # an empty object: intent None != "x"; both slot lists empty -> F1 1
    ("{}", "{'intent': 'x', 'slots': []}", 0, 1.0, None),
    # values compare as str(): 5 and "5" match, a list never matches a string
    (
        '{"intent": "a", "slots": [{"n": 5}]}',
        "{'intent': 'a', 'slots': [{'n': '5'}]}",
        1,
        1.0,
        None,
    ),
    ('{"intent": "alarm_set", "slots": [{"date": ["завтра"]}]}', GOLD, 1, 0.0, None),
    ('{"intent": "alarm_set", "slots": null}', GOLD, 1, 0.0, None),
    # malformed answers score 0 where the official code aborts the whole run
    ('["alarm_set"]', GOLD, 0, 0.0, OFFICIAL_CRASHES),
    ('{"intent": "alarm_set", "slots": {"date": "завтра"}}', GOLD, 0, 0.0, OFFICIAL_CRASHES),
    ('{"intent": "alarm_set", "slots": ["date"]}', GOLD, 0, 0.0, OFFICIAL_CRASHES),
    ('{"intent": "alarm_set", "slots": "завтра"}', GOLD, 0, 0.0, OFFICIAL_CRASHES),
    ("[" * 50000 + "]" * 50000, GOLD, 0, 0.0, OFFICIAL_CRASHES),
    # a Python set (unhashable in the old code) is no JSON
    ("{'intent': 'a', 'slots': [{'k': {1, 2}}]}", GOLD, 0, 0.0, None),
]


@pytest.mark.parametrize("prediction, gold, intent, f1, official", RUSLUN_TABLE)
def test_ruslun_table(prediction, gold, intent, f1, official):
    em, scores = slot_f1_scores([prediction], [gold])
    assert em.tolist() == [intent]
    assert scores[0] == pytest.approx(f1)
    if official == OFFICIAL_CRASHES:  # where the official code aborts, the answer scores 0
        assert (intent, f1) == (0, 0.0)


def test_ruslun_whole_table_at_once_never_aborts():
    preds = [row[0] for row in RUSLUN_TABLE]
    golds = [row[1] for row in RUSLUN_TABLE]
    scores = metric_ruslun.ruslun_scores(preds, golds)
    assert scores["intent_exact_match"].tolist() == [row[2] for row in RUSLUN_TABLE]
    assert scores["slot_f1"].tolist() == pytest.approx([row[3] for row in RUSLUN_TABLE])


def test_ruslun_case_insensitive_variant_is_beside_the_official_one():
    scores = metric_ruslun.ruslun_scores(
        ['{"intent": "SetAlarm", "slots": [{"time": "Семь утра"}]}'],
        ["{'intent': 'SetAlarm', 'slots': [{'time': 'Семь утра'}, {'date': 'завтра'}]}"],
        case_insensitive=True,
    )
    # official: intent 0 (gold CamelCase); slots: C=0 -> 0. corrected: intent 1; C=1,
    # P=1, R=1/2 -> 2/3
    assert {k: v.tolist() for k, v in scores.items()} == {
        "intent_exact_match": [0.0],
        "slot_f1": [0.0],
        "intent_exact_match_ci": [1.0],
        "slot_f1_ci": [pytest.approx(2 / 3)],
    }
    assert set(metric_ruslun.ruslun_scores(["{}"], ["{'intent': 'x'}"])) == {
        "intent_exact_match",
        "slot_f1",
    }


def test_ruslun_prefiltered_predictions_are_not_filtered_twice():
    from mera_multi_hf.scoring.filters import apply_filters

    raw = 'json: json:\n{"intent": "A", "slots": []}'
    once = apply_filters(("lowercase", "slot_clean"), raw)
    assert once == 'json:\n{"intent": "a", "slots": []}'  # one prefix goes, as officially
    gold = "{'intent': 'a', 'slots': []}"
    assert metric_ruslun.ruslun_scores([raw], [gold])["intent_exact_match"].tolist() == [0.0]
    assert metric_ruslun.ruslun_scores([once], [gold], filtered=True)[
        "intent_exact_match"
    ].tolist() == [0.0]
    # filtering the filtered text again would strip the second prefix and score 1
    assert metric_ruslun.ruslun_scores([once], [gold])["intent_exact_match"].tolist() == [1.0]


def test_slot_f1_multiset_and_gold_cases():
    gold = '{"intent": "play", "slots": [{"artist": "a"}, {"artist": "a"}, {"song": "s"}]}'
    # one "artist: a" predicted: C=1, P=1, R=1/3 -> F1 = 0.5
    _, f1 = slot_f1_scores(['{"intent": "play", "slots": [{"artist": "a"}]}'], [gold])
    assert f1[0] == pytest.approx(0.5)
    # three "artist: a": only two in gold -> C=2, P=2/3, R=2/3
    _, f1 = slot_f1_scores(
        ['{"intent": "play", "slots": [{"artist": "a"}, {"artist": "a"}, {"artist": "a"}]}'], [gold]
    )
    assert f1[0] == pytest.approx(2 / 3)
    # a gold given as a dict is used as it is (not lowercased either)
    em, f1 = slot_f1_scores(
        ['{"intent": "x", "slots": []}', '{"intent": "x", "slots": []}'],
        [{"intent": "X", "slots": []}, '{"intent": "x", "slots": [{"a": "b"}]}'],
    )
    assert em.tolist() == [0, 1] and f1.tolist() == [1.0, 0.0]
    # an apostrophe inside a gold value breaks the official replace; a literal parse saves it
    em, f1 = slot_f1_scores(
        ['{"intent": "a", "slots": [{"name": "д\'артаньян"}]}'],
        ["{'intent': 'a', 'slots': [{'name': \"д'артаньян\"}]}"],
    )
    assert (em.tolist(), f1.tolist()) == ([1.0], [1.0])
    with pytest.raises(MeraError, match=r"references\[0\]"):
        slot_f1_scores(["{}"], ["not json"])
    with pytest.raises(MeraError, match=r"references\[0\]: 'slots' must be a list"):
        slot_f1_scores(["{}"], ["{'intent': 'a', 'slots': 'b'}"])


def test_filters_registry():
    from mera_multi_hf.scoring.filters import FILTERS, apply_filters

    assert set(FILTERS) == {"remove_whitespace", "take_first", "lowercase", "slot_clean"}
    assert apply_filters(("remove_whitespace", "take_first"), " \n Б ") == "Б "
    assert apply_filters((), "  As Is ") == "  As Is "
    assert apply_filters(["lowercase"], "ÀБC") == "àбc"
    with pytest.raises(MeraError, match="unknown prediction filter.*'upper'"):
        apply_filters(("upper",), "x")
    with pytest.raises(MeraError, match="must be a string"):
        apply_filters((), None)


# ---------------------------------------------------------------------------------
# "The text after the last ОТВЕТ": the official rule and its lenient, named variant.


@pytest.mark.parametrize(
    "text, official, lenient",
    [
        ("Рассуждение. ОТВЕТ: синий", ": синий", "синий"),
        ("Ответ: синий", "Ответ: синий", "синий"),  # lowercase marker: no marker officially
        ("ответ b", "ответ b", "b"),
        ("ОТВЕТ A, нет, ОТВЕТ B ", "B", "B"),
        ("  без маркера ", "без маркера", "без маркера"),
        ("ОТВЕТ", "", ""),
    ],
)
def test_answer_part_official_and_lenient(text, official, lenient):
    assert (
        metric_extraction.official_answer_part(text) == official == text.split("ОТВЕТ")[-1].strip()
    )
    assert metric_extraction.lenient_answer_part(text) == lenient


def test_library_doctests_pass():
    from mera_multi_hf.judge import judges as judge
    from mera_multi_hf.scoring import filters
    from mera_multi_hf.spaces import loading as metrics_loading

    for module in (
        metric_exact_match,
        metric_extraction,
        metric_groups,
        metric_ruslun,
        judge,
        metrics_loading,
        filters,
    ):
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.failed == 0 and result.attempted > 0, module.__name__


# ---------------------------------------------------------------------------------
# The evaluate modules.


@pytest.fixture(scope="module")
def modules():
    import evaluate

    return {name: evaluate.load(str(REPO / "metrics" / name)) for name in METRICS}


def test_modules_load_from_the_checkout_and_compute(modules):
    em = modules["exact_match"]
    em.add_batch(predictions=["a", "B."], references=["A", "B"])
    em.add_batch(predictions=["Ответ: C"], references=["C"])
    assert em.compute() == {"exact_match": pytest.approx(2 / 3)}
    assert em.compute(predictions=["Ответ: C", "x"], references=["C", "C"], extract=True) == {
        "exact_match": 0.0,
        "exact_match_extracted": 0.5,
    }
    assert em.compute(predictions=["a"], references=["A"], mode="strict") == {"exact_match": 0.0}
    assert em.compute(predictions=["да", "нет"], references=[["Да", "верно"], ["нет."]]) == {
        "exact_match": 1.0
    }
    with pytest.warns(UserWarning, match="squad"):
        em.compute(predictions=[""], references=["A"], mode="squad", answer_kind="letter")

    group = modules["group_exact_match"]
    for start in range(0, 6, 2):
        group.add_batch(
            predictions=["A", "B", "A", "A", "B", "B"][start : start + 2],
            references=["A", "B", "A", "B", "B", "B"][start : start + 2],
            group_ids=[0, 0, 1, 1, 2, 2][start : start + 2],
        )
    assert group.compute() == {
        "group_exact_match": pytest.approx(2 / 3),
        "exact_match": pytest.approx(5 / 6),
    }

    slots = modules["slot_f1"]
    result = slots.compute(
        predictions=['{"intent": "a", "slots": []}', "oops"],
        references=['{"intent": "a", "slots": []}'] * 2,
    )
    assert result == {"slot_f1": 0.5, "intent_exact_match": 0.5}


def test_modules_combine(modules):
    import evaluate

    both = evaluate.combine([modules["exact_match"], modules["group_exact_match"]])
    both.add_batch(predictions=["A", "B", "B"], references=["A", "A", "B"], group_ids=[1, 1, 2])
    result = both.compute()
    # both modules report exact_match, so evaluate prefixes those (only) with the module name
    assert result == {
        "exact_match_exact_match": pytest.approx(2 / 3),
        "group_exact_match": 0.5,
        "group_exact_match_exact_match": pytest.approx(2 / 3),
    }
    pair = evaluate.combine([modules["exact_match"], modules["slot_f1"]])
    gold = '{"intent": "a", "slots": [{"k": "v"}]}'
    assert pair.compute(predictions=[gold.upper()], references=[gold]) == {
        "exact_match": 1.0,
        "slot_f1": 1.0,
        "intent_exact_match": 1.0,
    }


def test_judge_module_refuses_without_a_judge(modules):
    # The module's MeraError is its sibling errors.py's (a copy of the package's).
    with pytest.raises(Exception, match="no judge configured") as err:
        modules["judge_score"].compute(predictions=["A"], references=["A"], prompts=["?"])
    assert type(err.value).__name__ == "MeraError"


@pytest.mark.parametrize("name", METRICS)
def test_module_docstring_examples_run(name, modules, tmp_path, monkeypatch):
    # The examples load the Hub name (mera_multi/<name>), which evaluate reads from
    # ./mera_multi/<name>/ first: here, the committed folders.
    (tmp_path / "mera_multi").symlink_to(REPO / "metrics", target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    module = sys.modules[type(modules[name]).__module__]
    text = module._KWARGS_DESCRIPTION
    test = doctest.DocTestParser().get_doctest(
        text, {}, f"{name}._KWARGS_DESCRIPTION", module.__file__, 0
    )
    assert test.examples, f"{name} has no examples"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    assert runner.failures == 0


@pytest.mark.parametrize("name", METRICS)
def test_module_folder_is_a_space(name):
    import yaml

    folder = REPO / "metrics" / name
    card = (folder / "README.md").read_text(encoding="utf-8")
    assert card.startswith("---\n")
    meta = yaml.safe_load(card.split("---\n")[1])
    assert {"title", "emoji", "colorFrom", "colorTo", "sdk_version", "description"} <= set(meta)
    assert meta["sdk"] == "gradio" and meta["app_file"] == "app.py" and meta["pinned"] is False
    assert {"evaluate", "metric"} <= set(meta["tags"])
    for section in (
        "Metric Description",
        "How to Use",
        "Inputs",
        "Output Values",
        "Examples",
        "Limitations and Bias",
        "Citation",
    ):
        assert f"## {section}" in card, (name, section)
    app = (folder / "app.py").read_text(encoding="utf-8")
    assert "gr.Interface(" in app and "evaluate.load(" in app and "demo.launch()" in app
    # Only published packages: the folder runs as a Space without this package.
    requirements = (folder / "requirements.txt").read_text(encoding="utf-8")
    assert "mera-multi-hf" not in requirements and "mera_multi_hf" not in requirements
    source = (folder / f"{name}.py").read_text(encoding="utf-8")
    # evaluate's import scanner misreads `import a, b`: one module per import line
    assert not [line for line in source.splitlines() if line.startswith("import ") and "," in line]


def test_load_metric_rejects_unknown_names():
    from mera_multi_hf import load_metric

    with pytest.raises(MeraError, match="bundled metrics are exact_match"):
        load_metric("bleu")


def test_installed_wheel_finds_the_metric_modules_and_builders(tmp_path):
    """A non-editable install carries metrics/ inside the package and load_metric finds it."""
    wheels, target = tmp_path / "wheels", tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(wheels),
            str(REPO),
        ],
        check=True,
        cwd=tmp_path,
    )
    wheel = next(wheels.glob("mera_multi_hf-*.whl"))
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "--target",
            str(target),
            str(wheel),
        ],
        check=True,
        cwd=tmp_path,
    )
    script = (
        "import json, mera_multi_hf\n"
        "from mera_multi_hf import load_metric\n"
        "from mera_multi_hf.spaces.loading import metric_path\n"
        "m = load_metric('group_exact_match')\n"
        "r = m.compute(predictions=['A', 'B', 'B'], references=['A', 'B', 'A'], group_ids=[1, 1, 2])\n"
        "from mera_multi_hf import load_task\n"
        "from mera_multi_hf.data.builders import dataset_module\n"
        "from mera_multi_hf.tasks.table import get_task\n"
        "n = len(load_task('ruhhh_image', source='sample', split='test'))\n"
        "print(json.dumps({'result': r, 'package': mera_multi_hf.__file__, 'n_sample': n,\n"
        "                  'builder': dataset_module(get_task('ruhhh_image')).__file__,\n"
        "                  'module': metric_path('group_exact_match')}))\n"
    )
    env = dict(
        os.environ,
        PYTHONPATH=str(target),
        HF_MODULES_CACHE=str(tmp_path / "modules"),
        MERA_MULTI_CACHE=str(tmp_path / "cache"),
    )
    out = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["result"] == {"group_exact_match": 0.5, "exact_match": pytest.approx(2 / 3)}
    assert Path(report["package"]).is_relative_to(target)
    assert (
        Path(report["module"])
        == target / "mera_multi_hf" / "_bundled" / "metrics" / "group_exact_match"
    )
    assert (Path(report["module"]) / "README.md").is_file()
    # the dataset builders and the bundled sample travel in the wheel too
    assert report["n_sample"] == 26
    assert (
        Path(report["builder"]) == target / "mera_multi_hf" / "data" / "builders" / "ruhhh_image.py"
    )


def test_one_pass_mera_normalisation_equals_per_string_rule():
    # final sigma, expanding lowercase, NUL inside a string (the fallback), surrogates,
    # empty strings and punctuation at the joins
    texts = ["ΑΣ", "Σα", "ΟΔΟΣ.", "İ", "a\x00b", "", "\ud800x", "Б!", "?", "ΣΣ", "x'Σ"]
    for column in (texts, [t for t in texts if "\x00" not in t]):
        expected = [
            t.lower().translate(str.maketrans("", "", __import__("string").punctuation))
            for t in column
        ]
        ours = exact_match_scores(column, expected, mode="mera")
        assert ours.tolist() == [1] * len(column)
        shifted = expected[1:] + expected[:1]
        assert ours.tolist() != exact_match_scores(column, shifted, mode="mera").tolist()
