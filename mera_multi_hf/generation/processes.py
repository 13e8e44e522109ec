"""This process's place in a data-parallel run: its state (rank, world size, device; one
process without torch for a server's backend), the seeds, the main process first where it
builds a built-in model, and the output folder claimed by the main process for all."""

from __future__ import annotations

from datetime import timedelta

from mera_multi_hf.core.errors import MeraError


def process_state(device: str | None, backend: str = "hf"):
    """This process's place in a data-parallel run (rank, world size, device).

    On a machine without an accelerator the processes that ``torchrun`` or ``accelerate
    launch --multi_gpu`` start join over gloo; ``accelerate launch --cpu`` starts only one.
    A backend other than hf outside such a launch runs as one process without torch.
    """
    import os

    if backend != "hf" and int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return OneProcess()
    import torch
    from accelerate import PartialState

    accelerator = getattr(torch, "accelerator", None)
    has_accelerator = accelerator.is_available() if accelerator else torch.cuda.is_available()
    cpu = (
        device == "cpu"
        or not has_accelerator
        or os.environ.get("ACCELERATE_USE_CPU", "").lower() in ("1", "true", "yes")
    )
    # A long collective timeout: a rank may wait at the final barrier while another
    # finishes its share of a big task (torch's default is 30 minutes).
    return PartialState(cpu=cpu, timeout=timedelta(hours=24))


class OneProcess:
    """The state of a run in one process that needs no torch (the openai backend): the
    model is on a server, so importing torch and accelerate would only cost seconds."""

    process_index, num_processes, is_main_process = 0, 1, True

    def wait_for_everyone(self) -> None:
        pass

    def main_process_first(self):
        import contextlib

        return contextlib.nullcontext()


def seed_everything(state, seed: int) -> None:
    if isinstance(state, OneProcess):  # no torch here: Python's generator is the one used
        import random

        random.seed(seed)
        return
    from accelerate.utils import set_seed

    set_seed(seed)  # python, numpy and torch generators


def first_if(condition: bool, state):
    """``state.main_process_first()`` when ``condition``, else no wait: every process
    decides alike (the same config), so no process waits at a barrier alone."""
    import contextlib

    return state.main_process_first() if condition else contextlib.nullcontext()


def claim_folder(folder, logs: list[str], state) -> None:
    """The main process claims the folder (its lock and the log names); a refusal (a
    second run on the folder) stops every process, not only the main one."""
    refusal = None
    if state.is_main_process:
        try:
            folder.claim(logs)
        except MeraError as err:
            refusal = str(err)
    if state.num_processes > 1:
        from accelerate.utils import broadcast_object_list

        refusal = broadcast_object_list([refusal])[0]
    if refusal:
        raise MeraError(refusal)
