"""Dialogue tasks (ruTiE): a scripted model, answering per question, shows that each
question is asked with the last N earlier turns of its dialogue and the model's own
earlier answers reduced to a letter, in order, dialogues batched together, across a
resume."""

from __future__ import annotations

import json
import zipfile

import pytest
from PIL import Image

from mera_multi_hf.pipeline.evaluate import run_evaluation
from mera_multi_hf.tasks.dialogue import reduce_answer
from mera_multi_hf.tasks.spec import DialogueSpec, TaskSpec
from mera_multi_hf.tasks.table import TASKS, register_task

BUILDER = """
import datasets
from mera_multi_hf.data.builder import MeraBuilder

class ToyDialogue(MeraBuilder):
    TASK_KEY = "toy_dialogue"
    META_FEATURES = {"id": datasets.Value("int32")}
"""
INSTRUCTION = (
    "Контекст беседы: <context>. Картинка <image>. {{не поле}}\nВопрос {question}\n"
    "A. {option_a}\nB. {option_b}\nC. {option_c}\nD. {option_d}\nОтвет:"
)
N_DIALOGUES, N_QUESTIONS = 3, 4


def _question(i):
    return f"вопрос номер {i}"


class ScriptedModel:
    """A Backend answering from a script keyed by the question; it records every call."""

    name, model_id, revision, batch_size = "scripted", "scripted-model", "v1", 8

    def __init__(self, script, die_at_call=None):
        self.script, self.calls, self.die_at_call = script, [], die_at_call

    def settings(self):
        return {"backend": self.name}

    def info(self):
        return {"model": self.model_id, "revision": self.revision, "backend": self.name}

    def load(self):
        pass

    def close(self):
        pass

    def generate(self, requests):
        if self.die_at_call is not None and len(self.calls) == self.die_at_call:
            raise KeyboardInterrupt  # as a user's Ctrl-C mid-run
        self.calls.append(
            [(r.id, r.prompt, [(t.text, t.answer) for t in r.history]) for r in requests]
        )
        return [self.script[r.id] for r in requests]


@pytest.fixture
def toy(tmp_path):
    raw = tmp_path / "ToyDialogue"
    (raw / "samples").mkdir(parents=True)
    records = []
    for i in range(1, N_DIALOGUES * N_QUESTIONS + 1):
        Image.new("RGB", (6, 6), (20 * i, 100, 50)).save(raw / "samples" / f"q{i}.png")
        records.append(
            {
                "instruction": INSTRUCTION.replace("Вопрос", f"Вопрос{i % 2}"),
                "inputs": {
                    "image": f"samples/q{i}.png",
                    "question": _question(i),
                    "option_a": "а",
                    "option_b": "б",
                    "option_c": "в",
                    "option_d": "г",
                },
                "outputs": "ABCD"[i % 4],
                "meta": {"id": i},
            }
        )
    (raw / "test.json").write_text(
        json.dumps({"access": "public", "data": records}, ensure_ascii=False), encoding="utf-8"
    )
    shot = dict(records[0], meta={"id": 100})
    (raw / "shots.json").write_text(
        json.dumps({"data": [shot]}, ensure_ascii=False), encoding="utf-8"
    )
    (raw / "raw_dataset_meta.json").write_text(
        json.dumps({"dataset_name": "ToyDialogue", "license": "MIT", "prompts": []}),
        encoding="utf-8",
    )
    builder = tmp_path / "toy_dialogue.py"
    builder.write_text(BUILDER, encoding="utf-8")
    register_task(
        TaskSpec(
            "toy_dialogue",
            "example/ToyDialogue",
            "ToyDialogue",
            "image",
            ("image",),
            ("question", "option_a", "option_b", "option_c", "option_d"),
            "letter",
            ("exact_match",),
            choices=tuple("ABCD"),
            public=True,
            dialogue=DialogueSpec(context_turns=2, questions_per_dialogue=N_QUESTIONS),
            prompt_rules=("escape_braces_except_fields", "strip"),
            score_filters=("remove_whitespace", "take_first"),
            submit_filters=("remove_whitespace", "take_first"),
            builder=str(builder),
        )
    )
    yield raw, records
    TASKS.pop("toy_dialogue")


SCRIPT = {i: ["  Думаю, C", "ответ: B.", "не знаю", " D"][i % 4] for i in range(1, 13)}


def _expected_history(records, example_id, context):
    """The official history of a question: the last `context` earlier questions of its
    dialogue (ids offset from the first, 4 per dialogue), each with its stored
    instruction and the scripted answer reduced by the regex \\b([A-D])\\b or -1."""
    dialog, question = divmod(example_id - 1, N_QUESTIONS)
    earlier = range(max(0, question - context), question)
    letters = {"  Думаю, C": "C", "ответ: B.": "B", "не знаю": "-1", " D": "D"}
    return [
        (
            records[dialog * N_QUESTIONS + q]["instruction"],
            letters[SCRIPT[dialog * N_QUESTIONS + q + 1]],
        )
        for q in earlier
    ]


