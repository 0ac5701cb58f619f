"""The judge's host cache flush before a timed CPU call, spread over the cores that share the kernel's last level.

A flush writes a buffer of twice the last-level cache (capped: virtual machines report the host's whole L3), so
that neither side's call finds its inputs in the caches where the judge just wrote them. One thread did it in
about 5 ms a call, most of a CPU verdict's time (cProfile of decay_loop_invariant on the 2-core VM: 1.35 s of
2.29 s). The buffer is cut into one slice per core that shares the kernel core's last-level cache (sysfs's
`shared_cpu_list`): the kernel's own core flushes its slice on the calling thread (already pinned there, so its
private caches are emptied too), the others on pool threads each pinned to its core for the slice. Cores of another
last-level cache (another chiplet's L3) are never used: their writes would not evict the kernel's.

    kernel core k, sharing its L3 with k+1 .. k+n-1:   [ slice 0: k (caller) | slice 1: k+1 | ... | slice n-1 ]
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from profiling.cpu.cache_model import reported_last_level_bytes

# twice the last-level cache evicts it under LRU; capped because virtual machines report the host's whole L3 (the
# harness's own flush used the same bound: PF_CPU_FLUSH_CAP_BYTES)
FLUSH_CAP_BYTES = 64 << 20
FALLBACK_LLC_BYTES = 8 << 20
# a slice must still empty the private caches of the core it runs on (2 MiB L2 per core on the VM; 1-2 MiB on
# current server cores): no more slices than leave each this much
MIN_SLICE_BYTES = 4 << 20
SYSFS_CPU_DIR = Path("/sys/devices/system/cpu")


class HostFlusher:
    """One flush buffer and the pool that writes its slices (one per pair of processes)."""

    def __init__(self) -> None:
        """Made before the calling thread is pinned to a kernel's core: a pinned thread reads its pin as the CPUs
        allowed (a flusher made at the first timed call, inside the pin, flushed alone or in two slices on the
        H100 host: 231 slice writes in 264 flushes, cProfile)."""
        llc = reported_last_level_bytes()  # sysfs: this Python's os.sysconf has no SC_LEVEL3_CACHE_SIZE
        self._bytes = min(FLUSH_CAP_BYTES, 2 * (llc if llc > 0 else FALLBACK_LLC_BYTES))
        self._buffer: np.ndarray | None = None
        self._pool: ThreadPoolExecutor | None = None
        self.allowed = frozenset(os.sched_getaffinity(0))

    @property
    def buffer(self) -> np.ndarray:
        """The flush buffer, made at the first flush (a pair that is never timed holds none)."""
        if self._buffer is None:
            self._buffer = np.zeros(self._bytes, dtype=np.uint8)
        return self._buffer

    def flush(self, cpu: int | None) -> None:
        """Every line of the buffer read and written, from the cores sharing `cpu`'s last-level cache (the calling
        thread is on `cpu` itself; None: the calling thread alone)."""
        buffer = self.buffer
        others = [c for c in sharing_last_level(cpu, self.allowed) if c != cpu] if cpu is not None else []
        count = max(1, min(1 + len(others), buffer.size // MIN_SLICE_BYTES))
        slices = np.array_split(buffer, count)
        others = others[:count - 1]
        if others:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=len(self.allowed), thread_name_prefix="pf-host-flush")
            pending = [self._pool.submit(_write_on, core, part, self.allowed)
                       for core, part in zip(others, slices[1:], strict=True)]
            slices[0] += 1
            for done in pending:
                done.result()
        else:
            buffer += 1  # read and written: every line passes through the cache

    def close(self) -> None:
        """Its pool stopped and its buffer let go (64 MB a pair)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        self._buffer = None


def _write_on(cpu: int, part: np.ndarray, allowed: frozenset[int]) -> None:
    with _pinned(cpu, allowed):
        part += 1


@contextlib.contextmanager
def _pinned(cpu: int, allowed: frozenset[int]) -> Iterator[None]:
    """The calling thread on `cpu` alone, put back on every allowed CPU after (a pool thread left pinned would
    stay there for later work)."""
    os.sched_setaffinity(0, {cpu})
    try:
        yield
    finally:
        os.sched_setaffinity(0, allowed)


@functools.cache
def sharing_last_level(cpu: int, allowed: frozenset[int], sysfs_cpu_dir: Path = SYSFS_CPU_DIR) -> tuple[int, ...]:
    """The CPUs of `allowed` that share `cpu`'s last-level cache, `cpu` first; just `cpu` where sysfs says
    nothing."""
    caches = sysfs_cpu_dir / f"cpu{cpu}" / "cache"
    best: tuple[int, set[int]] = (-1, {cpu})
    with contextlib.suppress(OSError, ValueError):
        for index in caches.glob("index*"):
            level = int((index / "level").read_text())
            if level > best[0]:
                best = (level, parse_cpu_list((index / "shared_cpu_list").read_text()))
    return (cpu, *sorted(c for c in best[1] & allowed if c != cpu))


def parse_cpu_list(text: str) -> set[int]:
    """sysfs's CPU list ("0-3,8,10-11") as a set."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        if not part:
            continue
        low, _, high = part.partition("-")
        cpus.update(range(int(low), int(high or low) + 1))
    return cpus
