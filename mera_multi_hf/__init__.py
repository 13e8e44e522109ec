"""mera-multi-hf: the MERA Multi benchmark on the Hugging Face stack."""
from ._version import __version__

from .errors import MeraError  # noqa: E402
from .tasks import TASKS, TaskSpec, get_task  # noqa: E402


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
    # Heavy pieces load on first use so `import mera_multi_hf` and the CLI stay quick.
    if name == "load_task":
        from .loading import load_task
        return load_task
    if name == "render_prompt":
        from .prompts import render_prompt
        return render_prompt
    if name == "run_evaluation":
        from .evaluation import run_evaluation
        return run_evaluation
    if name == "RunConfig":
        from .runner.config import RunConfig
        return RunConfig
    if name == "MeraBuilder":
        from .builder import MeraBuilder
        return MeraBuilder
    if name == "load_metric":
        from .metrics_loading import load_metric
        return load_metric
    raise AttributeError(name)


__all__ = ["__version__", "MeraError", "TASKS", "TaskSpec", "get_task", "load_task", "render_prompt",
           "load_metric", "run_evaluation", "RunConfig", "MeraBuilder"]
