"""The built-in tiny models as model kinds, registered as any package's model would be
(:mod:`mera_multi_hf.generation.backends.model_kinds` imports this module by name).

- ``mera-multi-hf/tiny-random-llava`` and ``mera-multi-hf/tiny-random-qwen2-audio``: each
  model by the id the results show;
- ``tiny``: the two together, audio inputs to the Qwen2-Audio, the rest to the LLaVA;
- no ``--model``: the same pair, on the bundled samples when no ``--data`` is given (the
  demo).

A model family's name (``llava``, ``qwen2.5-vl``, ...) as ``--model`` gets a pointer at
the command that builds that family's tiny model.
"""

from __future__ import annotations

from dataclasses import replace

from mera_multi_hf.demo import builtin_models as tiny
from mera_multi_hf.demo.source_kind import SAMPLE
from mera_multi_hf.generation.backends.model_kinds import (
    ModelKind,
    register_model_kind,
    register_model_pointer,
)

NOTE = (
    "the built-in tiny model has random weights: its answers are noise "
    "(a plumbing check, not a score)"
)
LLAVA = ModelKind(
    tiny.TINY_MODEL_ID,
    tiny.tiny_model_path,
    tiny.tiny_model_revision,
    title="the built-in tiny model",
    note=NOTE,
)
AUDIO = replace(
    LLAVA,
    model_id=tiny.TINY_AUDIO_MODEL_ID,
    folder=tiny.tiny_audio_model_path,
    title="the built-in tiny audio model",
)


def family_pointer(name: str) -> str | None:
    """For a family's name: the command that builds its tiny model (a folder for --model)."""
    from mera_multi_hf.demo.tiny_models import FAMILIES

    if name not in FAMILIES:
        return None
    return (
        f"--model {name} is a model family, not a model: `mera-multi models --path {name}` "
        f"builds its tiny random model and prints the folder to pass as --model, or give "
        f"a Hub id or a folder of a {name} model"
    )


register_model_kind(LLAVA)
register_model_kind(AUDIO)
register_model_kind(replace(LLAVA, audio=AUDIO.model_id), names=("tiny",))
register_model_kind(replace(LLAVA, audio=AUDIO.model_id, data=SAMPLE), names=(None,))
register_model_pointer(family_pointer)
