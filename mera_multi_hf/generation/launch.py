"""`mera-multi evaluate --processes N`: the N processes of one data-parallel run on this
machine, started here, as ``torchrun --standalone --nproc_per_node N`` starts them (the
same environment: RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT) but without
its launcher, which imports torch before it starts a worker and again costs its exit:
1.0-1.7 s of a run on a 2-core machine (benchmarks/data_parallel.py). Nothing here
imports torch; the processes join over gloo (CPU) or NCCL (GPUs) as under torchrun.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

from mera_multi_hf.core.errors import MeraError

POLL_S = 0.02  # how often the launcher looks at its processes (torchrun: 0.1 s)


def under_launcher() -> bool:
    """Whether this process is already one of several (torchrun, accelerate, this module)."""
    return int(os.environ.get("WORLD_SIZE", "1")) > 1


def launch(processes: int, options: list[str]) -> int:
    """Run ``mera-multi evaluate OPTIONS`` as ``processes`` processes; the exit status of
    the first that fails (the others are stopped: they would wait for it), else 0."""
    env = dict(
        os.environ,
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(free_port()),
        WORLD_SIZE=str(processes),
        LOCAL_WORLD_SIZE=str(processes),
    )
    # torchrun's rule is one thread each; the cores shared out use them all on a CPU
    env.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // processes)))
    command = [sys.executable, "-m", "mera_multi_hf", "evaluate", *options]
    return supervise(
        [
            subprocess.Popen(command, env=dict(env, RANK=str(r), LOCAL_RANK=str(r)))
            for r in range(processes)
        ]
    )


def supervise(ranks: list[subprocess.Popen]) -> int:
    """Wait for the processes; a Ctrl-C (which they get too) waits for them to stop, a
    SIGTERM here (a scheduler's stop) is passed on to them."""
    forward = signal.signal(signal.SIGTERM, _terminated)
    try:
        return wait_all(ranks)
    except KeyboardInterrupt:  # the processes got the same Ctrl-C: they finish their lines
        stop(ranks, terminate=False)
        return 130
    except Terminated:
        stop(ranks)
        return 128 + signal.SIGTERM
    finally:
        signal.signal(signal.SIGTERM, forward)


class Terminated(Exception):
    """The launcher got SIGTERM."""


def _terminated(*_signal_and_frame):
    raise Terminated


def wait_all(ranks: list[subprocess.Popen]) -> int:
    """0 when every process ends well; else the first failure's status, the rest stopped."""
    running = list(ranks)
    while running:
        for rank in list(running):
            code = rank.poll()
            if code is None:
                continue
            running.remove(rank)
            if code != 0:
                stop(running)
                return code if code > 0 else 128 - code  # killed by a signal: 128 + its number
        time.sleep(POLL_S)
    return 0


def stop(ranks: list[subprocess.Popen], *, terminate: bool = True) -> None:
    """End the processes still running (SIGTERM unless ``terminate`` is false, then
    SIGKILL after 30 s)."""
    for rank in ranks:
        if terminate and rank.poll() is None:
            rank.send_signal(signal.SIGTERM)
    for rank in ranks:
        try:
            rank.wait(timeout=30)
        except subprocess.TimeoutExpired:
            rank.kill()
            rank.wait()


def capacity() -> tuple[int, str]:
    """(how many, of what) processes this machine runs side by side: one per visible GPU
    (CUDA_VISIBLE_DEVICES, else the NVIDIA driver's list), else one per CPU this process
    may run on (its affinity). torch is not imported for it."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        gpus = len([d for d in visible.split(",") if d.strip() and not d.strip().startswith("-")])
    else:
        driver = "/proc/driver/nvidia/gpus"
        gpus = len(os.listdir(driver)) if os.path.isdir(driver) else 0
    if gpus:
        return gpus, "GPUs"
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return cpus or 1, "CPUs"


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now, for the main process's rendezvous store."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def check_processes(processes: int, oversubscribe: bool = False) -> None:
    if processes < 1:
        raise MeraError(f"--processes must be 1 or more, got {processes}")
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if processes > 1 and world > 1 and world != processes:
        raise MeraError(
            f"--processes {processes} under a launcher that started {world} "
            "processes: give one or the other"
        )
    have, what = capacity()
    if processes > have and not oversubscribe:
        raise MeraError(
            f"--processes {processes} is more than the {have} {what} this process "
            f"may use: give at most {have}, or add --allow-oversubscribe to share "
            f"them anyway"
        )
