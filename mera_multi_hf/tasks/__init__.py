"""tasks: declarations only, read by every later stage.

Owns :class:`~.spec.TaskSpec` (:mod:`.spec`) and the table of the 18 tasks (and the
registry a new task joins, :mod:`.table`), the prompts, ruTiE's dialogue positions (the official arithmetic on
meta.id), and what the metric modules carry with them (:mod:`.declarations`: the
citation, the official answer marker, ruSLUn's filter and metric rules). Task-specific behaviour is data here, never a branch on a task name
elsewhere.

May import: core.
"""
