"""Every model family of tiny_models/ through the hf backend, against a bare loop written
the way the family's model card shows usage (processor.apply_chat_template with content
dicts, processor(...), model.generate, decode, cut at the stop) under the official
generation settings: greedy, at most 256 new tokens, a stop at "\\n\\n" or EOS.

Families whose processor holds a video processor need torchvision (transformers 5 cannot
construct those processors without it): marked ``video_processor``, they run in CI's
second virtual environment (torch 2.14.1 + torchvision) and are skipped beside the CPU
build of torch 2.13.0, where torchvision does not import."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import torch

from mera_multi_hf.data.media_decode import Media
from mera_multi_hf.demo.sample_data import SAMPLES_DIR
from mera_multi_hf.demo.tiny_models import FAMILIES, family_model_path, has_torchvision, templates
from mera_multi_hf.generation.backends import cut_at_stop
from mera_multi_hf.generation.backends.hf import HFBackend
from mera_multi_hf.generation.backends.hf_media import VIDEO_PROCESSOR
from mera_multi_hf.generation.request import Request

STOP = ("\n\n",)
FRAMES = 2
needs_video = pytest.mark.skipif(
    not has_torchvision(), reason="torchvision does not import here (CI's second venv runs it)"
)


def _param(name: str):
    marks = [pytest.mark.video_processor, needs_video] if FAMILIES[name].needs_torchvision else []
    return pytest.param(name, marks=marks, id=name)


ALL = [_param(n) for n in FAMILIES]
MEDIA = {
    "image": ("ruMathVQA", "png"),
    "audio": ("ruEnvAQA", "wav"),
    "video": ("ruHHH-Video", "mp4"),
}
QUESTIONS = [
    "Что здесь? Ответь A или B.",
    "Вопрос: это красное? A или B",
    "Опиши одним словом.",
    "Ответь одной буквой: A, B, C или D.",
]


def _requests(family: str) -> list[Request]:
    """Four requests per modality the family takes, media from the bundled samples."""
    out = []
    for kind in FAMILIES[family].modalities:
        task, ext = MEDIA[kind]
        files = sorted((SAMPLES_DIR / task / "samples").glob(f"*.{ext}"))[:4]
        for i, (path, question) in enumerate(zip(files, QUESTIONS)):
            prompt = f"<{kind}>\n{question}" if i % 2 == 0 else f"{question} <{kind}>"
            out.append(
                Request(
                    task=kind,
                    split="test",
                    id=i,
                    prompt=prompt,
                    stop=STOP,
                    media=[Media(kind, f"{kind}{i}", path.read_bytes(), field=kind)],
                    max_new_tokens=256,
                )
            )
    return out


@pytest.fixture(scope="module")
def engines():
    """One loaded backend per family (built and loaded once for the module)."""
    made = {}

    def get(family: str, **options) -> HFBackend:
        key = (family, tuple(sorted(options.items())))
        if key not in made:
            made[key] = HFBackend(
                str(family_model_path(family)), batch_size=4, max_frames=FRAMES, **options
            )
            made[key].load()
        return made[key]

    return get


def _card_loop(backend: HFBackend, request: Request) -> str:
    """The model card's usage, one request at a time (the model and processor are the
    backend's, loaded the usual way: AutoProcessor + the auto model class)."""
    processor, model = backend.processor, backend.model
    media = request.media[0]
    kind, text = media.kind, request.prompt.replace(f"<{media.kind}>", "\0")
    before, after = text.split("\0")
    if kind == "image":
        item, part = media.image(), [{"type": "image"}]
    elif kind == "audio":
        item, part = media.audio(16000), [{"type": "audio"}]  # each family's rate
    else:
        item = media.frames(FRAMES)
        video_processor = backend.video_input == VIDEO_PROCESSOR
        part = [{"type": "video"}] if video_processor else [{"type": "image"}] * len(item)
    content = (
        ([{"type": "text", "text": before}] if before else [])
        + part
        + ([{"type": "text", "text": after}] if after else [])
    )
    messages = [{"role": "user", "content": content}]
    prompt = processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    if kind == "image":
        inputs = processor(text=[prompt], images=[item], return_tensors="pt")
    elif kind == "audio":
        inputs = processor(text=[prompt], audio=[item], sampling_rate=16000, return_tensors="pt")
    elif backend.video_input == VIDEO_PROCESSOR:
        frames = np.stack([np.asarray(f) for f in item])
        inputs = processor(text=[prompt], videos=[frames], return_tensors="pt")
    else:
        inputs = processor(text=[prompt], images=item, return_tensors="pt")
    with torch.inference_mode():
        out = model.generate(**inputs, max_new_tokens=256, do_sample=False)
    answer = processor.batch_decode(
        out[:, inputs["input_ids"].shape[1] :], skip_special_tokens=True
    )[0]
    return cut_at_stop(answer, STOP)


