"""What the generate stage needs, checked before any work (pipeline/preflight.py times
each and stops the run at the first missing piece): the backend takes the tasks' media,
the device exists, the model is at hand or the server behind --base-url serves it. Each
takes the values it checks."""

from __future__ import annotations

from pathlib import Path

from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.core.foreign_text import foreign
from mera_multi_hf.core.offline import PROBE_TIMEOUT, check_hub_model, probe, refused


def check_media(kind: str, specs, engine=None) -> None:
    """MeraError for a task whose media the backend does not take (its declared
    capabilities), before any work."""
    from mera_multi_hf.generation.backends import backend_spec, capabilities_of

    takes = capabilities_of(engine).media if engine else backend_spec(kind).capabilities.media
    not_taken = [t.key for t in specs if t.modality not in takes]
    if not_taken:
        raise MeraError(
            f"preflight: the {kind} backend takes {', '.join(sorted(takes)) or 'no media'}"
            f", not the {'/'.join(sorted({t.modality for t in specs} - takes))} of "
            f"{', '.join(not_taken)}: choose other tasks or another backend"
        )


def check_device(device: str | None) -> str:
    """--device names a device torch has here: cpu, auto, cuda[:N] with a CUDA build and
    that many GPUs, or another type torch knows (mps, xpu) that is available."""
    if device in (None, "auto", "cpu"):
        return device or "default"
    import torch

    try:
        kind = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        raise MeraError(
            f"--device {device!r} is not a device torch knows: give cpu, cuda, cuda:N or auto"
        ) from None
    backend = getattr(torch, kind.type, None)
    if kind.type == "cuda" and torch.version.cuda is None:
        raise MeraError(
            f"--device {device}: this torch ({torch.__version__}) is a CPU build, "
            f"without CUDA: install the CUDA build of torch, or run on --device cpu"
        )
    count = backend.device_count() if hasattr(backend, "device_count") else 0
    if count == 0 or (kind.index or 0) >= count:
        raise MeraError(
            f"--device {device}: {count} {kind.type} device(s) visible here; give "
            f"one that exists, or --device cpu"
        )
    return f"{device} ({count} visible)"


def check_model(
    backend: str,
    model: str | None,
    base_url: str | None = None,
    api_key: str | None = None,
    timeout: float = 300,
) -> str:
    """The model the run names is at hand: a model kind (the demo's, a package's), a
    local folder of a generative model or a reachable Hub id (hf); the server that
    serves it (openai); an installed backend checks its own as it loads."""
    if backend == "hf":
        return _check_hf_model(model)
    if backend == "openai":
        return check_server(base_url, api_key, model, timeout)
    return f"the {backend} backend's model {model or '(its default)'}"


def _check_hf_model(model: str | None) -> str:
    from mera_multi_hf.generation.backends.model_kinds import model_kind, model_pointer

    kind = model_kind(model)
    if kind is not None:
        return kind.title or kind.model_id
    path = Path(model).expanduser()
    pointer = None if path.exists() else model_pointer(model)
    if pointer:
        raise MeraError(pointer)
    why = check_model_kind(path) if path.is_dir() else None  # a folder: no Hub asked
    if why:
        raise MeraError(why)
    return check_hub_model(model, "model", "--model", "a folder saved with save_pretrained")


def check_model_kind(path: Path) -> str | None:
    """Why the model folder's config names no generative model (a text classifier, a
    masked LM, ...) by transformers' own task mappings, or None."""
    from mera_multi_hf.core import json_read

    try:
        architectures = json_read.read_file(path / "config.json").get("architectures")
    except (OSError, ValueError, AttributeError):
        return None  # loading it will say what is wrong
    from transformers.models.auto import modeling_auto as auto

    kinds = {
        "a text classifier": "SEQUENCE_CLASSIFICATION",
        "a token classifier": "TOKEN_CLASSIFICATION",
        "a question-answering model": "QUESTION_ANSWERING",
        "a masked language model": "MASKED_LM",
        "an image classifier": "IMAGE_CLASSIFICATION",
        "an audio classifier": "AUDIO_CLASSIFICATION",
    }
    for kind, mapping in kinds.items():
        names = getattr(auto, f"MODEL_FOR_{mapping}_MAPPING_NAMES", {}).values()
        classes = {n for v in names for n in ((v,) if isinstance(v, str) else v)}
        if architectures and all(a in classes for a in architectures):
            return (
                f"--model {path} is {kind} ({', '.join(architectures)}), not a generative "
                f"model: give an image-text, audio or causal language model"
            )
    return None


def check_server(
    base_url: str | None, api_key: str | None, model: str | None, timeout: float
) -> str:
    """An OpenAI-compatible server answers GET /v1/models, accepts the key and serves
    the model."""
    if not base_url or not model:
        raise MeraError("--backend openai needs --base-url and --model")
    from mera_multi_hf.generation.backends.openai import split_urls

    return "; ".join(
        _check_one_server(url, api_key, model, timeout) for url in split_urls(base_url)
    )  # every server named must answer


def _check_one_server(base_url: str, api_key: str | None, model: str, timeout: float) -> str:
    from mera_multi_hf.generation.backends.openai import join_url

    url = join_url(base_url, "/models")
    status, body = probe(url, api_key, min(timeout, PROBE_TIMEOUT))
    if status != 200:
        raise MeraError(refused(url, status, "--api-key", "OPENAI_API_KEY"))
    data = body.get("data") if isinstance(body, dict) else None
    served = [m.get("id") for m in data if isinstance(m, dict)] if isinstance(data, list) else []
    if served and model not in served:
        names = ", ".join(foreign(name, 80) for name in served[:10])
        more = f" and {len(served) - 10} more" if len(served) > 10 else ""
        raise MeraError(
            f"{url} serves {names}{more}, not {foreign(model, quoted=True)}: pass one of "
            "those with --model"
        )
    return f"{url} serves {model}"
