"""The GPU, one user at a time: threads of this process and, on a machine with a GPU, processes on the same GPU.

A GPU verdict's rules read the device as its two processes' own: a slow flush or a slowed original is taken for
the candidate's hidden work, so another judge's kernels, a profiler's replays or a model generating on the same
device would reject a fair candidate, or blur a speedup. So the served phase of a GPU verdict
(profiling/validate.py), a GPU task's profile (profiling/profile.py: its timing and ncu's replays) and an
in-process model's generation (inference/backends.py) each hold GPU_TURNS:

- in this process, an RLock (judges in threads: eval --parallel-runs, iterate --jobs; a nested turn of the same
  thread goes on);
- across processes, where the machine has a GPU device node, an exclusive flock on a file of the temporary
  directory named by CUDA_VISIBLE_DEVICES (`perfforge synth patterns --jobs N`, Dask workers sharing a GPU):
  workers pinned to different GPUs hold different files and still run at once; a worker that sees every GPU
  (the variable unset) holds the machine's. The lock goes with the file when the process dies.

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

# device nodes of a GPU driver: NVIDIA's control node, AMD's compute node
GPU_DEVICE_NODES = (Path("/dev/nvidiactl"), Path("/dev/kfd"))


def has_gpu_device() -> bool:
    """Whether this machine has a GPU driver's device node (a CPU machine running Triton's interpreter has none:
    its judges need no turns across processes)."""
    return any(node.exists() for node in GPU_DEVICE_NODES)


def device_lock_path(kind: str, env: Mapping[str, str] | None = None) -> Path:
    """The lock file of `kind` (turns, ncu) for the GPUs CUDA_VISIBLE_DEVICES names (env first, then this
    process's environment; unset: every GPU, one file for the machine)."""
    devices = (env or {}).get("CUDA_VISIBLE_DEVICES", os.environ.get("CUDA_VISIBLE_DEVICES", "all")) or "none"
    return Path(tempfile.gettempdir()) / f"perfforge-{kind}-gpu-{re.sub(r'[^A-Za-z0-9,-]', '_', devices)}.lock"


@contextlib.contextmanager
def gpu_lock(kind: str, env: Mapping[str, str] | None = None) -> Iterator[None]:
    """An exclusive flock on device_lock_path(kind, env) while the block runs; the lock goes with the file when
    it closes, also when the process dies."""
    with open(device_lock_path(kind, env), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
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
