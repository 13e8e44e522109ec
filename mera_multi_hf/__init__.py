"""mera-multi-hf: the MERA Multi benchmark on the Hugging Face stack."""

from mera_multi_hf._version import __version__
from mera_multi_hf.core.errors import MeraError  # noqa: E402


def _plain_bars_in_notebooks() -> None:
    """In a Jupyter kernel without ipywidgets, tqdm.auto (ours, datasets', the Hub's)
    falls back to its plain text bars, which show progress well, but first warns
    "TqdmWarning: IProgress not found" into the notebook: the plain bars are meant."""
    import importlib.util
    import sys

    if "IPython" in sys.modules and importlib.util.find_spec("ipywidgets") is None:
        import warnings

        warnings.filterwarnings("ignore", message="IProgress not found")


_plain_bars_in_notebooks()


def __getattr__(name):
    # Pieces load on first use so `import mera_multi_hf` and the CLI stay quick.
    if name in ("TASKS", "get_task"):
        from mera_multi_hf.tasks import table

        return getattr(table, name)
    if name == "TaskSpec":
        from mera_multi_hf.tasks.spec import TaskSpec

        return TaskSpec
    if name == "load_task":
        from mera_multi_hf.data.loading import load_task

        return load_task
    if name == "render_prompt":
        from mera_multi_hf.tasks.prompts import render_prompt

        return render_prompt
    if name == "run_evaluation":
        from mera_multi_hf.pipeline.evaluate import run_evaluation

        return run_evaluation
    if name == "RunConfig":
        from mera_multi_hf.generation.config import RunConfig

        return RunConfig
    if name == "MeraBuilder":
        from mera_multi_hf.data.builder import MeraBuilder

        return MeraBuilder
    if name == "load_metric":
        from mera_multi_hf.spaces.loading import load_metric

        return load_metric
    raise AttributeError(name)


__all__ = [
    "__version__",
    "MeraError",
    "TASKS",
    "TaskSpec",
    "get_task",
    "load_task",
    "render_prompt",
    "load_metric",
    "run_evaluation",
    "RunConfig",
    "MeraBuilder",
]
