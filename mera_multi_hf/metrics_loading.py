"""The project's evaluate modules, found in a checkout and in an installed wheel alike."""
from __future__ import annotations

from ._paths import bundled_dir
from .errors import MeraError

METRICS = ("exact_match", "group_exact_match", "slot_f1", "judge_score")
# The package modules each metric folder carries as sibling files (byte-for-byte copies,
# imported relatively by <name>.py), so that the folder runs as a Space without this package.
COMMON_SOURCES = ("citation.py", "errors.py", "filters.py", "metric_fns.py")
SIBLING_SOURCES = {name: COMMON_SOURCES for name in METRICS}
SIBLING_SOURCES["judge_score"] = COMMON_SOURCES + ("http_client.py", "judge.py", "masking.py")
# What a task declaration gives a metric's compute() when load_metric gets task=.
TASK_DEFAULTS = {"exact_match": ("mode", "answer_kind", "choices"),
                 "group_exact_match": ("mode", "answer_kind")}


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
    from .tasks import get_task

    spec = get_task(task)
    values = {"mode": spec.em_mode, "answer_kind": spec.answer_kind,
              "choices": list(spec.choices) or None}
    return {key: values[key] for key in TASK_DEFAULTS.get(name, ())}
