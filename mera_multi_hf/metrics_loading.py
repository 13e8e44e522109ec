"""The project's evaluate modules, found in a checkout and in an installed wheel alike."""
from __future__ import annotations

from ._paths import bundled_dir
from .errors import MeraError

METRICS = ("exact_match", "group_exact_match", "slot_f1", "judge_score")


def metric_path(name: str) -> str:
    """The folder of one bundled evaluate module (metrics/<name>/)."""
    if name not in METRICS:
        raise MeraError(f"unknown metric {name!r}: the bundled metrics are {', '.join(METRICS)}")
    return str(bundled_dir("metrics") / name)


def load_metric(name: str, **kwargs):
    """`evaluate.load` of a bundled MERA Multi metric; kwargs go to `evaluate.load`.

    >>> load_metric("exact_match").compute(predictions=["a"], references=["A"])
    {'exact_match': 1.0}
    """
    import evaluate

    return evaluate.load(metric_path(name), **kwargs)
