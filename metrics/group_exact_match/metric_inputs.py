"""The checks every metric makes of its inputs, and the mean over examples: one
sentence naming the wrong column, never a bare numpy or Arrow error."""

from __future__ import annotations

from .errors import MeraError


def check_strings(values, what: str) -> list:
    """A column of strings as a list; a MeraError names the first item that is no string."""
    if isinstance(values, str):
        raise MeraError(f"{what} must be a list of strings, got one string {values[:40]!r}")
    values = list(values)
    if set(map(type, values)) <= {str}:  # the common case, checked at C speed
        return values
    for i, v in enumerate(values):
        if not isinstance(v, str):
            raise MeraError(
                f"{what}[{i}] is {type(v).__name__} {v!r}, expected a string "
                "(use '' for a missing answer)"
            )
    return values


class MetricInputError(MeraError, ValueError):
    """Inputs of the wrong shape or type for a metric: one sentence saying which and why."""


def check_batch(batch: dict, integers: tuple[str, ...] = ("group_ids",)) -> None:
    """The columns of one ``compute``/``add_batch`` call, checked before evaluate encodes
    them: each a sequence with one item per example (a string would be split into its
    characters), all of one length, and no float in the ``integers`` columns (a float
    group id would be truncated into another group)."""
    sizes = {}
    for name, column in batch.items():
        if column is None:
            continue
        if isinstance(column, (str, bytes, dict)) or not hasattr(column, "__len__"):
            raise MetricInputError(
                f"`{name}` must be a list with one item per example, not "
                f"{type(column).__name__} {str(column)[:40]!r}"
            )
        sizes[name] = len(column)
    if len(set(sizes.values())) > 1:
        raise MetricInputError(
            "the inputs must pair up one to one, but their lengths differ: "
            + ", ".join(f"{k} {v}" for k, v in sizes.items())
        )
    for name in integers:
        if batch.get(name) is not None:
            _check_integers(batch[name], name)


def _check_integers(values, name: str) -> None:
    """No float, complex or bool among the ids (strings are ids too: they sort)."""
    import numpy as np  # here (and below): the registry's names alone need no numpy

    array = values if isinstance(values, np.ndarray) else np.asarray(values, dtype=object)
    if array.dtype.kind in "iuUS":
        return
    for i, v in enumerate(values):
        if isinstance(v, (bool, float, complex, np.bool_, np.floating, np.complexfloating)):
            raise MetricInputError(
                f"`{name}[{i}]` is {type(v).__name__} {v!r}: {name} must be "
                "integers (a float would be truncated into another group)"
            )


def require_examples(batch: dict) -> None:
    """No examples is an error with a sentence (evaluate would read the first example's
    type off an empty batch and fail with a bare IndexError)."""
    if not any(len(values) for values in batch.values()):
        raise MeraError("no examples to score: the predictions are empty")


def mean_score(scores, groups=None) -> float:
    """The mean of per-example scores (``groups`` unused: the registry's aggregations
    take them); no examples is an error, never a silent 0 (the one rule for every mean
    a metric reports: the registry's, the metric modules' and the Spaces')."""
    import numpy as np

    scores = np.asarray(scores, dtype=np.float64)
    if scores.size == 0:
        raise MeraError("no examples to score: the predictions are empty")
    return float(scores.mean())


NO_TASK = "default"  # evaluate's config_name when none is given


def task_key(tasks: dict, config_name: str | None = None, task: str | None = None) -> str | None:
    """The one task a metric module is loaded or computed for, from evaluate's
    ``config_name`` (``evaluate.load(path, "commonvideoqa")``) and ``task=`` (to load or to
    compute); None when neither names one. An unknown task, or two different ones, is a
    MetricInputError (a ValueError) naming them."""
    import difflib

    named = []
    for name in (config_name, task):
        if name is None or name == NO_TASK:
            continue
        if not isinstance(name, str):
            raise MetricInputError(
                f"a task is named by its key, a string such as 'ruhhh_image', "
                f"not {type(name).__name__}"
            )
        key = name.strip().lower().replace("-", "_")
        if key not in tasks:
            near = difflib.get_close_matches(key, list(tasks), n=1, cutoff=0.6)
            hint = f" (did you mean {near[0]}?)" if near else ""
            raise MetricInputError(
                f"unknown task {name!r}{hint}; the MERA Multi tasks are {', '.join(tasks)}"
            )
        named.append(key)
    if len(set(named)) > 1:
        raise MetricInputError(
            f"the metric was loaded for task {named[0]!r} and computed with "
            f"task={named[1]!r}: name one task"
        )
    return named[0] if named else None


def task_options(tasks: dict, key: str | None, **given) -> dict:
    """Each compute option as given, else as task ``key`` declares it (None for none)."""
    declared = tasks[key] if key else {}
    return {name: declared.get(name) if value is None else value for name, value in given.items()}
