"""The bundled raw samples: one small project-made folder per task, in the official raw
MERA layout, written by this package and shipped with it (``mera_multi_hf/demo/samples/``).

Each task's generator is a module here (``ruhhh_image``, ``ruclevr``, ...); every one is
deterministic, and a test checks that the shipped folders equal what they write.
``python -m mera_multi_hf.demo.sample_data [TASK|all] [DIR]`` rewrites a sample (all of
them into the package by default).
"""

from __future__ import annotations

import importlib
import shutil
import sys
from pathlib import Path

from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.tasks.table import TASKS

# The shipped sample folders, one per task (the package's demo/samples/<dataset name>).
SAMPLES_DIR = Path(__file__).resolve().parent.parent / "samples"


def _generators() -> list[str]:
    """The tasks whose sample a module of this package writes (sample_data/<key>.py)."""
    return [key for key in TASKS if (Path(__file__).parent / f"{key}.py").is_file()]


# task key -> the folder name of its bundled sample (the official dataset name)
SAMPLES = {key: TASKS[key].dataset_name for key in _generators()}


def _task(task_key: str):
    task = TASKS.get(task_key)
    if task is None or not (task.sample or task_key in SAMPLES):
        with_sample = [k for k, t in TASKS.items() if t.sample or k in SAMPLES]
        raise MeraError(
            f"no bundled sample for {task_key} (there are samples for: {', '.join(with_sample)})"
        )
    return task


def write_sample(out_dir: str | Path, task_key: str = "ruhhh_image") -> Path:
    """Write the task's sample into ``out_dir`` (a raw MERA folder)."""
    task = _task(task_key)
    if task_key not in SAMPLES:  # a task declared with its own sample folder: a copy
        return Path(shutil.copytree(task.sample, out_dir, dirs_exist_ok=True))
    module = importlib.import_module(f"{__name__}.{task_key}")
    if hasattr(module, "write_sample"):
        return module.write_sample(out_dir)
    from mera_multi_hf.demo.sample_data.common import write_raw

    return write_raw(module.sample(), out_dir)


def bundled_sample(task_key: str = "ruhhh_image") -> Path:
    """The shipped sample folder of a task (a declared ``sample`` folder, else the package's)."""
    task = _task(task_key)
    return Path(task.sample) if task.sample else SAMPLES_DIR / task.dataset_name


def main(argv: list[str]) -> None:
    keys = list(SAMPLES) if not argv or argv[0] == "all" else [argv[0]]
    for key in keys:
        target = argv[1] if len(argv) > 1 and len(keys) == 1 else bundled_sample(key)
        print(write_sample(target, key))


if __name__ == "__main__":
    main(sys.argv[1:])
