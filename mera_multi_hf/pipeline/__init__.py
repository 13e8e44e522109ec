"""pipeline: a whole evaluation, as the commands and the Python API run it.

Owns :func:`~.evaluate.run_evaluation` (the preflight checks, then the run, then
finalize), the preflight (:mod:`.preflight`: what is checked before any work) and
:mod:`.finish` (a run's sample log and record handed to finalize).

May import: every stage up to demo.
"""
