"""Tiny random models of the model families users evaluate, built offline.

Each family's recipe (:mod:`.recipes`) makes a small config of the family's real model
class, its real processor classes and a chat template written from the family's
documented prompt format (:mod:`.templates`). Weights are random: **answers are noise**;
the models exist to run each family's real processor and generation path in tests.

A model is built at first use into ``<cache_root>/models/tiny-<family>-<fingerprint>``
(a few hundred KB), the fingerprint hashing the recipe code, the library versions and
whether torchvision imports (which decides whether the family's video processor exists).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mera_multi_hf.core.arguments import add_command, opt
from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.demo.tiny_models.recipes import has_torchvision


@dataclass(frozen=True)
class Family:
    name: str
    recipe: str  # function name in .recipes ("" for the two older models)
    modalities: tuple[str, ...]
    video_processor: bool  # has one (else videos go in as frames)
    processors: str  # the real processor classes the recipe builds
    args: tuple = ()
    torchvision_images: bool = False  # its image processor exists only with torchvision

    @property
    def needs_torchvision(self) -> bool:
        # transformers 5 cannot construct a processor with a video_processor attribute
        # without torchvision, even when that processor is left out
        return self.video_processor or self.torchvision_images


IV, QWEN_IMAGE = ("image", "video"), "Qwen2VLImageProcessorPil"
FAMILIES = {
    f.name: f
    for f in (
        Family("llava", "", IV, False, "LlavaProcessor: CLIPImageProcessorPil"),
        Family(
            "qwen2-audio", "", ("audio",), False, "Qwen2AudioProcessor: WhisperFeatureExtractor"
        ),
        Family(
            "qwen2-vl",
            "qwen2_vl",
            IV,
            True,
            f"Qwen2VLProcessor: {QWEN_IMAGE}, Qwen2VLVideoProcessor",
            ("2",),
        ),
        Family(
            "qwen2.5-vl",
            "qwen2_vl",
            IV,
            True,
            f"Qwen2_5_VLProcessor: {QWEN_IMAGE}, Qwen2VLVideoProcessor",
            ("2.5",),
        ),
        Family(
            "qwen3-vl",
            "qwen3_vl",
            IV,
            True,
            f"Qwen3VLProcessor: {QWEN_IMAGE}, Qwen3VLVideoProcessor",
        ),
        Family("gemma3", "gemma3", IV, False, "Gemma3Processor: Gemma3ImageProcessorPil"),
        Family("idefics3", "idefics3", IV, False, "Idefics3Processor: Idefics3ImageProcessorPil"),
        Family(
            "llava-onevision",
            "llava_onevision",
            IV,
            True,
            "LlavaOnevisionProcessor: "
            "LlavaOnevisionImageProcessorPil, LlavaOnevisionVideoProcessor",
        ),
        Family(
            "internvl",
            "internvl",
            IV,
            True,
            "InternVLProcessor: GotOcr2ImageProcessorPil, InternVLVideoProcessor",
        ),
        Family(
            "qwen2.5-omni",
            "qwen2_5_omni",
            ("image", "audio", "video"),
            True,
            f"Qwen2_5OmniProcessor: {QWEN_IMAGE}, Qwen2VLVideoProcessor, WhisperFeatureExtractor",
        ),
        Family(
            "phi4-multimodal",
            "phi4_multimodal",
            ("image", "audio"),
            False,
            "Phi4MultimodalProcessor: Phi4MultimodalImageProcessor, Phi4MultimodalFeatureExtractor",
            torchvision_images=True,
        ),
    )
}


def unavailable(name: str) -> str | None:
    """Why family ``name`` cannot be built here, or None when it can."""
    if FAMILIES[name].needs_torchvision and not has_torchvision():
        return "needs torchvision"  # its processor holds a video processor
    return None


JUDGE = "judge"  # `models --path judge`: the tiny answer judge (a BERT classifier)


def family_model_path(name: str) -> Path:
    """The folder of family ``name``'s tiny model (or of the tiny judge), built on first use."""
    from mera_multi_hf.demo import builtin_models as tiny_model

    if name == JUDGE:
        from mera_multi_hf.demo.tiny_models.judge import build_tiny_judge

        return tiny_model._built(f"tiny-judge-{recipe_fingerprint(name)}", build_tiny_judge)
    if name not in FAMILIES:
        raise MeraError(
            f"unknown model family {name!r}; choose one of {', '.join(FAMILIES)} "
            f"(or {JUDGE}, the tiny answer judge)"
        )
    if name == "llava":
        return tiny_model.tiny_model_path()
    if name == "qwen2-audio":
        return tiny_model.tiny_audio_model_path()
    reason = unavailable(name)
    if reason:
        raise MeraError(f"cannot build the tiny {name} model here: it {reason}")
    return tiny_model._built(
        f"tiny-{name}-{recipe_fingerprint(name)}", lambda out: build(name, out)
    )


