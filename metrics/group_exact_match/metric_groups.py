"""Group metrics (ruHHH's group exact match, the group judge score): a group counts only
when every one of its examples scores 1; the metric is the mean over groups."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .errors import MeraError
from .metric_inputs import check_batch

if TYPE_CHECKING:
    import numpy as np


def group_scores(scores, group_ids) -> np.ndarray:
    """Per-group 0/1: a group scores 1 only when every one of its examples scores 1.

    Groups come out in sorted order of their ids.

    >>> group_scores([1, 1, 0, 1, 1], [7, 7, 3, 3, 9]).tolist()
    [0, 1, 1]
    """
    import numpy as np  # here: the registry's names alone need no numpy

    scores = np.asarray(scores)
    check_batch({"group_ids": group_ids})
    ids = np.asarray(group_ids)
    if scores.shape != ids.shape or scores.ndim != 1:
        raise MeraError(
            f"got {scores.size} scores but {ids.size} group ids: every example "
            "needs exactly one group id"
        )
    if scores.size == 0:
        raise MeraError("no examples to score: the predictions are empty")
    _, inverse = np.unique(ids, return_inverse=True)
    # A group is right iff none of its examples is wrong: count the wrong ones per group.
    wrong = np.bincount(inverse.ravel(), weights=(scores < 1))
    return (wrong == 0).astype(np.int8)


def group_mean(scores, group_ids) -> float:
    """Group exact match (or group judge score): the mean of `group_scores`.

    >>> group_mean([1, 1, 0, 1, 1], [7, 7, 3, 3, 9])
    0.6666666666666666
    """
    return float(group_scores(scores, group_ids).mean())
