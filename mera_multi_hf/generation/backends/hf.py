"""The ``hf`` backend: a transformers model in this process.

AutoProcessor + AutoModelForImageTextToText (AutoModelForMultimodalLM for audio and
any-to-text models, AutoModelForCausalLM for a text-only model), the model's own chat template,
left padding, greedy decoding. The model loads on the first ``generate`` call, so a run
whose answers are all in the sample log never loads it.

Media, decoded for the batch being generated only (:mod:`mera_multi_hf.data.media_decode`): pictures
(Pillow, ``max_pixels``); audio (soundfile, mixed to mono, resampled to the feature
extractor's ``sampling_rate``) to the processor's ``audio``; videos (PyAV, decoded
streaming, ``max_frames`` frames spread evenly) to the processor's ``videos`` where it
has a video processor (transformers' video processors need torchvision), else as that
many pictures in place of the placeholder. ``info()["video_input"]`` records which.
What differs between model families (the audio keyword, ``videos=``, sampling rate,
padding side, extra keys) is data in :mod:`.traits`, keyed by processor class; this
module names no family. Which model a name means, its auto class and its context
length are :mod:`.hf_model`; how videos reach it, :mod:`.hf_media`. A model kind of two
models (:mod:`.model_kinds`) is composed by ``make_backend``
(:class:`~mera_multi_hf.generation.backends.RoutingBackend`): one backend serves one model.

Generation follows the official harness (``hf_vlms.py`` ``generate_until``): at most
``max_new_tokens``, a stop at the first stop string or EOS, the decoded text cut at the
first stop string. Each row stops on its own (transformers' ``StopStringCriteria`` over
the new tokens only, as the harness looks at the answer alone), and the batch ends when
every row has stopped. A long prompt never stops a run: as the harness does, the
tokenized prompt keeps its last ``max_length - max_new_tokens`` tokens (``max_length``
derived as the harness's ``huggingface.py``; see
:func:`~mera_multi_hf.generation.backends.hf_model.context_length`), the media tensors
as they are. A row whose cut removed media tokens cannot run (the model would refuse the
mismatch) and answers "". Each cut is recorded on the request (``tokens_cut``, kept in
the sample log) and in ``info()`` (``prompts_cut_here``: this process's cuts;
results.json counts them per task).
"""

from __future__ import annotations

import copy
import warnings
from pathlib import Path

from mera_multi_hf.core.errors import MeraError
from mera_multi_hf.generation.backends.base import Backend, check_stop, cut_at_stop
from mera_multi_hf.generation.backends.hf_media import (
    FRAMES_AS_IMAGES,
    unsupported_reason,
    video_path,
    videos_as_pictures,
)
from mera_multi_hf.generation.backends.hf_model import (
    context_length,
    multimodal_class,
    resolve_model,
)
from mera_multi_hf.generation.backends.hf_options import HFOptions
from mera_multi_hf.generation.backends.registry import ALL_MEDIA, Capabilities, register_backend
from mera_multi_hf.generation.backends.traits import GENERIC, traits_for
from mera_multi_hf.generation.chat import chat_messages, plain_dialogue
from mera_multi_hf.generation.request import Request
from mera_multi_hf.tasks.prompts import MEDIA_SLOT, plain_prompt


def _as_list(value) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


class NewTokensStop:
    """transformers' ``StopStringCriteria`` over the new tokens only: as the harness's
    ``MultiTokenEOSCriteria``, a stop string is looked for in the answer, never across
    the prompt's end (a chat prompt ending in "\\n" must not stop at a first "\\n")."""

    def __init__(self, tokenizer, stops: tuple[str, ...], prompt_length: int):
        from transformers import StopStringCriteria

        self.criteria, self.start = StopStringCriteria(tokenizer, list(stops)), prompt_length

    def __call__(self, input_ids, scores, **kwargs):
        return self.criteria(input_ids[:, self.start :], scores, **kwargs)


