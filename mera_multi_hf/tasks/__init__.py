"""tasks: declarations only, read by every later stage.

Owns :class:`~.spec.TaskSpec` (:mod:`.spec`) and the table of the 18 tasks (and the
registry a new task joins, :mod:`.table`), the prompts, ruTiE's dialogue positions (the official arithmetic on
meta.id), and what the metric modules carry with them (:mod:`.declarations`: the
citation, the official answer marker, ruSLUn's filter and metric rules). Task-specific behaviour is data here, never a branch on a task name
elsewhere. Here: the import of the task modules that ``$MERA_MULTI_TASKS`` names, kept out
of the table so that a command's start-up loads the table only when it reads it.

May import: core.
"""

# Tasks declared outside the package: the modules that declare them (each calls
# register_task), comma-separated, as .py files or importable module names. The command
# line imports them before it runs (docs/extending.md, "Add a task").
TASK_MODULES_VARIABLE = "MERA_MULTI_TASKS"


def import_task_modules() -> None:
    """Import the task declaration modules that ``$MERA_MULTI_TASKS`` names (each once
    per process)."""
    import os

    named = [e.strip() for e in os.environ.get(TASK_MODULES_VARIABLE, "").split(",")]
    if not any(named):  # the usual case: nothing to import, nor the machinery for it
        return
    import hashlib
    import importlib
    from pathlib import Path

    from mera_multi_hf.core.errors import MeraError
    from mera_multi_hf.core.paths import load_module_from_file

    for entry in filter(None, named):
        if entry.endswith(".py"):
            path = Path(entry).resolve()
            if not path.is_file():
                raise MeraError(f"{TASK_MODULES_VARIABLE}: the task module {entry} does not exist")
            tag = hashlib.sha1(str(path).encode()).hexdigest()[:12]
            load_module_from_file(path, f"mera_multi_hf._task_modules.{path.stem}_{tag}")
            continue
        try:
            importlib.import_module(entry)
        except ModuleNotFoundError as err:
            if err.name is None or not f"{entry}.".startswith(f"{err.name}."):
                raise  # the module itself imports something missing
            raise MeraError(
                f"{TASK_MODULES_VARIABLE}: cannot import the task module "
                f"{entry} (no module {err.name})"
            ) from None
