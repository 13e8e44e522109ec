"""Each built-in task's exact-match options (normalisation mode, answer kind, option
letters), which the metric modules take from a task key (``evaluate.load(path, task)``
or ``compute(..., task=...)``). A Space has no task declarations: `mera-multi metrics
export` writes this table out, literally, as the Space's ``task_options.py``.
"""

from mera_multi_hf.tasks.table import TASKS

TASK_OPTIONS = {
    key: {
        "mode": spec.em_mode,
        "answer_kind": spec.answer_kind,
        "choices": list(spec.choices) or None,
    }
    for key, spec in TASKS.items()
    if not spec.builder  # declared in the package, not registered from outside
}
