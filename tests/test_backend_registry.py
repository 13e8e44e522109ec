"""Backends by registry: the built-in kinds made by name, an installed package's backend
found through its entry point and run from the command line, the options each backend
declares, and the capabilities the runner reads instead of sniffing methods."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.generation import RunConfig
from mera_multi_hf.generation.backends import (
    Capabilities,
    backend_spec,
    capabilities_of,
    cut_at_stop,
    make_backend,
    register_backend,
)
from mera_multi_hf.generation.backends.hf_options import HFOptions
from mera_multi_hf.generation.backends.openai import OpenAIOptions

REPO = Path(__file__).resolve().parent.parent

# An installable distribution as pip leaves it: the package and its dist-info folder,
# whose entry_points.txt adds the "echo" backend (importlib.metadata finds it on sys.path).
ECHO_PACKAGE = '''
from dataclasses import dataclass

from mera_multi_hf.generation.backends import Capabilities, cut_at_stop, register_backend


@dataclass
class EchoOptions:
    batch_size: int = 8
    stop: tuple | list | None = None
    seed: int = 0


@register_backend("echo", options=EchoOptions,
                  capabilities=Capabilities(media=frozenset({"image"})))
class EchoBackend:
    """Answers the first letter, whatever it is asked."""
    name = "echo"

    def __init__(self, model, **options):
        o = EchoOptions(**options)
        self.model_id, self.revision = model or "echo-model", "v1"
        self.batch_size, self.stop, self.seed = o.batch_size, tuple(o.stop or ("\\n\\n",)), o.seed

    def settings(self):
        return {"backend": self.name, "stop": list(self.stop)}

    def info(self):
        return {"model": self.model_id, "revision": self.revision, "backend": self.name,
                "seed": self.seed}

    def load(self):
        pass

    def generate(self, requests):
        return [cut_at_stop("A\\n\\nnever shown", self.stop) for _ in requests]

    def close(self):
        pass
'''


def _installed_echo(root: Path) -> Path:
    site = root / "site"
    (site / "mypkg").mkdir(parents=True)
    (site / "mypkg" / "__init__.py").write_text(ECHO_PACKAGE, encoding="utf-8")
    info = site / "mypkg-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: mypkg\nVersion: 0.1\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(
        "[mera_multi_hf.backends]\necho = mypkg:EchoBackend\n", encoding="utf-8"
    )
    return site


def _mera(site: Path | None, *args: str) -> subprocess.CompletedProcess:
    paths = [str(REPO)] + ([str(site)] if site else [])
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(paths),
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
    )
    return subprocess.run(
        [sys.executable, "-m", "mera_multi_hf", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_an_installed_backend_runs_from_the_command_line(tmp_path):
    site = _installed_echo(tmp_path)
    out = tmp_path / "run"
    done = _mera(
        site,
        "evaluate",
        "--backend",
        "echo",
        "--tasks",
        "ruhhh_image",
        "--data",
        "sample",
        "--limit",
        "4",
        "--no-progress",
        "--output-dir",
        str(out),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    run = json.loads((out / "results.json").read_text(encoding="utf-8"))["run"]
    assert (run["backend"], run["model"], run["revision"]) == ("echo", "echo-model", "v1")
    assert run["backend_options"] == {"seed": 1234}  # filled from RunConfig's field by name
    answers = [
        json.loads(line)["generation"]
        for line in (out / "samples_ruhhh_image_test.jsonl").read_text().splitlines()
    ]
    assert answers == ["A"] * 4  # cut at the run's stop string
    # its declared media: an audio task is refused before any work
    refused = _mera(
        site,
        "evaluate",
        "--backend",
        "echo",
        "--tasks",
        "ruslun",
        "--data",
        "sample",
        "--no-progress",
        "--output-dir",
        str(tmp_path / "audio"),
    )
    assert refused.returncode != 0
    assert "the echo backend takes image, not the audio of ruslun" in refused.stderr
    assert not (tmp_path / "audio" / "results.json").exists()
    # an unknown kind names every kind there is, the installed one too
    unknown = _mera(site, "evaluate", "--backend", "nope", "--no-progress")
    assert unknown.returncode == 2 and "'hf', 'openai', 'echo'" in unknown.stderr


def test_without_the_package_the_kind_is_unknown(tmp_path):
    done = _mera(
        None, "evaluate", "--backend", "echo", "--no-progress", "--output-dir", str(tmp_path / "o")
    )
    assert done.returncode == 2 and "invalid choice: 'echo'" in done.stderr
    with pytest.raises(MeraError, match="unknown backend 'echo'; choose one of hf, openai"):
        RunConfig(backend="echo")


def test_the_built_in_kinds_load_on_first_use_only():
    probe = (
        "import sys, mera_multi_hf.cli.main; from mera_multi_hf.generation import RunConfig; "
        "RunConfig(backend='openai'); "
        "print(sorted(m for m in ('torch', 'transformers', 'requests', 'importlib.metadata',"
        " 'mera_multi_hf.generation.backends.hf', 'mera_multi_hf.generation.backends.openai')"
        " if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"  # no backend module, no entry-point scan


def test_each_backend_declares_its_options_and_capabilities():
    hf, api = backend_spec("hf"), backend_spec("openai")
    assert hf.options is HFOptions and api.options is OpenAIOptions
    assert hf.capabilities.streaming is False and api.capabilities.streaming is True
    assert hf.capabilities.media == api.capabilities.media == {"image", "audio", "video"}
    assert HFOptions().max_frames == 8 and OpenAIOptions().concurrency == 64
    assert "k-secret" not in repr(OpenAIOptions(api_key="k-secret"))
    with pytest.raises(MeraError, match="unknown dtype 'fp8'"):
        make_backend("hf", None, dtype="fp8")
    # RunConfig maps its fields onto the chosen backend's options, by name
    config = RunConfig(
        backend="openai",
        model="m",
        base_url="http://127.0.0.1:1/v1",
        concurrency=3,
        dtype="float16",
    )
    assert config.backend_options() == {
        "base_url": "http://127.0.0.1:1/v1",
        "api_key": None,
        "concurrency": 3,
        "timeout": 300.0,
        "max_retries": 4,
        "max_pixels": None,
        "batch_size": 8,
        "seed": 1234,
        "stop": None,
    }
    assert set(RunConfig().backend_options()) == {f for f in HFOptions.__dataclass_fields__}
    with pytest.raises(TypeError, match="must be a dataclass"):
        register_backend("broken", options=dict)


@dataclass
class _LetterOptions:
    letter: str = "B"
    stop: tuple | list | None = None
    batch_size: int = 2


@register_backend(
    "test-letters",
    options=_LetterOptions,
    capabilities=Capabilities(streaming=True, media=frozenset({"image"})),
)
class _LetterBackend:
    """Answers one letter; declares streaming, so the runner must call ``stream``."""

    name = "test-letters"
    revision = None

    def __init__(self, model, *, letter, stop, batch_size):
        self.model_id, self.letter, self.batch_size = model or "letters", letter, batch_size
        self.stop, self.streamed, self.batched = tuple(stop or ("\n\n",)), 0, 0

    def settings(self):
        return {"backend": self.name, "letter": self.letter, "stop": list(self.stop)}

    def info(self):
        return {"model": self.model_id, "revision": None, "backend": self.name}

    def load(self):
        pass

    def generate(self, requests):
        self.batched += len(requests)
        return [cut_at_stop(self.letter + "\n\nx", self.stop) for _ in requests]

    def stream(self, requests, prepare=None):
        for request in requests:
            if prepare:
                prepare([request])
            self.streamed += 1
            yield request, self.letter, 0.0

    def close(self):
        pass


class _Undeclared(_LetterBackend):
    """The same methods, no declaration of its own: ``stream`` is not sniffed."""

    capabilities = None


def test_a_registered_backend_takes_its_options_and_its_capabilities_are_read(tmp_path):
    engine = make_backend("test-letters", None, letter="C", dtype="auto", concurrency=9)
    assert (engine.letter, engine.batch_size) == ("C", 2)  # the others' options ignored
    with pytest.raises(TypeError, match="no_backend_takes_this"):
        make_backend("test-letters", None, no_backend_takes_this=1)
    from mera_multi_hf.pipeline.evaluate import run_evaluation

    config = dict(tasks="ruhhh_image", data="sample", limit=3, no_progress=True)
    run_evaluation(RunConfig(output_dir=str(tmp_path / "s"), **config), engine=engine)
    assert (engine.streamed, engine.batched) == (3, 0)
    plain = _Undeclared(None, letter="D", stop=None, batch_size=2)
    assert capabilities_of(plain) == Capabilities()
    run_evaluation(RunConfig(output_dir=str(tmp_path / "b"), **config), engine=plain)
    assert (plain.streamed, plain.batched) == (0, 3)
    # the declared media hold for a ready engine too
    with pytest.raises(MeraError, match="takes image, not the audio of ruslun"):
        run_evaluation(
            RunConfig(
                tasks="ruslun", data="sample", no_progress=True, output_dir=str(tmp_path / "a")
            ),
            engine=engine,
        )
