"""pipeline: a whole evaluation, as the commands and the Python API run it.

Owns the two commands as straight lines, each stage returning its record here:
:func:`~.evaluate.run_evaluation` (plan, load, generate, score, write) and
:func:`~.score.score_predictions` (plan, load, the predictions read, score, write), the
score and write steps they share (:mod:`.outcome`), a run's own record fields
(:mod:`.run_fields`), the preflight (:mod:`.preflight`: what is checked before any
work) and `compare` (:mod:`.compare`: two runs read, run A's split loaded for the
media, then the reports).

May import: every stage up to demo.
"""
