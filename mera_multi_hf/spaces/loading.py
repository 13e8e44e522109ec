"""The project's evaluate modules, found in a checkout and in an installed wheel alike."""

from __future__ import annotations

from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.core.paths import bundled_dir
from mera_multi_hf.scoring.registry import METRICS as REGISTRY

# The metrics with an evaluate module (a Space folder metrics/<name>/, written by
# `mera-multi metrics export`), from the registry.
METRICS = tuple(m.name for m in REGISTRY.values() if m.space)


def metric_path(name: str) -> str:
    """The folder of one bundled evaluate module (metrics/<name>/)."""
    if name not in METRICS:
        raise MeraError(f"unknown metric {name!r}: the bundled metrics are {', '.join(METRICS)}")
    return str(bundled_dir("metrics") / name)


def load_metric(name: str, task: str | None = None, **kwargs):
    """`evaluate.load` of a bundled MERA Multi metric; kwargs go to `evaluate.load`. With
    ``task`` (a task key), ``compute`` takes the task's declared mode, answer kind and
    choices as defaults (the modules themselves need no task registry).

    >>> load_metric("exact_match").compute(predictions=["a"], references=["A"])
    {'exact_match': 1.0}
    >>> load_metric("exact_match", task="commonvideoqa").compute(predictions=["a"], references=["A"])
    {'exact_match': 0.0}
    """
    import functools

    import evaluate

    module = evaluate.load(metric_path(name), **kwargs)
    if task is not None:
        module.compute = functools.partial(module.compute, **task_defaults(name, task))
    return module


def task_defaults(name: str, task: str) -> dict:
    """The compute() options of metric ``name`` that task ``task`` declares."""
    from mera_multi_hf.tasks.table import get_task

    spec = get_task(task)
    values = {
        "mode": spec.em_mode,
        "answer_kind": spec.answer_kind,
        "choices": list(spec.choices) or None,
    }
    return {key: values[key] for key in REGISTRY[name].task_options}
