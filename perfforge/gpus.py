"""The machine's GPUs as the operating system lists them, without a driver call: a process that only schedules work
(eval's driver, a Dask local cluster, the judges' locks) must not create a CUDA context of its own."""

from __future__ import annotations

from pathlib import Path


def machine_gpus(dev: Path = Path("/dev")) -> tuple[str, ...]:
    """The machine's NVIDIA GPUs by index, from their device nodes (/dev/nvidia0, /dev/nvidia1, ...; not nvidiactl
    or nvidia-uvm), in numeric order; empty where none is found (no NVIDIA driver, an AMD machine)."""
    try:
        names = [entry.name.removeprefix("nvidia") for entry in dev.iterdir() if entry.name.startswith("nvidia")]
    except OSError:
        return ()
    return tuple(sorted((name for name in names if name.isdigit()), key=int))