@pytest.mark.parametrize("family", ALL)
def test_answers_equal_the_model_card_loop_at_batch_1_and_4(family, engines):
    backend = engines(family)
    requests = _requests(family)
    together = backend.generate(requests)
    assert together == [backend.generate([r])[0] for r in requests]
    assert together == [_card_loop(backend, r) for r in requests]
    assert len(set(together)) > 1, together  # answers depend on the input
    info = backend.info()
    assert "family_note" not in info and info["family"] != "generic"


FAMILY_WORDS = re.compile(r"qwen|llava|gemma|idefics|smolvlm|internvl|phi-?4|omni", re.I)


def test_the_backend_names_no_family_outside_the_traits_table():
    backends = Path(__file__).resolve().parent.parent / "mera_multi_hf" / "generation" / "backends"
    for module in ("hf.py", "hf_model.py", "hf_media.py"):  # the backend and its helpers
        assert FAMILY_WORDS.findall((backends / module).read_text()) == [], module
    assert FAMILY_WORDS.search((backends / "traits.py").read_text())  # the table itself


def test_an_unknown_family_takes_the_generic_path_with_a_note(monkeypatch):
    from mera_multi_hf.generation.backends import traits

    monkeypatch.delitem(traits.TRAITS, "Idefics3Processor")
    backend = HFBackend(str(family_model_path("idefics3")), batch_size=4)
    backend.load()
    info = backend.info()
    assert info["family"] == "generic"
    assert info["family_note"] == (
        "Idefics3Processor is not in the family traits table: the generic path was used"
    )
    assert backend.generate(_requests("idefics3")[:1])  # and it still answers


