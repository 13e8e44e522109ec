"""The preflight covers the environment, before any generation and before any model is
built: the extras each task's modality needs (made to fail for real, by a module that
shadows them), the device, the model's kind, and --processes against the machine."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from mera_multi_hf.cli.main import main
from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.demo.sample_data import SAMPLES_DIR

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _without(module: str, tmp_path, *args: str) -> subprocess.CompletedProcess:
    """`mera-multi ARGS` in a fresh interpreter where importing ``module`` fails."""
    shadow = tmp_path / "shadow"
    shadow.mkdir(exist_ok=True)
    (shadow / f"{module}.py").write_text(f"raise ImportError('No module named {module!r}')\n")
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(shadow), REPO]),
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
    )
    return subprocess.run(
        [sys.executable, "-m", "mera_multi_hf", *args],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _one_line(done: subprocess.CompletedProcess) -> str:
    text = (done.stdout + done.stderr).strip()
    assert done.returncode != 0 and "Traceback" not in text, text
    lines = [x for x in text.splitlines() if x.startswith("mera-multi: error:")]
    assert len(lines) == 1, text
    return lines[0]


@pytest.mark.parametrize(
    "module, task, extra", [("soundfile", "ruenvaqa", "audio"), ("av", "commonvideoqa", "video")]
)
def test_evaluate_without_the_extras_stops_before_any_model(module, task, extra, tmp_path):
    started = time.monotonic()
    done = _without(
        module,
        tmp_path,
        "evaluate",
        "--tasks",
        task,
        "--data",
        "sample",
        "--output-dir",
        str(tmp_path / "run"),
        "--no-progress",
    )
    line = _one_line(done)
    assert f"{module}, which does not import" in line and f"mera-multi-hf[{extra}]" in line
    assert task in line
    assert not (tmp_path / "run").exists()  # nothing done, nothing to lose
    assert time.monotonic() - started < 60


def test_the_audio_check_finds_scipy_signal_without_importing_it():
    """The preflight of an audio task imports soundfile and scipy, and only finds
    scipy.signal (its import alone takes seconds; a run that decodes no audio needs none)."""
    probe = (
        "import sys; from mera_multi_hf.pipeline.preflight import check_extras; "
        "from mera_multi_hf.tasks.table import get_task; "
        "print(check_extras([get_task('ruenvaqa')])); "
        "print(sorted(m for m in ('soundfile', 'scipy', 'scipy.signal') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        env=dict(os.environ, PYTHONPATH=REPO),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == ["soundfile, scipy.signal", "['scipy', 'soundfile']"]


def test_a_scipy_without_its_signal_module_is_one_line(tmp_path):
    """A scipy that imports but lacks scipy.signal still stops the run before any model."""
    package = tmp_path / "shadow" / "scipy"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    done = _without(
        "nothing_shadowed",
        tmp_path,
        "evaluate",
        "--tasks",
        "ruenvaqa",
        "--data",
        "sample",
        "--output-dir",
        str(tmp_path / "run"),
        "--no-progress",
    )
    line = _one_line(done)
    assert "scipy, which does not import" in line and "No module named 'scipy.signal'" in line
    assert 'pip install "mera-multi-hf[audio]"' in line and not (tmp_path / "run").exists()


def test_build_without_the_audio_extra_is_one_line(tmp_path):
    done = _without(
        "soundfile",
        tmp_path,
        "build",
        "ruenvaqa",
        "--raw",
        str(SAMPLES_DIR / "ruEnvAQA"),
        "--out",
        str(tmp_path / "hub"),
    )
    line = _one_line(done)
    assert "DatasetGenerationError" not in done.stdout + done.stderr
    assert 'pip install "mera-multi-hf[audio]"' in line and not (tmp_path / "hub").exists()


@pytest.mark.parametrize(
    "device, words",
    [("gpu", "not a device torch knows"), ("cuda", "CPU build"), ("cuda:7", "CPU build")],
)
def test_a_device_this_torch_has_not_is_one_line(device, words, tmp_path, capsys):
    import torch

    if words == "CPU build" and torch.version.cuda is not None:
        words = "visible here" if device == "cuda:7" or not torch.cuda.is_available() else None
        if words is None:
            pytest.skip("this machine has the CUDA device")
    code = main(
        [
            "evaluate",
            "--device",
            device,
            "--limit",
            "2",
            "--no-progress",
            "--output-dir",
            str(tmp_path / "run"),
        ]
    )
    err = capsys.readouterr()
    assert code == 2 and words in err.out + err.err
    assert not (tmp_path / "run").exists()


def test_a_text_classifier_as_the_model_is_refused_before_loading(tmp_path, capsys):
    from transformers import BertConfig, BertForSequenceClassification

    config = BertConfig(
        vocab_size=64,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        num_labels=2,
    )
    folder = tmp_path / "classifier"
    BertForSequenceClassification(config).save_pretrained(folder)
    code = main(
        [
            "evaluate",
            "--model",
            str(folder),
            "--limit",
            "2",
            "--no-progress",
            "--output-dir",
            str(tmp_path / "run"),
        ]
    )
    out = capsys.readouterr()
    text = out.out + out.err
    assert code == 2 and "a text classifier (BertForSequenceClassification)" in text
    assert "not a generative model" in text and "Traceback" not in text


def test_more_processes_than_the_machine_has_are_refused_unless_insisted(monkeypatch, capsys):
    from mera_multi_hf.generation.launch import capacity, check_processes

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    have, what = capacity()
    assert have >= 1 and what in ("CPUs", "GPUs")
    code = main(["evaluate", "--processes", str(have + 62), "--no-progress"])
    out = capsys.readouterr()
    text = out.out + out.err
    assert code == 2 and f"{have} {what}" in text and "--allow-oversubscribe" in text
    check_processes(have + 1, oversubscribe=True)  # insisted: allowed
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    assert capacity() == (2, "GPUs")
    with pytest.raises(MeraError, match="2 GPUs"):
        check_processes(3)
