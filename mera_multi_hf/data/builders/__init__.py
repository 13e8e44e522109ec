"""One module per MERA Multi task: how its raw MERA folder becomes typed `datasets` splits.

Each module subclasses :class:`mera_multi_hf.data.builder.MeraBuilder` (the class whose
``TASK_KEY`` is the task's key), declares the task's ``meta`` features and normalises a
record's ``meta``; everything else comes from the task's declaration in
:mod:`mera_multi_hf.tasks.table`. `builder_class` imports ``builders.<task key>``; a task
declared with ``builder=<file>`` (a task added outside the package) is read from that file.
The scripts in the checkout's dataset_scripts/ run `mera-multi build` for one task each.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.core.paths import load_module_from_file
from mera_multi_hf.tasks.spec import TaskSpec


def dataset_module(task: TaskSpec):
    """The task's builder module (its builder, meta features, normalisation):
    ``mera_multi_hf.data.builders.<key>``, or the file a task added outside the package names."""
    if not task.builder:
        try:
            return importlib.import_module(f"{__name__}.{task.key}")
        except ModuleNotFoundError as err:
            if err.name != f"{__name__}.{task.key}":
                raise
            raise MeraError(
                f"task {task.key} has no dataset builder yet (expected "
                f"mera_multi_hf/data/builders/{task.key}.py)"
            ) from None
    path = Path(task.builder)
    if not path.is_file():
        raise MeraError(f"task {task.key}: its builder file {path} does not exist")
    return load_module_from_file(path, f"mera_multi_hf._task_builders.{task.key}")


def builder_class(task: TaskSpec) -> type:
    module = dataset_module(task)
    module._patched_for_streaming = True  # see builder.py: builds read local files only
    for value in vars(module).values():
        if isinstance(value, type) and getattr(value, "TASK_KEY", None) == task.key:
            return value
    raise MeraError(
        f"the builder module of {task.key} ({module.__name__}) declares no "
        f"class with TASK_KEY = {task.key!r}"
    )