def test_dialogue_feeds_earlier_answers_back_in_order(toy, tmp_path):
    raw, records = toy
    model = ScriptedModel(SCRIPT)
    result = run_evaluation(
        tasks="toy_dialogue",
        data=str(raw),
        output_dir=str(tmp_path / "o"),
        no_progress=True,
        engine=model,
    )
    # wave k holds question k of all three dialogues, asked together
    assert [sorted(i for i, _, _ in call) for call in model.calls] == [
        [1, 5, 9],
        [2, 6, 10],
        [3, 7, 11],
        [4, 8, 12],
    ]
    for call in model.calls:
        for example_id, prompt, history in call:
            assert history == _expected_history(records, example_id, 2)
            assert "{не поле}" in prompt and prompt == prompt.strip()  # ruTiE's brace rule
    scored = result["tasks"][0]
    filtered = {i: SCRIPT[i].lstrip() for i in SCRIPT}  # remove_whitespace
    gold = {r["meta"]["id"]: r["outputs"] for r in records}
    expected_em = sum(filtered[i].lower().strip(".:") == gold[i].lower() for i in gold) / 12
    assert scored["metrics"]["exact_match"] == pytest.approx(expected_em)
    with zipfile.ZipFile(tmp_path / "o" / "submission.zip") as zf:
        rows = json.loads(zf.read("ToyDialogue.json"))["data"]["test"]
    # the packer's ids: question_id + 4 * dialog_id + 11, i.e. (id - 1) + 11 here
    assert {r["meta"]["id"]: r["outputs"] for r in rows} == {i + 10: t for i, t in filtered.items()}
    assert result["run"]["generation"]["dialogue_context"] == {"toy_dialogue": 2}


def test_a_dialogue_resumes_from_its_logged_turns(toy, tmp_path):
    raw, records = toy
    out = str(tmp_path / "o")
    with pytest.raises(KeyboardInterrupt):
        run_evaluation(
            tasks="toy_dialogue",
            data=str(raw),
            output_dir=out,
            no_progress=True,
            engine=ScriptedModel(SCRIPT, die_at_call=2),
        )
    model = ScriptedModel(SCRIPT)
    result = run_evaluation(
        tasks="toy_dialogue", data=str(raw), output_dir=out, no_progress=True, engine=model
    )
    # the first two waves came from the log; the rest carries their answers as history
    assert [sorted(i for i, _, _ in call) for call in model.calls] == [[3, 7, 11], [4, 8, 12]]
    for call in model.calls:
        for example_id, _, history in call:
            assert history == _expected_history(records, example_id, 2)
    assert result["counts"] == {"requested": 12, "resumed": 6, "generated": 6, "generated_here": 6}


def test_dialogue_context_is_a_setting_and_zero_means_none(toy, tmp_path):
    raw, records = toy
    model = ScriptedModel(SCRIPT)
    run_evaluation(
        tasks="toy_dialogue",
        data=str(raw),
        output_dir=str(tmp_path / "o"),
        no_progress=True,
        engine=model,
        dialogue_context=0,
    )
    assert all(history == [] for call in model.calls for _, _, history in call)
    wider = ScriptedModel(SCRIPT)
    run_evaluation(
        tasks="toy_dialogue",
        data=str(raw),
        output_dir=str(tmp_path / "w"),
        no_progress=True,
        engine=wider,
        dialogue_context=10,
    )
    last = [h for call in wider.calls for i, _, h in call if i == 12][0]
    assert last == _expected_history(records, 12, 10) and len(last) == 3


def test_dialogues_run_on_the_tiny_model_and_split_between_processes(toy, tmp_path):
    from mera_multi_hf import load_task
    from mera_multi_hf.data.examples import make_examples
    from mera_multi_hf.generation import dialogue

    raw, _ = toy
    result = run_evaluation(
        tasks="toy_dialogue",
        data=str(raw),
        output_dir=str(tmp_path / "t"),
        no_progress=True,
        max_new_tokens=3,
        batch_size=2,
    )
    assert result["tasks"][0]["n_examples"] == 12
    task = TASKS["toy_dialogue"]
    examples = make_examples(task, load_task(task, source=raw, split="test"))
    seen = []
    for rank in (0, 1):
        for wave in dialogue.walk(
            task,
            examples,
            context_turns=1,
            answer=lambda r: "A",
            make=lambda items: [e.id for e in items] and _fake_requests(items),
            rank=rank,
            world=2,
        ):
            seen += [r.id for r in wave]
    assert sorted(seen) == list(range(1, 13))  # every turn on exactly one process


def _fake_requests(items):
    from mera_multi_hf.generation.request import Request

    return [Request("toy_dialogue", "test", e.id, e.prompt, [], 4, index=e.index) for e in items]


