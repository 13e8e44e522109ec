"""Dialogue tasks (ruTiE): a scripted model, answering per question, shows that each
question is asked with the last N earlier turns of its dialogue and the model's own
earlier answers reduced to a letter, in order, dialogues batched together, across a
resume."""
from __future__ import annotations

import json
import zipfile

import pytest
from PIL import Image

from mera_multi_hf.errors import MeraError
from mera_multi_hf.runner import run_evaluation
from mera_multi_hf.runner.dialogue import reduce_answer
from mera_multi_hf.tasks import TASKS, DialogueSpec, TaskSpec, register_task

BUILDER = '''
import datasets
from mera_multi_hf.builder import MeraBuilder

class ToyDialogue(MeraBuilder):
    TASK_KEY = "toy_dialogue"
    META_FEATURES = {"id": datasets.Value("int32")}
'''
INSTRUCTION = ("Контекст беседы: <context>. Картинка <image>. {{не поле}}\nВопрос {question}\n"
               "A. {option_a}\nB. {option_b}\nC. {option_c}\nD. {option_d}\nОтвет:")
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
        self.calls.append([(r.id, r.prompt, [(t.text, t.answer) for t in r.history])
                           for r in requests])
        return [self.script[r.id] for r in requests]


@pytest.fixture
def toy(tmp_path):
    raw = tmp_path / "ToyDialogue"
    (raw / "samples").mkdir(parents=True)
    records = []
    for i in range(1, N_DIALOGUES * N_QUESTIONS + 1):
        Image.new("RGB", (6, 6), (20 * i, 100, 50)).save(raw / "samples" / f"q{i}.png")
        records.append({"instruction": INSTRUCTION.replace("Вопрос", f"Вопрос{i % 2}"),
                        "inputs": {"image": f"samples/q{i}.png", "question": _question(i),
                                   "option_a": "а", "option_b": "б", "option_c": "в",
                                   "option_d": "г"},
                        "outputs": "ABCD"[i % 4], "meta": {"id": i}})
    (raw / "test.json").write_text(json.dumps({"access": "public", "data": records},
                                              ensure_ascii=False), encoding="utf-8")
    shot = dict(records[0], meta={"id": 100})
    (raw / "shots.json").write_text(json.dumps({"data": [shot]}, ensure_ascii=False),
                                    encoding="utf-8")
    (raw / "raw_dataset_meta.json").write_text(json.dumps(
        {"dataset_name": "ToyDialogue", "license": "MIT", "prompts": []}), encoding="utf-8")
    builder = tmp_path / "toy_dialogue.py"
    builder.write_text(BUILDER, encoding="utf-8")
    register_task(TaskSpec(
        "toy_dialogue", "example/ToyDialogue", "ToyDialogue", "image", ("image",),
        ("question", "option_a", "option_b", "option_c", "option_d"), "letter",
        ("exact_match",), choices=tuple("ABCD"), public=True,
        dialogue=DialogueSpec(context_turns=2, questions_per_dialogue=N_QUESTIONS),
        prompt_rules=("escape_braces_except_fields", "strip"),
        score_filters=("remove_whitespace", "take_first"),
        submit_filters=("remove_whitespace", "take_first"), builder=str(builder)))
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
    return [(records[dialog * N_QUESTIONS + q]["instruction"],
             letters[SCRIPT[dialog * N_QUESTIONS + q + 1]]) for q in earlier]


def test_dialogue_feeds_earlier_answers_back_in_order(toy, tmp_path):
    raw, records = toy
    model = ScriptedModel(SCRIPT)
    result = run_evaluation(tasks="toy_dialogue", data=str(raw), output_dir=str(tmp_path / "o"),
                            no_progress=True, engine=model)
    # wave k holds question k of all three dialogues, asked together
    assert [sorted(i for i, _, _ in call) for call in model.calls] == \
        [[1, 5, 9], [2, 6, 10], [3, 7, 11], [4, 8, 12]]
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
    assert {r["meta"]["id"]: r["outputs"] for r in rows} == filtered
    assert result["run"]["generation"]["dialogue_context"] == {"toy_dialogue": 2}


