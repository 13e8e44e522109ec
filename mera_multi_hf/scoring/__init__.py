"""scoring: from answers to numbers, exactly as the official code computes them.

Owns the filters, the metric formulas (one module per family) and the metric registry
(each metric's per-example function, its aggregation, its card text), scoring a task
(:func:`~.score.score_task`), the score stage of a run (:mod:`.run_results`: the judge,
every task scored, the run record, the summary), the uncertainty of the scores, the
diagnostics, the scoring options, and reading prediction files (what `score` takes).

May import: core, tasks, judge.
"""
