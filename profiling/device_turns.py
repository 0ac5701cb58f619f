"""The GPU, one user at a time: threads of this process and, on a machine with a GPU, processes on the same GPU.

A GPU verdict's rules read the device as its two processes' own: a slow flush or a slowed original is taken for
the candidate's hidden work, so another judge's kernels, a profiler's replays or a model generating on the same
device would reject a fair candidate, or blur a speedup. So the served phase of a GPU verdict
(profiling/validate.py), a GPU task's profile (profiling/profile.py: its timing and ncu's replays) and an
in-process model's generation (inference/backends.py) each hold GPU_TURNS:

- in this process, an RLock (judges in threads: eval --parallel-runs, iterate --jobs; a nested turn of the same
  thread goes on);
- across processes, where the machine has a GPU device node, an exclusive flock on one file per GPU it sees, in
  the temporary directory (`perfforge synth patterns --jobs N`, Dask workers sharing a GPU): CUDA_VISIBLE_DEVICES
  names them; unset, the process sees every GPU of the machine (/dev/nvidia0, /dev/nvidia1, ...) and takes all
  their files, in order (no two processes wait on each other crosswise). So workers pinned to different GPUs
  still run at once, and an unpinned process and one pinned to GPU 1 exclude each other. Indices are matched as
  numbers: a GPU named by UUID (GPU-...) or a MIG instance has a file of its own name, and excludes only processes
  that name it the same way. The lock goes with the file when the process dies.

ncu's own runs queue on a second file per GPU (profiling/cuda/ncu.py), taken inside a turn when there is one, so
the two never wait on each other the other way round. CPU verdicts take no turn: their timings share the cores
(the reason to keep --parallel-runs under the core count).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import tempfile
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path

from perfforge.gpus import machine_gpus

# device nodes of a GPU driver: NVIDIA's control node, AMD's compute node
GPU_DEVICE_NODES = (Path("/dev/nvidiactl"), Path("/dev/kfd"))


def has_gpu_device() -> bool:
    """Whether this machine has a GPU driver's device node (a CPU machine running Triton's interpreter has none:
    its judges need no turns across processes)."""
    return any(node.exists() for node in GPU_DEVICE_NODES)


def visible_gpus(env: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The GPUs a process sees: CUDA_VISIBLE_DEVICES (env first, then this process's environment), one name per
    device with spaces dropped and anything else outside [A-Za-z0-9-] made "_"; unset, every GPU of the machine
    ("all" where perfforge.gpus.machine_gpus finds none: one lock stands for the machine); set empty, ("none",):
    CUDA sees no device."""
    devices = (env or {}).get("CUDA_VISIBLE_DEVICES", os.environ.get("CUDA_VISIBLE_DEVICES"))
    if devices is None:
        return machine_gpus() or ("all",)
    names = [re.sub(r"[^A-Za-z0-9-]", "_", name.strip()) for name in devices.split(",") if name.strip()]
    return tuple(dict.fromkeys(names)) or ("none",)


def device_lock_paths(kind: str, env: Mapping[str, str] | None = None) -> list[Path]:
    """The lock files of `kind` (turns, ncu) for the GPUs the process sees (visible_gpus), sorted: every holder
    takes them in this order."""
    return sorted(Path(tempfile.gettempdir()) / f"perfforge-{kind}-gpu-{gpu}.lock" for gpu in visible_gpus(env))


@contextlib.contextmanager
def gpu_lock(kind: str, env: Mapping[str, str] | None = None) -> Iterator[None]:
    """Exclusive flocks on device_lock_paths(kind, env) while the block runs; each lock goes with its file when it
    closes, also when the process dies."""
    with contextlib.ExitStack() as held:
        for path in device_lock_paths(kind, env):
            fcntl.flock(held.enter_context(open(path, "a")), fcntl.LOCK_EX)
        yield


class DeviceTurns:
    """A context manager: the GPU's turn for the thread that enters it (see the module docstring)."""

    def __init__(self) -> None:
        self._threads = threading.RLock()
        self._depth = 0  # the holding thread's nesting; read and written only under _threads
        self._held = contextlib.ExitStack()  # the turns file's lock, from the outermost entry to its exit

    def __enter__(self) -> DeviceTurns:
        self._threads.acquire()
        try:
            if self._depth == 0 and has_gpu_device():
                self._held.enter_context(gpu_lock("turns"))
        except BaseException:
            self._threads.release()
            raise
        self._depth += 1
        return self

    def __exit__(self, *exc: object) -> None:
        self._depth -= 1
        if self._depth == 0:
            self._held.close()
        self._threads.release()


GPU_TURNS = DeviceTurns()