@pytest.mark.parametrize(
    "generation, letter",
    [
        ("  C", "C"),
        ("Ответ: B.", "B"),
        ("не знаю", "-1"),
        ("Б", "-1"),
        ("AB", "-1"),
        ("A или B", "A"),
        ("\n\nD\n", "D"),
        ("", "-1"),
    ],
)
def test_earlier_answers_reduce_by_the_official_regex(generation, letter):
    assert reduce_answer(TASKS["rutie_image"], generation) == letter


# The official arithmetic restated as a table, computed by hand (process_docs: positions
# from meta.id - min id; ruTiEContextFormer: the previous N=2 of the same dialogue;
# log_to_submission.py: question_id + 500 * dialog_id + 11). Meta is deliberately wrong.
#   id    meta (d, q)   -> (dialog, question)   context ids   submission id
ORACLE = [
    (7, (3, 3), (0, 0), [], 11),
    (8, (0, 1), (0, 1), [7], 12),
    (9, (0, 2), (0, 2), [7, 8], 13),
    (10, (9, 0), (0, 3), [8, 9], 14),
    (507, (1, 0), (1, 0), [], 511),
    (508, (1, 1), (1, 1), [507], 512),
    (1007, (2, 0), (2, 0), [], 1011),
]


def test_rutie_positions_context_and_submission_ids_follow_the_official_arithmetic():
    from mera_multi_hf.data.examples import Example
    from mera_multi_hf.generation import dialogue
    from mera_multi_hf.reporting.submission import submission_ids
    from mera_multi_hf.tasks import dialogue as dialogue_positions

    task = TASKS["rutie_image"]
    examples = [
        Example(
            task.key,
            i,
            n,
            f"q{i}",
            (),
            "A",
            i,
            meta={"dialog_id": d, "question_id": q},
            instruction=f"q{i}",
        )
        for n, (i, (d, q), *_) in enumerate(reversed(ORACLE))
    ]  # order does not matter
    assert dialogue_positions.positions(task, examples) == {i: pos for i, _, pos, _, _ in ORACLE}
    seen = {}
    for wave in dialogue.walk(
        task, examples, context_turns=2, answer=lambda r: "A", make=_fake_requests
    ):
        seen.update((r.id, [t.text for t in r.history]) for r in wave)
    assert seen == {i: [f"q{c}" for c in ctx] for i, _, _, ctx, _ in ORACLE}
    assert submission_ids(task.key, [row[0] for row in ORACLE]) == {i: sub for i, *_, sub in ORACLE}
    assert sorted(dialogue_positions.meta_disagreements(task, examples)) == [7, 10]


@pytest.mark.parametrize("key", ["rutie_image", "rutie_audio"])
def test_bundled_rutie_samples_agree_with_the_official_positions(key):
    from mera_multi_hf import load_task
    from mera_multi_hf.data.examples import make_examples
    from mera_multi_hf.reporting.submission import submission_ids
    from mera_multi_hf.tasks import dialogue as dialogue_positions

    examples = make_examples(TASKS[key], load_task(key, source="sample", split="test"))
    assert dialogue_positions.meta_disagreements(TASKS[key], examples) == []
    ids = sorted(e.id for e in examples)
    assert ids == [1, 2, 3, 501, 502, 503, 1001, 1002, 1003]  # the smallest is not 11
    assert submission_ids(key, ids) == dict(zip(ids, [11, 12, 13, 511, 512, 513, 1011, 1012, 1013]))


def test_meta_that_disagrees_is_warned_recorded_and_overruled(tmp_path):
    import shutil

    from mera_multi_hf.demo.sample_data import bundled_sample

    raw = tmp_path / "ruTiE-Image"
    shutil.copytree(bundled_sample("rutie_image"), raw)
    doc = json.loads((raw / "test.json").read_text(encoding="utf-8"))
    for record in doc["data"]:  # meta now claims each dialogue asked backwards
        record["meta"]["question_id"] = 2 - record["meta"]["question_id"]
    (raw / "test.json").write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    model = ScriptedModel({r["meta"]["id"]: "A" for r in doc["data"]})
    with pytest.warns(UserWarning, match="6 examples .* official positions are used"):
        result = run_evaluation(
            tasks="rutie_image",
            data=str(raw),
            no_progress=True,
            output_dir=str(tmp_path / "o"),
            engine=model,
        )
    assert result["run"]["dialogue_meta_disagrees"] == {"rutie_image": 6}
    # waves by the ids' arithmetic (meta would ask 3, 503, 1003 first)
    assert [sorted(i for i, _, _ in call) for call in model.calls] == [
        [1, 501, 1001],
        [2, 502, 1002],
        [3, 503, 1003],
    ]
    history = {i: len(h) for call in model.calls for i, _, h in call}
    assert history == {1: 0, 501: 0, 1001: 0, 2: 1, 502: 1, 1002: 1, 3: 2, 503: 2, 1003: 2}