def test_chat_templates_follow_the_documented_turn_formats():
    """Each template against its family's documented prompt format (model cards)."""
    from jinja2 import Environment

    def render(template, **extra):
        messages = [
            {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Q?"}]}
        ]
        env = Environment(trim_blocks=True, lstrip_blocks=True)
        return env.from_string(template).render(
            messages=messages, add_generation_prompt=True, **extra
        )

    assert render(templates.QWEN2_VL) == (
        "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n"
        "<|vision_start|><|image_pad|><|vision_end|>Q?<|im_end|>\n<|im_start|>assistant\n"
    )
    assert render(templates.QWEN3_VL) == (
        "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>Q?<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    assert render(templates.GEMMA3, bos_token="<bos>") == (
        "<bos><start_of_turn>user\n<start_of_image>Q?<end_of_turn>\n<start_of_turn>model\n"
    )
    assert (
        render(templates.IDEFICS3)
        == "<|begin_of_text|>User:<image>Q?<end_of_utterance>\nAssistant:"
    )
    assert render(templates.LLAVA_ONEVISION) == (
        "<|im_start|>user <image>\nQ?<|im_end|>\n<|im_start|>assistant\n"
    )
    assert render(templates.INTERNVL) == (
        "<|im_start|>user\n<IMG_CONTEXT>\nQ?<|im_end|>\n<|im_start|>assistant\n"
    )
    assert render(templates.QWEN2_5_OMNI).startswith(
        f"<|im_start|>system\n{templates.OMNI_SYSTEM}<|im_end|>\n<|im_start|>user\n"
        "<|vision_bos|><|IMAGE|><|vision_eos|>Q?<|im_end|>\n"
    )


def test_models_command_lists_every_family(capsys):
    from mera_multi_hf.cli.main import main

    assert main(["models"]) == 0
    out = capsys.readouterr().out
    for name, family in FAMILIES.items():
        line = next(row for row in out.splitlines() if row.startswith(name + " "))
        assert ", ".join(family.modalities) in line and family.processors in line
    assert main(["models", "--path", "no-such-family"]) == 2


@pytest.mark.parametrize("family", ALL)
def test_bfloat16_answers_equal_float32(family, engines):
    """The families' declared dtype (bfloat16) on the CPU against float32, within the
    tolerance the README documents: equal answers, except on the families listed in
    BF16_LETTER_ONLY, whose answers start with the same letter (the letter the
    multiple-choice tasks extract) and may differ after it."""
    requests = _requests(family)[:4]
    wide, narrow = engines(family), engines(family, dtype="bfloat16")
    assert narrow.info()["dtype"] == "bfloat16"
    low, high = narrow.generate(requests), wide.generate(requests)
    if family in BF16_LETTER_ONLY:
        assert [a[:1] for a in low] == [a[:1] for a in high]
    else:
        assert low == high


BF16_LETTER_ONLY = {"phi4-multimodal"}  # measured: "BB" in bf16 where float32 wrote "BBB"


def test_device_auto_on_cpu_loads_through_accelerate_and_answers_the_same(engines):
    spread = engines("llava", device="auto")  # device_map="auto": accelerate places it
    assert spread.info()["device"] == "cpu"
    requests = _requests("llava")
    assert spread.generate(requests) == engines("llava").generate(requests)


class OldStopOnStrings:
    """The backend's previous stopping criterion (per row: the decoded last new tokens
    hold a stop string), kept here as the reference the transformers criterion must
    match in answers."""

    def __init__(self, tokenizer, stops: tuple[str, ...], prompt_length: int):
        self.tokenizer, self.stops, self.start = tokenizer, stops, prompt_length
        self.lookback = max(len(tokenizer.encode(s, add_special_tokens=False)) + 2 for s in stops)
        self.done = None

    def __call__(self, input_ids, scores, **kwargs):
        self.done = self.done or [False] * input_ids.shape[0]
        window = input_ids[:, self.start :][:, -self.lookback :]
        for i, text in enumerate(self.tokenizer.batch_decode(window, skip_special_tokens=True)):
            self.done[i] = self.done[i] or any(s in text for s in self.stops)
        return torch.tensor(self.done, dtype=torch.bool)


def test_stop_string_criteria_give_the_answers_of_the_previous_criterion(tmp_path, monkeypatch):
    """On a random LLaVA that writes noise: the same answers, cut at the first stop."""
    from mera_multi_hf.demo.builtin_models import build_random_llava
    from mera_multi_hf.generation.backends import hf

    backend = HFBackend(str(build_random_llava(tmp_path / "chatty", "chatty")), batch_size=4)
    requests = [
        Request(
            task="t",
            split="test",
            id=i,
            prompt=f"<image>\n{q}",
            max_new_tokens=24,
            stop=stop,
            media=_requests("llava")[i].media,
        )
        for i, (q, stop) in enumerate(zip(QUESTIONS, [("\n\n",), ("а",), ("о", "е"), ("ст",)]))
    ]
    new = backend.generate(requests)
    monkeypatch.setattr(hf, "NewTokensStop", OldStopOnStrings)
    assert backend.generate(requests) == new
    stopped = [a for a in new if len(a) < 20]
    assert stopped and all(not any(s in a for s in r.stop) for a, r in zip(new, requests))


def test_a_family_killed_mid_run_resumes_to_the_uninterrupted_answers(tmp_path):
    """The kill-test machinery of test_runner_processes on a family other than the demo's."""
    import subprocess

    from test_runner_processes import (
        _complete_lines,
        _env,
        _evaluate,
        _results,
        _sigkill_once_logged,
    )

    from mera_multi_hf.pipeline.evaluate import run_evaluation

    model = str(family_model_path("idefics3"))
    args = ("--model", model, "--data", "sample", "--limit", "4")
    run_evaluation(
        model=model,
        data="sample",
        limit=4,
        batch_size=4,
        output_dir=tmp_path / "a",
        no_progress=True,
    )
    import json

    recorded = json.loads((tmp_path / "a" / "results.json").read_text())["run"]["backend_options"]
    assert recorded["family"] == "Idefics3" and "family_note" not in recorded
    out = tmp_path / "killed"
    proc = subprocess.Popen(
        _evaluate(*args, "--batch-size", "1", "--output-dir", str(out)),
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    _sigkill_once_logged(proc, out / "logs" / "samples-rank0.jsonl", 2)
    logged = len(_complete_lines(out))
    assert 2 <= logged < 4
    done = subprocess.run(
        _evaluate(*args, "--batch-size", "4", "--output-dir", str(out)),
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"from the sample log: {logged}, generated now: {4 - logged}" in done.stdout
    assert _results(out) == _results(tmp_path / "a")


def test_device_auto_is_refused_under_a_multi_process_launch(tmp_path):
    import subprocess

    from test_runner_processes import _env, _two_processes

    run = subprocess.run(
        _two_processes(
            "--data",
            "sample",
            "--limit",
            "2",
            "--device",
            "auto",
            "--output-dir",
            str(tmp_path / "out"),
        ),
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode != 0
    assert "--device auto spreads one model over all GPUs: run it as one process" in run.stderr
