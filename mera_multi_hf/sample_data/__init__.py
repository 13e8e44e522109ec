"""The bundled raw samples: one small project-made folder per task, in the official raw
MERA layout, written by this package and shipped with it (``mera_multi_hf/samples/``).

Each task's generator is a module here (``ruhhh_image``, ``ruclevr``, ...); every one is
deterministic, and a test checks that the shipped folders equal what they write.
``python -m mera_multi_hf.sample_data [TASK|all] [DIR]`` rewrites a sample (all of
them into the package by default).
"""
from __future__ import annotations

import importlib
import sys
from pathlib import Path

from ..errors import MeraError
from .ruhhh_image import CATEGORY_CONTEXT, ITEMS, PROMPTS  # the tiny model's training texts

__all__ = ["SAMPLES", "bundled_sample", "write_sample", "CATEGORY_CONTEXT", "ITEMS", "PROMPTS"]

# task key -> the folder name of its sample (the official dataset name)
SAMPLES = {
    "ruhhh_image": "ruHHH-Image", "rucommonvqa": "ruCommonVQA", "ruclevr": "ruCLEVR",
    "weird": "WEIRD", "runaturalsciencevqa": "ruNaturalScienceVQA", "labtabvqa": "LabTabVQA",
    "realvqa": "RealVQA", "rumathvqa": "ruMathVQA", "schoolsciencevqa": "SchoolScienceVQA",
    "unisciencevqa": "UniScienceVQA", "rutie_image": "ruTiE-Image",
    "ruenvaqa": "ruEnvAQA", "ruslun": "ruSLUn", "aquaria": "AQUARIA", "rutie_audio": "ruTiE-Audio",
    "ruhhh_video": "ruHHH-Video", "commonvideoqa": "CommonVideoQA", "realvideoqa": "RealVideoQA",
}


def _check(task_key: str) -> str:
    if task_key not in SAMPLES:
        raise MeraError(f"no bundled sample for {task_key} "
                        f"(there are samples for: {', '.join(SAMPLES)})")
    return task_key


def write_sample(out_dir: str | Path, task_key: str = "ruhhh_image") -> Path:
    """Write the task's sample into ``out_dir`` (a raw MERA folder)."""
    module = importlib.import_module(f"{__name__}.{_check(task_key)}")
    if hasattr(module, "write_sample"):
        return module.write_sample(out_dir)
    from .common import write_raw
    return write_raw(module.sample(), out_dir)


def bundled_sample(task_key: str = "ruhhh_image") -> Path:
    """The shipped sample folder of a task."""
    from .._paths import SAMPLES_DIR
    return SAMPLES_DIR / SAMPLES[_check(task_key)]


def main(argv: list[str]) -> None:
    keys = list(SAMPLES) if not argv or argv[0] == "all" else [argv[0]]
    for key in keys:
        target = argv[1] if len(argv) > 1 and len(keys) == 1 else bundled_sample(key)
        print(write_sample(target, key))


if __name__ == "__main__":
    main(sys.argv[1:])