def recipe_fingerprint(name: str) -> str:
    """A hash of what decides the built model: the recipe code and the library versions."""
    import tokenizers
    import torch
    import transformers

    from mera_multi_hf.core.provenance import folder_fingerprint

    salt = (
        f"{name}|{transformers.__version__}|{tokenizers.__version__}|{torch.__version__}"
        f"|torchvision={has_torchvision()}"
    )
    return folder_fingerprint(Path(__file__).parent, read=(".py",), salt=salt, length=12)


def build(name: str, out: Path) -> Path:
    """Build family ``name`` into ``out`` (offline, seeded): letters-and-stop weights as
    the tiny LLaVA's, so the answers are short and depend on the input."""
    import torch

    from mera_multi_hf.demo import builtin_models as tiny_model
    from mera_multi_hf.demo.tiny_models import recipes

    family = FAMILIES[name]
    torch.manual_seed(tiny_model.SEED)
    model, processor, tok = getattr(recipes, family.recipe)(*family.args)
    model.eval()
    hidden = model.config.get_text_config().hidden_size
    if model.generation_config.eos_token_id is None:  # as the families ship it
        model.generation_config.eos_token_id = model.config.get_text_config().eos_token_id
    tiny_model._unit_scale_and_letters(model, tok, hidden)
    info = {
        "family": name,
        "recipe": recipe_fingerprint(name),
        "seed": tiny_model.SEED,
        "note": tiny_model.NOTE,
    }
    card = (
        f"# tiny random {name} (random weights: a plumbing check)\n\nBuilt offline by "
        f"mera-multi-hf: {type(model).__name__}, {type(processor).__name__}. "
        f"**Its answers are noise.**\n"
    )
    return tiny_model._save(model, processor, out, card, info)


def family_rows() -> list[dict]:
    """One row per family for ``mera-multi models``: name, modalities, processor classes,
    video path, and whether it builds here."""
    rows = []
    for family in FAMILIES.values():
        rows.append(
            {
                "family": family.name,
                "modalities": ", ".join(family.modalities),
                "processor": family.processors,
                "video": ""
                if "video" not in family.modalities
                else "videos= (video processor)"
                if family.video_processor
                else "frames as images",
                "here": unavailable(family.name) or "builds",
            }
        )
    return rows


@dataclass
class ModelsOptions:
    """The options of `mera-multi models`."""

    path: str | None = opt(
        None,
        "build (once, into the cache) and print that family's folder; "
        f"`{JUDGE}`: the tiny answer judge's (default: none, list the "
        "families)",
        metavar="FAMILY",
    )


def add_parser(sub) -> None:
    add_command(
        sub,
        "models",
        ModelsOptions,
        cmd_models,
        help="list the model families with a tiny offline model (modalities, processor "
        "classes, video path); `--path judge`: the tiny answer judge",
        description="The model families the hf backend takes, each with a tiny offline "
        "model (random weights, the family's real classes), one per line. "
        "Writes no file; --path FAMILY builds that family's tiny model once "
        "(--path judge: the tiny answer judge), in the package's cache, and "
        "prints its folder.",
    )


def cmd_models(options: ModelsOptions) -> int:
    if options.path:
        print(family_model_path(options.path))
        return 0
    rows = family_rows()
    heads = {
        "family": "family",
        "modalities": "modalities",
        "video": "video path",
        "processor": "processor classes",
        "here": "here",
    }
    widths = {k: max(len(heads[k]), *(len(r[k]) for r in rows)) for k in heads}
    for row in [heads, *rows]:
        print("  ".join(row[k].ljust(widths[k]) for k in heads).rstrip())
    print(
        f"\nand `{JUDGE}`: a tiny answer judge (BertForSequenceClassification, random "
        f"weights) for `judge serve --model` and `evaluate --judge`: "
        f"mera-multi models --path {JUDGE}"
    )
    return 0