@register_backend("hf", options=HFOptions, capabilities=Capabilities(media=ALL_MEDIA))
class HFBackend(Backend):
    name = "hf"

    def __init__(self, model: str | None = None, **options):
        """``options``: the fields of :class:`HFOptions` (checked there)."""
        o = HFOptions(**options)
        self.model_id, self.path, self.revision = resolve_model(model, o.revision)
        self.from_hub = not Path(self.path).is_dir()
        self.dtype, self.device_arg, self.max_pixels = o.dtype, o.device, o.max_pixels
        self.trust_remote_code, self.prompt_mode = o.trust_remote_code, o.prompt_mode
        self.batch_size = o.batch_size
        self.stop = check_stop(o.stop)
        self.max_frames = o.max_frames
        self.traits, self.family_note = GENERIC, None  # known once the processor loads
        self.video_input: str | None = None  # how videos reach the model (see video_path)
        self.model = None
        self.max_length: int | None = None
        self.truncated: list[str] = []  # "task id=N" whose prompt was cut to fit max_length
        self._warned = False

    # what identifies the generations (hashed into every request) and what results record
    def settings(self) -> dict:
        return {
            "backend": self.name,
            "dtype": self.dtype,
            "prompt_mode": self.prompt_mode,
            "max_pixels": self.max_pixels,
            "max_frames": self.max_frames,
            "do_sample": False,
            "num_beams": 1,
            "stop": list(self.stop),
        }

    def info(self) -> dict:
        info = {
            "model": self.model_id,
            "revision": self.revision,
            "backend": self.name,
            "dtype": self.dtype,
            "prompt_mode": self.prompt_mode,
            "max_pixels": self.max_pixels,
            "trust_remote_code": self.trust_remote_code,
            "stop": list(self.stop),
            "max_frames": self.max_frames,
            "video_input": self.video_input,
        }
        if self.model is not None:
            if self.family_note:
                info["family_note"] = self.family_note
            info.update(
                family=self.traits.family,
                dtype=str(self.model.dtype).replace("torch.", ""),
                prompt_mode=self.resolved_mode,
                device=str(self.device),
                model_class=type(self.model).__name__,
                text_only=self.text_only,
                context_length=self.max_length,
                prompts_cut_here=list(self.truncated),
            )
        return info

    def load(self) -> None:
        if self.model is not None:
            return
        from accelerate import PartialState

        device = self.device_arg or str(PartialState().device)
        self._load_model(device)
        if device != "auto":
            self.model.to(device)
        self.model.eval()
        self.device = self.model.device
        self.tokenizer = getattr(self.processor, "tokenizer", self.processor)
        if not self.text_only:
            self.traits, self.family_note = traits_for(self.processor)
        self.tokenizer.padding_side = self.traits.padding_side
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        if not self.text_only and not getattr(self.processor, "chat_template", None):
            # some processors leave the saved template on their tokenizer only
            self.processor.chat_template = getattr(self.tokenizer, "chat_template", None)
        has_template = bool(
            getattr(self.processor, "chat_template", None)
            or getattr(self.tokenizer, "chat_template", None)
        )
        if self.prompt_mode == "chat" and not has_template:
            raise MeraError(
                f"model {self.model_id!r} has no chat template; use --prompt-mode plain"
            )
        self.resolved_mode = (
            self.prompt_mode
            if self.prompt_mode != "auto"
            else ("chat" if has_template else "plain")
        )
        self.media_token = None if self.text_only else getattr(self.processor, "image_token", None)
        self.video_input = video_path(self.processor, self.text_only, self.traits.takes_videos)
        self.max_length = context_length(self.model, self.tokenizer)
        gen = copy.deepcopy(self.model.generation_config)
        gen.do_sample, gen.num_beams = False, 1
        gen.temperature = gen.top_p = gen.top_k = None  # unused when greedy: silence warnings
        gen.pad_token_id = self.tokenizer.pad_token_id
        gen.update(**self.traits.generation)
        self.generation_config = gen

    def _load_model(self, device: str) -> None:
        import torch
        import transformers

        kwargs = {"trust_remote_code": self.trust_remote_code}
        if self.from_hub and self.revision:  # load the very commit the logs record
            kwargs["revision"] = self.revision
        if self.dtype == "auto":
            # fp32 on CPU: bf16 there is slow and its rounding breaks batch invariance
            dtype = torch.float32 if device == "cpu" else "auto"
        else:
            dtype = getattr(torch, self.dtype)
        load = dict(kwargs, dtype=dtype)
        if device == "auto":
            load["device_map"] = "auto"
        transformers.logging.disable_progress_bar()
        try:
            config = transformers.AutoConfig.from_pretrained(self.path, **kwargs)
            auto = multimodal_class(config)
            self.text_only = auto is None
            if self.text_only:  # a language model: media are dropped (with a warning)
                self.processor = transformers.AutoTokenizer.from_pretrained(self.path, **kwargs)
                self.model = transformers.AutoModelForCausalLM.from_pretrained(self.path, **load)
            else:
                self.processor = transformers.AutoProcessor.from_pretrained(self.path, **kwargs)
                self.model = auto.from_pretrained(self.path, **load)
        except (OSError, ValueError) as err:
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise MeraError(f"cannot load model {self.model_id!r}: {first}") from None
        finally:
            transformers.logging.enable_progress_bar()

    def render(self, request: Request, frames: list[int] | None = None) -> str:
        """The full prompt string the model sees (chat template applied or plain).
        ``frames``: the number of frames of each video of the request, in order, where
        videos go to the model as pictures (default: ``max_frames`` each)."""
        if frames is None:
            frames = [self.max_frames for m in request.all_media() if m.kind == "video"]
        if self.resolved_mode == "plain":
            return self._plain(plain_dialogue(request), frames)
        if self.text_only:
            messages = [
                {"role": m["role"], "content": "".join(p.get("text", "") for p in m["content"])}
                for m in chat_messages(request)
            ]
            return self.tokenizer.apply_chat_template(
                messages, add_generation_prompt=True, tokenize=False
            )
        messages = chat_messages(request)
        if self.video_input == FRAMES_AS_IMAGES:
            messages = videos_as_pictures(messages, iter(frames))
        return self.processor.apply_chat_template(
            messages, add_generation_prompt=True, tokenize=False
        )

    def _plain(self, text: str, frames: list[int]) -> str:
        """A plain prompt: each placeholder becomes the processor's token for its kind
        (a video as pictures: one picture token per frame); none for a text-only model."""
        if self.text_only:
            return plain_prompt(text, None)
        counts = iter(frames)

        def token(match):
            kind = match.group(1).split("_")[0]
            if kind == "video" and self.video_input == FRAMES_AS_IMAGES:
                return (self.media_token or "") * next(counts, self.max_frames)
            return getattr(self.processor, f"{kind}_token", None) or ""

        return MEDIA_SLOT.sub(token, text)

    def encode(self, requests: list[Request]):
        """The model inputs for one batch (on the model's device)."""
        kwargs = {
            "padding": True,
            "padding_side": self.traits.padding_side,
            "return_tensors": "pt",
            **self.traits.processor_kwargs,
        }
        if self.text_only:
            texts = [self.render(r) for r in requests]
            if any(r.all_media() for r in requests) and not self._warned:
                warnings.warn(
                    f"{self.model_id} is a text-only model: the media inputs are left "
                    f"out of its prompts",
                    UserWarning,
                    stacklevel=2,
                )
                self._warned = True
        else:
            decoded = [self._decode(r) for r in requests]
            texts = [
                self.render(r, [len(v) for kind, v in items if kind == "video"])
                for r, items in zip(requests, decoded)
            ]
            kwargs.update(self._media_kwargs(decoded))
        # left padding: every prompt ends at the right edge, where generation continues
        processor = self.tokenizer if self.text_only else self.processor
        batch = processor(text=texts, **kwargs)
        dtype = self.model.dtype
        return {
            k: (v.to(self.device, dtype) if v.is_floating_point() else v.to(self.device))
            for k, v in batch.items()
            if hasattr(v, "is_floating_point")
        }

    def _decode(self, request: Request) -> list[tuple[str, object]]:
        """The request's media decoded, in order: ("image", picture), ("audio", samples at
        the feature extractor's rate) or ("video", [frames])."""
        out = []
        for media in request.all_media():
            missing = unsupported_reason(
                self.processor, media.kind, self.video_input, self.traits.audio_attribute
            )
            if missing:
                raise MeraError(
                    f"{request.task} id={request.id}: {self.model_id} takes no "
                    f"{media.kind} input ({missing}); choose a model that does, or "
                    f"serve one with an OpenAI-compatible server (--backend openai)"
                )
            try:
                if media.kind == "image":
                    out.append(("image", media.image(self.max_pixels)))
                elif media.kind == "audio":
                    out.append(("audio", media.audio(self._sampling_rate())))
                else:
                    out.append(("video", media.frames(self.max_frames, self.max_pixels)))
            except MeraError as err:  # a MediaError stays one: that example fails alone
                raise type(err)(f"{request.task} id={request.id}: {err}") from None
        return out

    def _media_kwargs(self, decoded: list[list[tuple[str, object]]]) -> dict:
        """The processor's media arguments, each list in placeholder order (pictures one
        list per prompt where the family's processor wants them so)."""
        import numpy as np

        images, videos, audio = [], [], []
        for items in decoded:
            images.append([])
            for kind, value in items:
                if kind == "image":
                    images[-1].append(value)
                elif kind == "audio":
                    audio.append(value)
                elif self.video_input == FRAMES_AS_IMAGES:
                    images[-1] += value
                else:
                    videos.append(np.stack([np.asarray(f) for f in value]))
        kwargs = {}
        if any(images):
            kwargs["images"] = images if self.traits.nested_images else sum(images, [])
        if videos:
            kwargs["videos"] = videos
        if audio:
            kwargs[self.traits.audio_keyword] = audio
            kwargs["sampling_rate"] = self._sampling_rate()
        return kwargs

    def _sampling_rate(self) -> int:
        return (
            self.traits.sampling_rate
            or getattr(self.processor, self.traits.audio_attribute).sampling_rate
        )

    def generate(self, requests: list[Request]) -> list[str]:
        if not requests:
            return []
        self.load()
        # rows with another token limit or stop run apart: no row depends on its batch
        keys = [(r.max_new_tokens, tuple(r.stop)) for r in requests]
        out: list[str] = [""] * len(requests)
        for key in sorted(set(keys)):
            rows = [i for i, k in enumerate(keys) if k == key]
            limit = key[0]
            part = [requests[i] for i in rows]
            inputs, lost = self._truncate(part, self.encode(part), limit)
            if lost:  # rows cut into their media answer "", the others run without them
                rows = [i for n, i in enumerate(rows) if n not in lost]
                part = [requests[i] for i in rows]
                if not rows:
                    continue
                inputs, _ = self._truncate(part, self.encode(part), limit, record=False)
            for i, text in zip(rows, self._generate(part, inputs, limit)):
                out[i] = text
        return out

    def _media_token_ids(self) -> list[int]:
        tokens = [
            getattr(self.processor, f"{kind}_token", None) for kind in ("image", "audio", "video")
        ]
        return [self.tokenizer.convert_tokens_to_ids(t) for t in tokens if isinstance(t, str)]

    def _truncate(
        self, requests: list[Request], inputs: dict, max_new_tokens: int, record: bool = True
    ):
        """The harness's left truncation: every per-token tensor keeps its last
        ``max_length - max_new_tokens`` columns (left padding: a shorter row loses only
        padding). Returns (inputs, the rows whose cut removed media tokens)."""
        if max_new_tokens >= self.max_length:  # no room left for any prompt
            raise MeraError(
                f"--max-new-tokens {max_new_tokens} is not below {self.model_id}'s "
                f"context of {self.max_length} tokens: every prompt would be cut "
                f"to one token; give at most {self.max_length - 1}, well below it"
            )
        keep = self.max_length - max_new_tokens
        ids = inputs["input_ids"]
        if ids.shape[1] <= keep:
            return inputs, []
        lengths = inputs["attention_mask"].sum(dim=1).tolist()
        cut = {k: v[:, -keep:] if v.shape == ids.shape else v for k, v in inputs.items()}
        media = self._media_token_ids()
        lost = []
        for row, (request, length) in enumerate(zip(requests, lengths)):
            if length <= keep:
                continue
            if any(
                int((ids[row] == t).sum()) != int((cut["input_ids"][row] == t).sum()) for t in media
            ):
                lost.append(row)
            if not record:
                continue
            request.tokens_cut = int(length - keep)
            self.truncated.append(f"{request.task} id={request.id}")
            warnings.warn(
                f"{request.task} id={request.id}: the prompt is {length} tokens; "
                f"its first {length - keep} are cut to fit {self.model_id}'s "
                f"max_length {self.max_length} less {max_new_tokens} new tokens"
                + (" (media tokens among them: answered empty)" if row in lost else ""),
                UserWarning,
                stacklevel=3,
            )
        return cut, lost

    def _generate(self, requests: list[Request], inputs, max_new_tokens: int) -> list[str]:
        import torch
        from transformers import StoppingCriteriaList

        config = copy.copy(self.generation_config)
        config.max_new_tokens = max_new_tokens
        start = inputs["input_ids"].shape[1]
        stops = tuple(requests[0].stop)  # one stop tuple per call (see generate)
        stopping = StoppingCriteriaList(
            [NewTokensStop(self.tokenizer, stops, start)] if stops else []
        )
        with torch.inference_mode():
            out = self.model.generate(
                **inputs, generation_config=config, stopping_criteria=stopping
            )
        texts = self.tokenizer.batch_decode(out[:, start:], skip_special_tokens=True)
        self._count_tokens(requests, inputs["attention_mask"], out[:, start:], config)
        return [cut_at_stop(text, r.stop) for text, r in zip(texts, requests)]

    @staticmethod
    def _count_tokens(requests: list[Request], attention_mask, new_ids, config) -> None:
        """Each request's prompt tokens (its unpadded input) and generated tokens (up to
        and with its end token; the padding after it is not counted)."""
        ends = {t for t in [config.pad_token_id, *_as_list(config.eos_token_id)] if t is not None}
        for request, mask, ids in zip(requests, attention_mask, new_ids.tolist()):
            request.prompt_tokens = int(mask.sum())
            done = next((i for i, t in enumerate(ids) if t in ends), None)
            request.completion_tokens = len(ids) if done is None else done + 1

    def close(self) -> None:
        pass
