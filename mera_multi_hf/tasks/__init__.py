"""tasks: declarations only, read by every later stage.

Owns :class:`~.spec.TaskSpec` (:mod:`.spec`) and the table of the 18 tasks (and the
registry a new task joins, :mod:`.table`), the prompts, ruTiE's dialogue positions (the official arithmetic on
meta.id), ruSLUn's filter and metric rules, the citation and the metric descriptions the
dataset cards show. Task-specific behaviour is data here, never a branch on a task name
elsewhere.

May import: core.
"""
