"""Which model the ``hf`` backend loads: a name resolved to the id the records carry, the
path ``from_pretrained`` takes and the revision (a Hub commit, a folder's fingerprint or
what a model kind gives); the auto class that loads it; its context length, as
the harness derives it."""

from __future__ import annotations

import re
from pathlib import Path

from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.core.provenance import folder_fingerprint
from mera_multi_hf.generation.backends.model_kinds import model_kind


def resolve_model(model: str | None, revision: str | None = None) -> tuple[str, str, str | None]:
    """(model id for the records, what to pass to from_pretrained, revision).

    The revision is the Hub commit when the model is in the local Hub cache, a content
    fingerprint for a local folder, and what a model kind gives for its name
    (:mod:`.model_kinds`; None: the kind of a run that names no model).
    """
    kind = model_kind(model)
    if kind is not None:
        path = kind.folder()
        return kind.model_id, str(path), kind.revision(path)
    if model is None:
        raise MeraError("no model given: pass --model (a Hub id or a model folder)")
    path = Path(model).expanduser()
    if path.is_dir():
        return (
            model,
            str(path),
            revision
            or "local-"
            + folder_fingerprint(path, read=(".json", ".jinja", ".model", ".txt"), length=12),
        )
    if path.exists() or model.startswith((".", "/", "~")) or model.count("/") > 1:
        raise MeraError(
            f"model path {model!r} is not a model folder (no such directory); "
            f"give a local folder with config.json or a Hub id such as org/name"
        )
    return model, model, _hub_commit(model, revision)


def _hub_commit(model: str, revision: str | None) -> str | None:
    """The commit a Hub model id (and branch/tag) points to, found without downloading
    the weights: asked of the Hub when online, else read from the local Hub cache. The
    model is then loaded at that commit, so the recorded revision is the one used."""
    if revision and re.fullmatch(r"[0-9a-f]{40}", revision):
        return revision
    from huggingface_hub import HfApi, constants, try_to_load_from_cache

    if not constants.HF_HUB_OFFLINE:
        try:
            return HfApi().model_info(model, revision=revision, timeout=20).sha
        except Exception:  # noqa: BLE001 (no network or no access: the cache may know)
            pass
    try:
        hit = try_to_load_from_cache(model, "config.json", revision=revision)
    except Exception:  # noqa: BLE001 (a malformed id: from_pretrained reports it properly)
        hit = None
    if isinstance(hit, str):
        return Path(hit).parent.name  # .../snapshots/<commit>/config.json
    return revision


def multimodal_class(config):
    """The auto class that loads a multimodal model (images: ImageTextToText; audio and
    any-to-text models: MultimodalLM), or None for a language model."""
    import transformers

    auto_map = getattr(config, "auto_map", None) or {}
    for name in ("AutoModelForImageTextToText", "AutoModelForMultimodalLM"):
        auto = getattr(transformers, name, None)
        if auto is not None and (type(config) in auto._model_mapping or name in auto_map):
            return auto
    return None


HARNESS_MAX_LENGTH = 2048  # the harness's _DEFAULT_MAX_LENGTH
UNSET_MAX_LENGTH = 1000000000000000019884624838656  # transformers' "no limit" (int(1e30))


def context_length(model, tokenizer) -> int:
    """``max_length`` as the harness derives it (``huggingface.py``): the model config's
    own ``n_positions``, ``max_position_embeddings`` or ``n_ctx`` (top level only: most
    multimodal configs have none), else the tokenizer's ``model_max_length``, 2048 where
    that is the "no limit" value."""
    for name in ("n_positions", "max_position_embeddings", "n_ctx"):
        if hasattr(model.config, name):
            return getattr(model.config, name)
    value = getattr(tokenizer, "model_max_length", None)
    return HARNESS_MAX_LENGTH if value in (None, UNSET_MAX_LENGTH) else value