def test_a_dialogue_resumes_from_its_logged_turns(toy, tmp_path):
    raw, records = toy
    out = str(tmp_path / "o")
    with pytest.raises(KeyboardInterrupt):
        run_evaluation(tasks="toy_dialogue", data=str(raw), output_dir=out, no_progress=True,
                       engine=ScriptedModel(SCRIPT, die_at_call=2))
    model = ScriptedModel(SCRIPT)
    result = run_evaluation(tasks="toy_dialogue", data=str(raw), output_dir=out,
                            no_progress=True, engine=model)
    # the first two waves came from the log; the rest carries their answers as history
    assert [sorted(i for i, _, _ in call) for call in model.calls] == [[3, 7, 11], [4, 8, 12]]
    for call in model.calls:
        for example_id, _, history in call:
            assert history == _expected_history(records, example_id, 2)
    assert result["counts"] == {"requested": 12, "resumed": 6, "generated": 6,
                                "generated_here": 6}


def test_dialogue_context_is_a_setting_and_zero_means_none(toy, tmp_path):
    raw, records = toy
    model = ScriptedModel(SCRIPT)
    run_evaluation(tasks="toy_dialogue", data=str(raw), output_dir=str(tmp_path / "o"),
                   no_progress=True, engine=model, dialogue_context=0)
    assert all(history == [] for call in model.calls for _, _, history in call)
    wider = ScriptedModel(SCRIPT)
    run_evaluation(tasks="toy_dialogue", data=str(raw), output_dir=str(tmp_path / "w"),
                   no_progress=True, engine=wider, dialogue_context=10)
    last = [h for call in wider.calls for i, _, h in call if i == 12][0]
    assert last == _expected_history(records, 12, 10) and len(last) == 3


def test_dialogues_run_on_the_tiny_model_and_split_between_processes(toy, tmp_path):
    from mera_multi_hf import load_task
    from mera_multi_hf.examples import make_examples
    from mera_multi_hf.runner import dialogue

    raw, _ = toy
    result = run_evaluation(tasks="toy_dialogue", data=str(raw), output_dir=str(tmp_path / "t"),
                            no_progress=True, max_new_tokens=3, batch_size=2)
    assert result["tasks"][0]["n_examples"] == 12
    task = TASKS["toy_dialogue"]
    examples = make_examples(task, load_task(task, source=raw, split="test"))
    seen = []
    for rank in (0, 1):
        for wave in dialogue.walk(task, examples, context_turns=1, answer=lambda r: "A",
                                  make=lambda items: [e.id for e in items] and
                                  _fake_requests(items), rank=rank, world=2):
            seen += [r.id for r in wave]
    assert sorted(seen) == list(range(1, 13))  # every turn on exactly one process


def _fake_requests(items):
    from mera_multi_hf.runner.request import Request

    return [Request("toy_dialogue", "test", e.id, e.prompt, [], 4, index=e.index) for e in items]


@pytest.mark.parametrize("generation, letter", [
    ("  C", "C"), ("Ответ: B.", "B"), ("не знаю", "-1"), ("Б", "-1"), ("AB", "-1"),
    ("A или B", "A"), ("\n\nD\n", "D"), ("", "-1")])
def test_earlier_answers_reduce_by_the_official_regex(generation, letter):
    assert reduce_answer(TASKS["rutie_image"], generation) == letter


def test_ambiguous_dialogue_positions_are_refused():
    from mera_multi_hf.examples import Example
    from mera_multi_hf.runner.dialogue import positions

    same = [Example("rutie_image", i, i, "p", (), "A", i, meta={"dialog_id": 0, "question_id": 1})
            for i in (1, 2)]
    with pytest.raises(MeraError, match="share a dialogue position"):
        positions(TASKS["rutie_image"], same)
